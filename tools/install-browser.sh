#!/bin/sh
# Install headless Chromium and chromedriver for tests/test_site_browser.py.
# Idempotent: does nothing when both binaries are already present. Run as root.
set -eu
if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then
    echo "chromium and chromedriver already installed"
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium chromium-driver
/usr/bin/chromium --version
/usr/bin/chromedriver --version
