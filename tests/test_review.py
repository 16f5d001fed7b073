"""``kvrecords review --base REF``: what a change does to the dataset, read against git."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, copy_dataset, run_cli
from kvrecords.dataset.document import Document, read_document
from kvrecords.tools.review_report import MARKER, _code
from kvrecords.tools.revision import RevisionError, _safe_path

SEED = "records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml"
SEED_ID = "kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090"
Q4_ID = "kv-efficiency/llamacpp-qwen38-27b-q4-rtx3090-128k"
AFFINE4_ID = "kv-efficiency/omlx-affine4-vs-turboquant4-qwen38-27b-qwen36-35b-m5pro-200k"
MODEL = "models/qwen3-8-27b.yaml"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=Reviewer", "-c", "user.email=reviewer@example.org", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository holding the dataset, everything committed on ``main``."""
    root = copy_dataset(tmp_path / "repo")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the dataset")
    return root


def review(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("review", "--base", "main", *args, cwd=repo)


def review_json(repo: Path) -> dict:  # type: ignore[type-arg]
    result = review(repo, "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def add_copy_of_seed(repo: Path, slug: str) -> str:
    text = (repo / SEED).read_text(encoding="utf-8")
    path = f"records/kv-efficiency/{slug}.yaml"
    (repo / path).write_text(text.replace(f"id: {SEED_ID}", f"id: kv-efficiency/{slug}"))
    return path


def test_an_added_record_and_a_changed_model(repo: Path) -> None:
    """The issue's case: a commit adds a record and changes a model file."""
    model = repo / MODEL
    model.write_text(model.read_text().replace("kv_heads: 4", "kv_heads: 8", 1))
    add_copy_of_seed(repo, "second-look")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a record, and the model corrected")
    git(repo, "tag", "after")
    result = run_cli("review", "--base", "after~1", "--format", "json", cwd=repo)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["counts"]["records_added"] == 1
    assert data["counts"]["models_changed"] == 1
    (model_change,) = data["dependencies"]
    assert model_change["path"] == MODEL
    assert model_change["fields"] == [
        {
            "field": "layer_groups[0].kv_heads",
            "old": 4,
            "new": 8,
            "old_text": "4",
            "new_text": "8",
        }
    ]
    # every record linking the model, as the files say (a record's model or a run's)
    linking = {"kv-efficiency/second-look"}
    for path in (repo / "records").rglob("*.yaml"):
        document = read_document(path, str(path))
        assert isinstance(document, Document)
        named = {document.data["model"]} | {r.get("model") for r in document.data["runs"]}
        if "qwen3-8-27b" in named:
            linking.add(document.data["id"])
    assert {SEED_ID, Q4_ID, AFFINE4_ID} <= linking
    assert set(model_change["dependents"]) == linking
    by_id = {r["id"]: r for r in data["records"]}

    added = by_id["kv-efficiency/second-look"]
    assert added["change"] == "added" and added["old"] is None
    figures = {f"{f['basis']} {f['name']}": f for f in added["new"]["figures"]}
    # 16 layers x 8 kv heads x (256 + 256) x 2 B = 131,072 B; x 150,000 = 19,660,800,000 B
    assert figures["main basis bytes_per_token"]["stated"] == "65536"
    assert figures["main basis bytes_per_token"]["recomputed"] == "131,072 B"
    assert figures["main basis kv_at_context"]["recomputed"] == "19,660,800,000 B (18.31 GiB)"
    assert any(" KV301 " in p for p in added["new"]["problems"])
    assert added["explanation"].startswith("records/kv-efficiency/second-look.yaml")

    seed = by_id[SEED_ID]
    assert seed["change"] == "moved" and seed["because"] == [MODEL] and seed["fields"] == []
    moved = {m["what"]: (m["old"], m["new"]) for m in seed["moved"]}
    # before: 16 x 4 x 512 x 2 = 65,536 B/token, x 150,000 = 9,830,400,000 B (9.16 GiB)
    assert moved["main basis bytes_per_token"] == ("65,536 B", "131,072 B")
    assert moved["main basis kv_at_context"] == (
        "9,830,400,000 B (9.16 GiB)",
        "19,660,800,000 B (18.31 GiB)",
    )
    # 64 layers as full attention: 64 x 4 x 512 x 2 = 262,144 B/token, doubled by 8 heads
    assert moved["alternatives[0] bytes_per_token"] == ("262,144 B", "524,288 B")
    assert by_id[Q4_ID]["change"] == "moved"

    moving = [r for r in data["records"] if r["change"] == "moved"]
    assert {SEED_ID, Q4_ID} <= {r["id"] for r in moving}
    markdown = run_cli("review", "--base", "after~1", cwd=repo).stdout
    assert markdown.startswith(MARKER + "\n## Dataset review")
    assert "1 record added" in markdown
    assert f"the derived figures of {len(moving)} records move" in markdown
    assert (
        f"| `{SEED_ID}` | `main basis bytes_per_token` | `65,536 B` | `131,072 B` | `{MODEL}` |"
        in markdown
    )
    assert "| `layer_groups[0].kv_heads` | `4` | `8` |" in markdown
    # the added record links the model too; its figures are new, not moved
    assert f"{len(linking)} records link it; the derived figures of {len(moving)} of them move" in (
        markdown
    )


def test_a_hardware_change_moves_the_margins_of_the_records_on_it(repo: Path) -> None:
    hardware = repo / "hardware/rtx-5090.yaml"
    hardware.write_text(hardware.read_text().replace("usable_gib: 31.84", "usable_gib: 63.68"))
    data = review_json(repo)
    (change,) = data["dependencies"]
    assert change["kind"] == "hardware" and SEED_ID in change["dependents"]
    (seed,) = [r for r in data["records"] if r["id"] == SEED_ID]
    moved = {m["what"]: (m["old"], m["new"]) for m in seed["moved"]}
    # The likely reading: weights 27e9 x 4 bits / 8 = 13,500,000,000 B, KV 9,830,400,000 B:
    # 23,330,400,000 B. 31.84 GiB = 34,187,939,676 B: 68.2%; 63.68 GiB = 68,375,879,352 B: 34.1%.
    assert moved["KV701 run 'cold': fit"] == ("68% (ok)", "34% (ok)")
    # the claim that the 36.6 GiB alternative does not fit: 13.5e9 + 39,321,600,000 B
    # = 52,821,600,000 B is 154.5% of 31.84 GiB and 77.3% of 63.68 GiB, so now it fits on the
    # likely reading; on the favourable one (27.5B in bf16: 55e9 B) it still does not
    moved_claim = moved["KV704 fit claim [1] (does not fit)"]
    assert moved_claim == ("155% (ok)", "77% (violated on the likely reading)")
    # the records on the card, as the files say; only those listed can have moved
    on_card = set()
    for path in (repo / "records").rglob("*.yaml"):
        document = read_document(path, str(path))
        assert isinstance(document, Document)
        if document.data["methodology"]["hardware"].get("accelerator") == "rtx-5090":
            on_card.add(document.data["id"])
    listed = {r["id"] for r in data["records"]}
    assert SEED_ID in listed and listed <= on_card


def test_a_changed_record_field_by_field_and_a_removed_one(repo: Path) -> None:
    seed = repo / SEED
    seed.write_text(seed.read_text().replace("kv_at_context: 9.16 GiB", "kv_at_context: 9.160 GiB"))
    (repo / "records/kv-efficiency/llamacpp-qwen38-27b-q4-rtx3090-128k.yaml").unlink()
    data = review_json(repo)
    by_id = {r["id"]: r for r in data["records"]}
    changed = by_id[SEED_ID]
    assert changed["change"] == "changed"
    # the value is a string as written; the precision it was written with is what changed
    assert [(f["field"], f["old_text"], f["new_text"]) for f in changed["fields"]] == [
        ("kv_bytes_basis.kv_at_context", "9.16 GiB", "9.160 GiB")
    ]
    # 9,830,400,000 B / 2^30 = 9.1553 GiB: right at two decimals, wrong at three
    assert changed["moved"] == [] and changed["old"]["problems"] == []
    assert [p.split(" ", 2)[1] for p in changed["new"]["problems"]] == ["KV302"]
    removed = by_id[Q4_ID]
    assert removed["change"] == "removed" and removed["new"] is None
    assert removed["old"]["derived"] is True
    assert data["counts"] == {
        "records_added": 0,
        "records_changed": 1,
        "records_removed": 1,
        "records_moved": 0,
        "models_changed": 0,
        "hardware_changed": 0,
        "schemas_changed": 0,
    }


def test_nothing_changed_and_the_working_tree_is_left_alone(repo: Path) -> None:
    (repo / "records/kv-efficiency/untracked.txt").write_text("not a record\n")
    status = git(repo, "status", "--porcelain")
    head = git(repo, "rev-parse", "HEAD")
    result = review(repo)
    assert result.returncode == 0, result.stderr
    assert "no record, model, hardware or schema file changed" in result.stdout
    assert git(repo, "status", "--porcelain") == status
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "stash", "list") == ""


def test_a_record_broken_in_the_working_tree_is_reviewed_not_crashed_on(repo: Path) -> None:
    seed = repo / SEED
    seed.write_text(seed.read_text().replace("confidence: 0.62", "confidence: [unclosed"))
    data = review_json(repo)
    (record,) = data["records"]
    assert record["new"]["derived"] is False
    assert record["new"]["problems"][0].split(" ")[1].startswith("KV0")


def test_a_stranger_s_markdown_stays_inside_code_spans(repo: Path) -> None:
    seed = repo / SEED
    hostile = "see <img src=x onerror=alert(1)> and @maintainer | [link](https://evil.example)"
    text = seed.read_text()
    seed.write_text(text.replace("\ntitle: ", f"\ntitle: '{hostile}' # ", 1))
    markdown = review(repo).stdout
    assert "<img" not in markdown.replace("`see <img", "")
    row = next(line for line in markdown.splitlines() if line.startswith("| `title`"))
    assert row.endswith(
        "| `see <img src=x onerror=alert(1)> and @maintainer \\| [link](https://evil.example)` |"
    )


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        (None, "-"),
        ("a | b", "`a \\| b`"),
        ("two\nlines", "`two lines`"),
        ("has `ticks`", "`` has `ticks` ``"),
        ("x" * 200, "`" + "x" * 159 + "…`"),
    ],
)
def test_cells(value: str | None, cell: str) -> None:
    assert _code(value) == cell


