"""kvrecords migrate: a format-1 record becomes a format-2 record that validates, losing nothing.

tests/migration/format-1-seed.yaml is the seed record as it stood in format 1 (cold 53,200 ms,
warm 2,300 ms, hit rate 0.935, 23x, 140,250 tokens and 8.56 GiB not recomputed, and one
observation of four days on a second host).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from conftest import run_cli
from kvrecords.runner.validate import validate
from kvrecords.tools.migrate import metric_for

FORMAT_1 = Path(__file__).parent / "migration" / "format-1-seed.yaml"
NAME = "vllm-qwen38-27b-apc-150k-rtx5090"
RECORD = f"records/kv-efficiency/{NAME}.yaml"

# The seed's observation under names the vocabulary holds (ttft_p90_ms is ttft_ms at p90).
OBSERVATION = """\
  observations:
    - label: second host, 4x RTX 5090, four days of mixed traffic
      hardware:
        accelerator: rtx-5090
        count: 4
        memory_stated: 128 GB VRAM
      figures:
        duration_days: 4
        prompt_tokens: {about: 78000000}
        generated_tokens: {about: 5900000}
        ttft_p90_ms: 4100
        hit_rate: {min: 0.43, max: 0.45}
      stated_as: >-
        A second host, 4x RTX 5090 and 128 GB VRAM, ran four days.
