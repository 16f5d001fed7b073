"""The examples in README.md and CONTRIBUTING.md, run: they cannot go stale.

Every ```console block is a transcript. Lines starting with ``$ `` are commands (a trailing
``\\`` continues one on the next line); the lines after a command, up to the next, are what it
prints (standard output and error together). In the shown output a line ``...`` stands for any
number of lines and ``...`` within a line for any text. A command shown without output must
succeed (exit 0); its output is not compared.

Each block runs in a fresh copy of the dataset, a git repository whose ``main`` holds it, with
``kvrecords`` on the PATH. An HTML comment ``<!-- transcript: COMMANDS -->`` right before a
block prepares that copy first (``$REPO`` is the repository), as the prose around the block says.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from conftest import copy_dataset

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", "CONTRIBUTING.md")
_BLOCK = re.compile(
    r"(?:<!-- transcript: (?P<setup>.*?) -->\n)?^(?P<indent>[ ]*)```console\n(?P<body>.*?)^(?P=indent)```",
    re.M | re.S,
)


class Step(NamedTuple):
    command: str
    shown: list[str]  # the output as the document shows it


class Transcript(NamedTuple):
    name: str  # README.md:46, the line the block starts on
    setup: str
    steps: list[Step]


def transcripts(document: str) -> list[Transcript]:
    text = (REPO / document).read_text(encoding="utf-8")
    found = []
    for match in _BLOCK.finditer(text):
        indent = len(match["indent"])
        lines = [line[indent:] for line in match["body"].splitlines()]
        line_number = text.count("\n", 0, match.start("body"))
        found.append(Transcript(f"{document}:{line_number}", match["setup"] or "", _steps(lines)))
    return found


def _steps(lines: list[str]) -> list[Step]:
    steps: list[Step] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        assert line.startswith("$ "), f"output before any command: {line!r}"
        command = line[2:]
        while command.endswith("\\"):
            index += 1
            command += "\n" + lines[index]  # bash reads the backslash and line break as a space
        index += 1
        shown = []
        while index < len(lines) and not lines[index].startswith("$ "):
            shown.append(lines[index])
            index += 1
        while shown and not shown[-1].strip():
            shown.pop()
        steps.append(Step(command, shown))
    return steps


def matches(shown: list[str], printed: str) -> bool:
    """Whether ``printed`` is the output ``shown`` describes (``...`` as a wildcard)."""
    pattern = ""
    for line in shown:
        if line.strip() == "...":
            pattern += r"(?:[^\n]*\n)*?"
        else:
            pattern += re.escape(line.rstrip()).replace(r"\.\.\.", r"[^\n]*") + r"[ \t]*\n"
    return re.fullmatch(pattern, printed if printed.endswith("\n") else printed + "\n") is not None


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    environment["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environment['PATH']}"
    environment["REPO"] = str(REPO)
    environment["COLUMNS"] = "100"
    return subprocess.run(
        ["bash", "-c", command],
        cwd=cwd,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )


def _dataset(tmp_path: Path) -> Path:
    root = copy_dataset(tmp_path / "kv-efficiency-records")
    for folder in ("docs", "tests"):
        (root / folder).mkdir(exist_ok=True)
    git = (
        "git init -q -b main && git -c user.name=kvrecords -c user.email=kvrecords@localhost "
        "add -A && git -c user.name=kvrecords -c user.email=kvrecords@localhost "
        "commit -q -m dataset"
    )
    assert _run(git, root).returncode == 0
    return root


ALL = [transcript for document in DOCUMENTS for transcript in transcripts(document)]


@pytest.mark.parametrize("transcript", ALL, ids=lambda t: t.name)
def test_the_example_runs_as_shown(transcript: Transcript, tmp_path: Path) -> None:
    root = _dataset(tmp_path)
    if transcript.setup:
        prepared = _run(transcript.setup, root)
        assert prepared.returncode == 0, prepared.stdout
    for step in transcript.steps:
        done = _run(step.command, root)
        assert "Traceback" not in done.stdout, done.stdout
        if step.shown:
            assert matches(step.shown, done.stdout), (
                f"$ {step.command}\nshown:\n" + "\n".join(step.shown) + f"\nprinted:\n{done.stdout}"
            )
        else:
            assert done.returncode == 0, f"$ {step.command}\n{done.stdout}"


def test_both_documents_have_examples() -> None:
    assert {t.name.split(":")[0] for t in ALL} == set(DOCUMENTS)


@pytest.mark.parametrize(
    ("shown", "printed", "verdict"),
    [
        (["a", "b"], "a\nb\n", True),
        (["a", "b"], "a\nc\n", False),
        (["a", "...", "d"], "a\nb\nc\nd\n", True),
        (["a", "...", "d"], "a\nd\n", True),
        (["... files checked, no problems"], "81 files checked, no problems\n", True),
        (["... files checked, no problems"], "81 files checked: 1 error\n", False),
        (["a"], "a\nb\n", False),
    ],
)
def test_the_shown_output_is_read_with_wildcards(
    shown: list[str], printed: str, verdict: bool
) -> None:
    assert matches(shown, printed) is verdict