def test_bad_revisions_and_folders_outside_git(repo: Path, tmp_path: Path) -> None:
    result = run_cli("review", "--base", "no-such-branch", cwd=repo)
    assert result.returncode == 2
    assert "'no-such-branch' names no commit" in result.stderr and "Traceback" not in result.stderr
    assert run_cli("review", "--base", "--help", cwd=repo).returncode == 2
    outside = copy_dataset(tmp_path / "plain", with_records=False)
    result = run_cli("review", "--base", "main", cwd=outside)
    assert result.returncode == 2 and "Traceback" not in result.stderr


def test_a_symlink_in_the_base_is_not_followed(repo: Path) -> None:
    (repo / "records/kv-efficiency/link.yaml").symlink_to("/etc/hostname")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a link")
    (repo / "records/kv-efficiency/link.yaml").unlink()
    data = review_json(repo)
    assert [r["id"] for r in data["records"]] == []  # the base's link was never written out


@pytest.mark.parametrize("name", ["../escape.yaml", "/etc/passwd", "records/../../x", "a/.git/b"])
def test_tree_paths_that_leave_the_destination_are_refused(name: str) -> None:
    with pytest.raises(RevisionError):
        _safe_path(name)


def _workflow(name: str) -> dict:  # type: ignore[type-arg]
    path = REPO / ".github" / "workflows" / name
    document = read_document(path, name)
    assert isinstance(document, Document)
    return document.data  # type: ignore[no-any-return]