"""


def format_1(observations: str = OBSERVATION) -> str:
    text = FORMAT_1.read_text(encoding="utf-8")
    start = text.index("  observations:")
    return text[:start] + observations + text[text.index("notes: >-") :]


def write(root: Path, text: str) -> Path:
    path = root / RECORD
    path.write_text(text, encoding="utf-8")
    return path


def test_a_format_1_record_migrates_to_one_that_validates(empty_dataset: Path) -> None:
    text = format_1().replace("  engine:\n", "  # the replay host\n  engine:\n")
    path = write(empty_dataset, text)
    result = run_cli("migrate", cwd=empty_dataset)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"migrated {RECORD}: 3 runs, 7 metrics, 1 comparison" in result.stdout
    assert validate(empty_dataset).problems == []
    migrated = path.read_text(encoding="utf-8")
    data = yaml.safe_load(migrated)
    assert migrated.split("\n")[1] == "format: 2"
    assert "  # the replay host\n  engine:\n" in migrated  # comments stay
    assert "results" not in data
    runs = {run["id"]: run for run in data["runs"]}
    assert [(m["name"], m["value"]) for m in runs["cold"]["metrics"]] == [("ttft_ms", 53200)]
    assert [(m["name"], m["value"]) for m in runs["warm"]["metrics"]] == [
        ("ttft_ms", 2300),
        ("hit_rate", 0.935),
    ]
    assert runs["warm"]["derived"] == {
        "tokens_not_recomputed": 140250,
        "bytes_not_recomputed": "8.56 GiB",
    }
    assert data["comparisons"] == [
        {
            "kind": "speedup",
            "metric": "ttft_ms",
            "statistic": "single",
            "from": "cold",
            "to": "warm",
            "stated": "23x",
        }
    ]
    assert data["headline_run"] == "warm"
    observed = runs["observation-1"]
    assert observed["duration"] == {"days": 4}
    assert observed["hardware"]["count"] == 4
    assert {(m["name"], m["statistic"]) for m in observed["metrics"]} == {
        ("prompt_tokens", "single"),
        ("generated_tokens", "single"),
        ("ttft_ms", "p90"),
        ("hit_rate", "single"),
    }
    # a hit rate's definition was not in format 1: the contributor reads it off the source
    assert observed["metrics"][-1]["definition"] == {
        "counted_in": "not_stated",
        "window": "not_stated",
    }
    assert "{min: 0.43, max: 0.45}" in migrated  # numbers keep the text they were written in


def test_a_wrong_speedup_is_rejected_after_migration(empty_dataset: Path) -> None:
    path = write(empty_dataset, format_1().replace("speedup: 23x", "speedup: 32x"))
    (before,) = validate(empty_dataset).problems  # format 1 is not read: it says to migrate
    assert before.code == "KV101" and f"kvrecords migrate {RECORD}" in before.message
    assert run_cli("migrate", cwd=empty_dataset).returncode == 0
    (after,) = validate(empty_dataset).problems
    assert after.code == "KV402"
    assert after.message == "speedup is 32x; 53,200 / 2,300 = 23.1304x"
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[after.line - 1][after.column - 1 :] == "32x"


def test_a_rate_keeps_its_scope_and_a_null_card_takes_its_run_figures(empty_dataset: Path) -> None:
    # format 1 could state a decode rate in results and leave the card null; format 2's card
    # repeats the headline run (KV803), so the rate moves to the warm run and onto the card
    text = format_1().replace(
        "  decode_tokens_per_s: null\n",
        "  decode_tokens_per_s: 41.5\n  decode_rate_scope: per_sequence\n",
    )
    path = write(empty_dataset, text)
    assert run_cli("migrate", cwd=empty_dataset).returncode == 0
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    warm = {run["id"]: run for run in data["runs"]}["warm"]
    assert warm["metrics"][-1] == {
        "name": "decode_tokens_per_s",
        "statistic": "single",
        "value": 41.5,
        "scope": "per_sequence",
    }
    assert data["measured_tps_at_ctx"] == 41.5
    assert "measured_tps_at_ctx" not in [entry["field"] for entry in data["not_stated"]]
    assert [p.code for p in validate(empty_dataset).problems if p.severity == "error"] == []


def test_a_figure_no_metric_holds_leaves_the_record_unchanged(empty_dataset: Path) -> None:
    text = format_1(OBSERVATION.replace("ttft_p90_ms: 4100", "wait_queue_requests: 3"))
    path = write(empty_dataset, text)
    result = run_cli("migrate", RECORD, cwd=empty_dataset)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{RECORD}: not migrated; no metric holds:" in result.stdout
    assert "  results.observations[0].figures.wait_queue_requests" in result.stdout
    assert path.read_text(encoding="utf-8") == text


def test_check_lists_format_1_records_and_changes_nothing(empty_dataset: Path) -> None:
    text = format_1()
    path = write(empty_dataset, text)
    result = run_cli("migrate", "--check", cwd=empty_dataset)
    assert result.returncode == 1
    assert f"{RECORD}: format 1 (kvrecords migrate {RECORD})" in result.stdout
    assert path.read_text(encoding="utf-8") == text
    assert run_cli("migrate", cwd=empty_dataset).returncode == 0
    assert run_cli("migrate", "--check", cwd=empty_dataset).returncode == 0


def test_a_file_that_is_not_a_record_is_refused_with_a_reason(empty_dataset: Path) -> None:
    tagged = format_1().replace(
        "  engine:\n", "  engine: !!python/object/apply:os.system [id]\n  x:\n"
    )
    without_methodology = format_1().replace("methodology:", "method:")
    for text, reason in (
        ("key: value\n", ": is not a record"),
        # what validate refuses unread is refused here as validate words it
        ("- just\n- a list\n", ":1:1: KV006 the top level must be a mapping"),
        ("key: [unclosed\n", ":2:1: KV001 YAML syntax"),
        (tagged, ":64:11: KV004 tag"),
        (without_methodology, ": is not a format-1 record: no methodology"),
    ):
        path = write(empty_dataset, text)
        result = run_cli("migrate", RECORD, cwd=empty_dataset)
        assert result.returncode == 1, text
        assert f"{RECORD}{reason}" in result.stdout, result.stdout
        assert "Traceback" not in result.stderr and not result.stderr
        assert path.read_text(encoding="utf-8") == text


def test_ad_hoc_names_map_to_a_metric_and_a_statistic() -> None:
    assert metric_for("ttft_ms") == ("ttft_ms", "single")
    assert metric_for("mean_ttft_ms") == ("ttft_ms", "mean")
    assert metric_for("ttft_p90_ms") == ("ttft_ms", "p90")
    assert metric_for("median_itl_ms") == ("itl_ms", "median")
    assert metric_for("average_ttft_ms") == ("ttft_ms", "mean")
    assert metric_for("ttft_fp8_ms") is None  # a setting in the name is a run, not a metric
    assert metric_for("cache_hit_rate") is None
