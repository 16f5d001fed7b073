"""The examples in README.md and CONTRIBUTING.md, run: they cannot go stale.

Every ```console block is a transcript, and every ```python block a program whose ``print``
lines say in a comment what they print. Lines starting with ``$ `` are commands (a trailing
``\\`` continues one on the next line); the lines after a command, up to the next, are what it
prints (standard output and error together). In the shown output a line ``...`` stands for any
number of lines and ``...`` within a line for any text. A command shown without output must
succeed (exit 0); its output is not compared.

Each block runs in a fresh clone, with ``kvrecords`` on the PATH and nothing prepared: a git
repository whose ``main`` holds every file of the repository (the working tree's version of
each file git tracks or would track) in its last commit, on top of the commit this one started
from. So an example can use only files that are in the repository, and a doc change whose
example does not run fails here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", "CONTRIBUTING.md")
_BLOCK = re.compile(r"^(?P<indent>[ ]*)```console\n(?P<body>.*?)^(?P=indent)```", re.M | re.S)


class Step(NamedTuple):
    command: str
    shown: list[str]  # the output as the document shows it


class Transcript(NamedTuple):
    name: str  # README.md:46, the line the block starts on
    steps: list[Step]


def transcripts(document: str) -> list[Transcript]:
    text = (REPO / document).read_text(encoding="utf-8")
    found = []
    for match in _BLOCK.finditer(text):
        indent = len(match["indent"])
        lines = [line[indent:] for line in match["body"].splitlines()]
        line_number = text.count("\n", 0, match.start("body"))
        found.append(Transcript(f"{document}:{line_number}", _steps(lines)))
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


_GIT = "git -c user.name=kvrecords -c user.email=kvrecords@localhost"


def _repository_files() -> list[str]:
    """What a clone of the working tree holds: every file git tracks or would track."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8")
    return sorted({name for name in listed.split("\0") if name and (REPO / name).is_file()})


def fresh_clone(tmp_path: Path) -> Path:
    """A repository like a fresh clone: HEAD's tree committed on ``main``, then the working
    tree's files committed over it (so ``HEAD~1`` exists, as in a clone with history)."""
    root = tmp_path / "kv-efficiency-records"
    root.mkdir()
    archive = subprocess.run(
        ["git", "archive", "--format=tar", "HEAD"], cwd=REPO, capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive.stdout, check=True)
    first = f"git init -q -b main && {_GIT} add -A && {_GIT} commit -q -m base"
    assert _run(first, root).returncode == 0
    for name in (
        subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True)
        .stdout.decode("utf-8")
        .split("\0")
    ):
        if name:
            (root / name).unlink()
    for name in _repository_files():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, root / name)
    second = f"{_GIT} add -A && {_GIT} commit -q --allow-empty -m 'the working tree'"
    assert _run(second, root).returncode == 0
    return root


ALL = [transcript for document in DOCUMENTS for transcript in transcripts(document)]


@pytest.mark.parametrize("transcript", ALL, ids=lambda t: t.name)
def test_the_example_runs_as_shown(transcript: Transcript, tmp_path: Path) -> None:
    root = fresh_clone(tmp_path)
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


@pytest.mark.parametrize("document", DOCUMENTS)
def test_no_example_needs_a_step_the_reader_does_not_see(document: str) -> None:
    """Set-up hidden in a comment, or a file only the tests have, would not run for a reader."""
    text = (REPO / document).read_text(encoding="utf-8")
    assert "<!-- transcript" not in text
    commands = "\n".join(step.command for t in transcripts(document) for step in t.steps)
    assert "tests/" not in commands and "$REPO" not in commands


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


_PYTHON = re.compile(r"^```python\n(?P<body>.*?)^```", re.M | re.S)


def python_examples(document: str) -> list[tuple[str, str]]:
    """Each ```python block of a document, named by its line: the code a reader would paste."""
    text = (REPO / document).read_text(encoding="utf-8")
    return [
        (f"{document}:{text.count(chr(10), 0, match.start('body'))}", match["body"])
        for match in _PYTHON.finditer(text)
    ]


PYTHON = [example for document in DOCUMENTS for example in python_examples(document)]


@pytest.mark.parametrize(("name", "code"), PYTHON, ids=[name for name, _ in PYTHON])
def test_the_python_example_prints_what_its_comments_say(
    name: str, code: str, tmp_path: Path
) -> None:
    """A ``print(...)  # a b`` line promises that output, in order."""
    root = fresh_clone(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    prints = [line for line in code.splitlines() if line.startswith("print(")]
    assert all("#" in line for line in prints), "a print without the output it promises"
    promised = [line.split("#", 1)[1].strip() for line in prints]
    assert promised and done.stdout.splitlines() == promised, done.stdout