def test_the_workflows_post_the_review_without_running_a_fork_s_code() -> None:
    gate = _workflow("lint.yml")
    review_job = gate["jobs"]["review"]
    assert review_job["permissions"] == {"contents": "read"}
    assert any(
        "kvrecords review --base HEAD^1" in step.get("run", "") for step in review_job["steps"]
    )
    assert any("$GITHUB_STEP_SUMMARY" in step.get("run", "") for step in review_job["steps"])
    commenter = _workflow("review-comment.yml")
    assert commenter["on"] == {
        "workflow_run": {"workflows": [gate["name"]], "types": ["completed"]}
    }
    assert commenter["permissions"] == {}
    (job,) = commenter["jobs"].values()
    assert job["permissions"] == {"actions": "read", "pull-requests": "write"}
    uses = [step.get("uses", "") for step in job["steps"]]
    assert not any(step.get("run") for step in job["steps"])  # nothing of the pull request runs
    assert not any(u.startswith("actions/checkout") for u in uses)
    script = job["steps"][-1]["with"]["script"]
    assert f'const marker = "{MARKER}";' in script
    assert "pull.head.sha !== run.head_sha" in script


def test_two_releases_are_compared_without_the_working_tree(repo: Path) -> None:
    """Release notes: what moved between two tags, whatever the working tree holds."""
    git(repo, "tag", "data-1")
    model = repo / MODEL
    model.write_text(model.read_text().replace("kv_heads: 4", "kv_heads: 8", 1))
    git(repo, "commit", "-q", "-am", "the model corrected")
    git(repo, "tag", "data-2")
    # uncommitted work that a comparison of two releases must not see
    add_copy_of_seed(repo, "not-released")
    (repo / SEED).unlink()
    result = run_cli("review", "--base", "data-1", "--head", "data-2", "--format", "json", cwd=repo)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["head"]["ref"] == "data-2"
    assert data["head"]["commit"] == git(repo, "rev-parse", "data-2").strip()
    assert data["counts"]["records_added"] == 0 and data["counts"]["records_removed"] == 0
    moved = {
        r["id"]: {m["what"]: (m["old"], m["new"]) for m in r["moved"]} for r in data["records"]
    }
    # every record linking the model, as the files say (the seed was removed after data-2)
    linking = {SEED_ID}
    for path in (repo / "records").rglob("*.yaml"):
        document = read_document(path, str(path))
        assert isinstance(document, Document)
        named = {document.data["model"]} | {r.get("model") for r in document.data["runs"]}
        if "qwen3-8-27b" in named and document.data["id"] != "kv-efficiency/not-released":
            linking.add(document.data["id"])
    assert {SEED_ID, Q4_ID, AFFINE4_ID} <= set(moved) <= linking
    # 16 x 4 x 512 x 2 = 65,536 B/token before; 8 kv heads double it
    assert moved[SEED_ID]["main basis bytes_per_token"] == ("65,536 B", "131,072 B")
    markdown = run_cli("review", "--base", "data-1", "--head", "data-2", cwd=repo).stdout
    assert "`data-2` (`" in markdown and ") against `data-1` (`" in markdown
    assert f"the derived figures of {len(moved)} records move" in markdown
    bad = run_cli("review", "--base", "data-1", "--head", "no-such-tag", cwd=repo)
    assert bad.returncode == 2 and "'no-such-tag' names no commit" in bad.stderr


