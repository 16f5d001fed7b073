"""tools/install-browser.sh, which `make test` runs: silent when the browser is there, installs it
quietly without recommended packages when it can, else one line with the command to run.

apt-get, id and sudo are stand-ins on PATH that record how they were called."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import REPO

SCRIPT = REPO / "tools" / "install-browser.sh"


def stub(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(0o755)


def run(
    tmp_path: Path, *, uid: int, sudo: bool, apt_fails: bool = False
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The script with the browser paths under tmp_path and stand-in commands first on PATH."""
    stubs = tmp_path / "bin"
    stubs.mkdir(exist_ok=True)
    calls = tmp_path / "calls"
    chromium, chromedriver = tmp_path / "chromium", tmp_path / "chromedriver"
    stub(stubs, "id", f'echo "{uid}"')
    # apt-get "installs" by creating the two programs, and talks as much as the real one.
    installs = (
        'echo "E: Unable to locate package chromium-driver"; exit 100'
        if apt_fails
        else f'seq 1 300; if [ "$1" = install ]; then touch "{chromium}" "{chromedriver}"; '
        f'chmod +x "{chromium}" "{chromedriver}"; fi'
    )
    stub(stubs, "apt-get", f'echo "apt-get $*" >> "{calls}"; {installs}')
    stub(
        stubs,
        "sudo",
        f'echo "sudo $*" >> "{calls}"; ' + ('[ "$1" = -n ] && shift; "$@"' if sudo else "exit 1"),
    )
    env = {
        "PATH": f"{stubs}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "CHROMIUM": str(chromium),
        "CHROMEDRIVER": str(chromedriver),
    }
    done = subprocess.run(["sh", str(SCRIPT)], capture_output=True, text=True, env=env, timeout=60)
    return done, calls


def test_nothing_is_printed_or_run_when_both_are_installed(tmp_path: Path) -> None:
    for name in ("chromium", "chromedriver"):
        (tmp_path / name).touch(mode=0o755)
    done, calls = run(tmp_path, uid=0, sudo=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert not calls.exists()


def test_root_installs_without_recommends_in_one_line(tmp_path: Path) -> None:
    done, calls = run(tmp_path, uid=0, sudo=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr == (
        "installing chromium and chromedriver (Debian packages, once) for the site's browser "
        "tests\n"
    )
    assert calls.read_text().splitlines() == [
        "apt-get update -qq",
        "apt-get install -y -qq --no-install-recommends chromium chromium-driver",
    ]


def test_passwordless_sudo_installs_through_sudo(tmp_path: Path) -> None:
    done, calls = run(tmp_path, uid=1000, sudo=True)
    assert done.returncode == 0, done.stderr
    lines = calls.read_text().splitlines()
    assert lines[0] == "sudo -n true"
    assert lines[1].startswith("sudo -n env DEBIAN_FRONTEND=noninteractive sh -c")
    assert lines[2:] == [
        "apt-get update -qq",
        "apt-get install -y -qq --no-install-recommends chromium chromium-driver",
    ]


def test_without_root_it_says_the_one_command_to_run(tmp_path: Path) -> None:
    done, calls = run(tmp_path, uid=1000, sudo=False)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr == (
        "the site's browser tests need chromium and chromedriver: run  "
        "sudo sh tools/install-browser.sh\n"
    )
    assert calls.read_text().splitlines() == ["sudo -n true"]


def test_a_failed_install_shows_the_end_of_its_log(tmp_path: Path) -> None:
    failed, _ = run(tmp_path, uid=0, sudo=False, apt_fails=True)
    assert failed.returncode == 1
    lines = failed.stderr.splitlines()
    assert lines[1] == "E: Unable to locate package chromium-driver"
    assert lines[2].startswith("installing chromium and chromedriver failed; the whole log is in ")
    assert len(lines) == 3
