"""The GitHub workflows run third-party actions pinned by commit, so a moved tag changes nothing."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))
USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<action>\S+)(?P<rest>.*)$")
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")
TAG_COMMENT = re.compile(r"^\s+#\s+v\d+(\.\d+)*\s*$")


def test_every_action_is_pinned_by_full_commit_sha_with_its_tag_in_a_comment() -> None:
    found = []
    for workflow in WORKFLOWS:
        for number, line in enumerate(workflow.read_text(encoding="utf-8").splitlines(), 1):
            match = USES.match(line)
            if match is None:
                continue
            where = f"{workflow.name}:{number}"
            found.append(where)
            action = match["action"]
            if action.startswith("./"):
                continue  # an action of this repository, pinned by the checkout itself
            assert PINNED.match(action), f"{where}: {action} is not pinned by a 40-hex commit"
            assert TAG_COMMENT.match(match["rest"]), f"{where}: no '# vX.Y.Z' after {action}"
    assert len(WORKFLOWS) >= 3 and len(found) >= 8, (WORKFLOWS, found)


def test_one_action_is_pinned_to_one_commit_everywhere() -> None:
    """Two workflows that use one action at one tag pin the same commit."""
    pins: dict[tuple[str, str], set[str]] = {}
    for workflow in WORKFLOWS:
        for line in workflow.read_text(encoding="utf-8").splitlines():
            match = USES.match(line)
            if match is None or "@" not in match["action"]:
                continue
            name, commit = match["action"].split("@", 1)
            pins.setdefault((name, match["rest"].strip()), set()).add(commit)
    assert pins and all(len(commits) == 1 for commits in pins.values()), pins