def test_only_the_pages_deploy_job_may_publish() -> None:
    # the build job runs the dataset's code; Pages-write and the OIDC token belong to the job
    # that runs none of it
    site = _workflow("pages.yml")
    assert site["permissions"] == {"contents": "read"}
    assert "permissions" not in site["jobs"]["build"]
    assert site["jobs"]["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    assert not any(step.get("run") for step in site["jobs"]["deploy"]["steps"])


def test_a_deleted_model_lists_the_records_that_link_it_and_that_validate_fails_them(
    repo: Path,
) -> None:
    (repo / "models/deepseek-v2.yaml").unlink()
    record_id = "kv-efficiency/deepseek-v2-mla-8xh800"
    data = review_json(repo)
    (removed,) = data["dependencies"]
    assert removed["change"] == "removed" and removed["dependents"] == [record_id]
    (record,) = data["records"]
    assert record["id"] == record_id and record["change"] == "moved"
    assert record["moved"] == [
        {
            "what": "derived figures",
            "old": "derived",
            "new": "none: models/deepseek-v2.yaml does not exist",
        }
    ]
    markdown = review(repo).stdout
    assert "no derived figure moves" not in markdown
    assert "`kvrecords validate` fails 1 record that links it after this change:" in markdown
    assert f"- `{record_id}`: `" in markdown and " KV203 " in markdown


def test_each_record_shows_the_source_url_and_locator_to_read_it_against(repo: Path) -> None:
    text = (repo / "records/kv-efficiency/llamacpp-qwen38-27b-q4-rtx3090-128k.yaml").read_text()
    (repo / "records/kv-efficiency/a-second-look.yaml").write_text(
        text.replace(f"id: {Q4_ID}", "id: kv-efficiency/a-second-look")
    )
    add_copy_of_seed(repo, "no-url")  # the seed has no URL: its citation is shown instead
    markdown = review(repo).stdout
    assert (
        "Source: `https://github.com/noonghunna/club-3090/issues/1111`, at "
        '`"Prefill performance" and "Decode performance" tables`.'
    ) in markdown
    assert "Source: (no URL), at (no locator). Cited as `Senn Tech post dated" in markdown
    by_id = {r["id"]: r for r in review_json(repo)["records"]}
    assert by_id["kv-efficiency/a-second-look"]["source"]["url"] == (
        "https://github.com/noonghunna/club-3090/issues/1111"
    )


def test_commits_made_on_main_are_explained_not_reported_as_no_change(repo: Path) -> None:
    add_copy_of_seed(repo, "committed-on-main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a record, committed on main")
    markdown = review(repo).stdout
    assert "because HEAD is `main`'s own commit" in markdown
    assert "git switch -c" in markdown and "--base HEAD~1" in markdown
    assert run_cli("review", "--base", "HEAD~1", cwd=repo).stdout.count("1 record added") == 1
    # on a branch, the same commit is compared with main as the pull request will be
    git(repo, "switch", "-q", "-c", "add-my-record", "HEAD")
    git(repo, "branch", "-q", "-f", "main", "HEAD~1")
    on_branch = review(repo).stdout
    assert "1 record added" in on_branch and "own commit" not in on_branch


def test_a_sibling_geometry_is_shown_and_its_model_is_a_dependency(repo: Path) -> None:
    text = (repo / SEED).read_text(encoding="utf-8")
    path = repo / "records/kv-efficiency/sibling.yaml"
    path.write_text(
        text.replace(f"id: {SEED_ID}", "id: kv-efficiency/sibling").replace(
            "model: qwen3-8-27b\n",
            "model: qwen3-8-27b\ngeometry_of:\n  model: qwen3.6-35b-a3b\n  reason: A sibling.\n",
        )
    )
    markdown = review(repo).stdout
    assert "Geometry of `models/qwen3.6-35b-a3b` (checked, KV208): `A sibling.`." in markdown
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a record on a sibling geometry")
    sibling = repo / "models/qwen3.6-35b-a3b.yaml"
    sibling.write_text(sibling.read_text().replace("num_layers: 40", "num_layers: 41", 1))
    (model,) = review_json(repo)["dependencies"]
    assert "kv-efficiency/sibling" in model["dependents"]
