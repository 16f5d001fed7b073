#!/bin/sh
# Headless Chromium and chromedriver for tests/test_site_browser.py, from Debian's packages.
# `make test` runs it. It prints nothing when both are installed; as root (or with sudo that asks
# no password) it installs them once, without recommended packages, saying so in one line;
# otherwise it prints the one command to run and fails.
set -eu
chromium=${CHROMIUM:-/usr/bin/chromium}
chromedriver=${CHROMEDRIVER:-/usr/bin/chromedriver}
if [ -x "$chromium" ] && [ -x "$chromedriver" ]; then
    exit 0
fi
if [ "$(id -u)" = 0 ]; then
    as_root=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    as_root="sudo -n"
else
    echo "the site's browser tests need chromium and chromedriver: run  sudo sh tools/install-browser.sh" >&2
    exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "the site's browser tests need $chromium and $chromedriver; this script installs them with apt-get only" >&2
    exit 1
fi
echo "installing chromium and chromedriver (Debian packages, once) for the site's browser tests" >&2
log=$(mktemp)
if $as_root env DEBIAN_FRONTEND=noninteractive sh -c \
    'apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium chromium-driver' \
    >"$log" 2>&1 && [ -x "$chromium" ] && [ -x "$chromedriver" ]; then
    rm -f "$log"
    exit 0
fi
tail -n 20 "$log" >&2
echo "installing chromium and chromedriver failed; the whole log is in $log" >&2
exit 1
