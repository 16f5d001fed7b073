"""The submission issue form and ``kvrecords new --from-issue``: the form's answers, as GitHub
renders them, become a scaffolded record; what cannot be recorded as written stays a
placeholder the validator rejects."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, run_cli
from kvrecords.dataset.document import Document, parse_document, read_document
from kvrecords.runner.validate import validate
from kvrecords.tools.issue_form import (
    DECODE_RATE_SCOPES,
    LABELS,
    IssueFormError,
    figure,
    parse_issue_body,
    whole_number,
)
from kvrecords.tools.issue_runs import table_runs
from kvrecords.tools.issue_scaffold import scaffold_from_issue
from kvrecords.tools.scaffold import TODO_REASON

BODIES = Path(__file__).parent / "issue_forms"
APC_BODY = BODIES / "vllm-apc-rtx5090.md"
APC_SLUG = "vllm-qwen3-8-27b-rtx-5090-150k"


def data_of(text: str) -> Any:
    document = parse_document(text.encode("utf-8"), "<test>")
    assert isinstance(document, Document), document
    return document.data


def with_answer(body: str, label: str, answer: str) -> str:
    """The body with one answer replaced, as if the submitter had written ``answer``."""
    pattern = rf"(### {re.escape(label)}\n\n)(.*?)(\n\n### |\Z)"
    replaced, count = re.subn(
        pattern, lambda m: m.group(1) + answer + m.group(3), body, count=1, flags=re.DOTALL
    )
    assert count == 1, label
    return replaced


def codes(root: Path, path: Path) -> list[str]:
    return [p.code for p in validate(root, [path]).problems]


# ---- the form ---------------------------------------------------------------------------


def form() -> dict[str, Any]:
    path = REPO / ".github" / "ISSUE_TEMPLATE" / "record.yml"
    document = read_document(path, "record.yml")
    assert isinstance(document, Document)
    return document.data  # type: ignore[no-any-return]


def test_the_form_is_an_issue_form_whose_labels_the_reader_knows() -> None:
    data = form()
    assert {"name", "description", "body"} <= set(data)
    elements = data["body"]
    assert {e["type"] for e in elements} <= {
        "markdown",
        "input",
        "textarea",
        "dropdown",
        "checkboxes",
    }
    asked = {e["id"]: e for e in elements if e["type"] != "markdown"}
    assert len(asked) == len([e for e in elements if e["type"] != "markdown"])  # ids unique
    assert {answer_id: e["attributes"]["label"] for answer_id, e in asked.items()} == LABELS
    assert all(re.fullmatch(r"[a-z_]+", answer_id) for answer_id in asked)
    # every question a submitter must answer for a record to exist is required
    required = {i for i, e in asked.items() if e.get("validations", {}).get("required")}
    assert {"source_url", "publisher", "model", "engine", "techniques"} <= required
    assert all(option["required"] for option in asked["terms"]["attributes"]["options"])


def test_the_form_offers_exactly_what_the_schema_and_reader_accept() -> None:
    asked = {e["id"]: e for e in form()["body"] if e["type"] != "markdown"}
    schema = json.loads((REPO / "schema/record.schema.json").read_text(encoding="utf-8"))
    enum = schema["properties"]["techniques"]["items"]["enum"]
    assert asked["techniques"]["attributes"]["options"] == enum
    assert asked["techniques"]["attributes"]["multiple"] is True
    scopes = asked["decode_rate_scope"]["attributes"]["options"]
    assert scopes == list(DECODE_RATE_SCOPES)
    metric_scopes = schema["$defs"]["metric"]["properties"]["scope"]["enum"]
    assert set(DECODE_RATE_SCOPES.values()) <= set(metric_scopes)


# ---- reading the body ---------------------------------------------------------------------


def test_a_rendered_body_gives_its_answers_by_id() -> None:
    answers = parse_issue_body(APC_BODY.read_text(encoding="utf-8"))
    assert answers["model"] == "Qwen3.8-27B"
    assert answers["techniques"] == "prefix_caching, hybrid_linear_attention"
    assert answers["engine_flags"].startswith("```shell\n--enable-prefix-caching")
    # "_No response_" and a dropdown's "None" are no answer
    assert "source_title" not in answers and "decode_rate_scope" not in answers
    assert answers["workload"].count("\n") == 1


def test_line_breaks_of_any_kind_read_the_same() -> None:
    text = APC_BODY.read_text(encoding="utf-8")
    assert parse_issue_body(text.replace("\n", "\r\n")) == parse_issue_body(text)


def test_a_heading_inside_an_answer_s_fence_or_unknown_stays_in_the_answer() -> None:
    body = (
        "### Runs and figures\n\n```\n### Model\nnot a heading\n```\n### Not a form label\n"
        "still the runs\n\n### Model\n\nqwen3-8b\n"
    )
    answers = parse_issue_body(body)
    assert answers["model"] == "qwen3-8b"
    assert answers["runs"] == (
        "```\n### Model\nnot a heading\n```\n### Not a form label\nstill the runs"
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("Please add my benchmark: https://example.org\n", "no answer of the record form"),
        ("### Model\n\nqwen3-8b\n\n### Model\n\nqwen3-32b\n", "'### Model' appears twice"),
    ],
)
def test_a_body_not_from_the_form_is_refused(body: str, message: str) -> None:
    with pytest.raises(IssueFormError, match=message):
        parse_issue_body(body)


@pytest.mark.parametrize(
    ("answer", "kind", "value"),
    [
        ("2300", "ms", 2300),
        ("2,300 ms", "ms", 2300),
        ("2.3 s", "ms", 2300),  # 2.3 x 1000
        ("53.2 s", "ms", 53200),
        ("~900", "ms", {"about": 900}),
        ("about 1,300 ms", "ms", {"about": 1300}),
        ("41.35 tok/s", "rate", 41.35),
        ("1155.40", "rate", 1155.4),
        ("93.5%", "fraction", 0.935),  # 93.5 / 100
        ("0.935", "fraction", 0.935),
        ("43-45%", "fraction", {"min": 0.43, "max": 0.45}),
        ("70 to 90 %", "fraction", {"min": 0.7, "max": 0.9}),
    ],
)
def test_figures_are_read_as_written(answer: str, kind: str, value: Any) -> None:
    assert figure(answer, kind) == value


@pytest.mark.parametrize(
    ("answer", "kind", "message"),
    [
        ("fast", "ms", "write it as a number"),
        ("2300 tok/s", "ms", "one of: ms, s, sec"),
        ("0", "ms", "above zero"),
        ("93.5", "fraction", "write a percentage with %"),
        ("~43-45%", "fraction", "an approximate range"),
        ("45-43", "rate", "from the lower end"),
        ("1e9", "rate", "write it as a number"),
    ],
)
def test_figures_that_cannot_be_recorded_say_why(answer: str, kind: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        figure(answer, kind)


@pytest.mark.parametrize(
    ("answer", "value"), [("150000", 150000), ("150,000", 150000), ("1", 1), ("128K", None)]
)
def test_whole_numbers_are_digits_only(answer: str, value: int | None) -> None:
    if value is None:
        with pytest.raises(ValueError):
            whole_number(answer)
    else:
        assert whole_number(answer) == value


# ---- the record ---------------------------------------------------------------------------


def test_a_realistic_issue_becomes_a_record_with_its_arithmetic(dataset: Path) -> None:
    answers = parse_issue_body(APC_BODY.read_text(encoding="utf-8"))
    slug, text = scaffold_from_issue(dataset, answers, {})
    assert slug == APC_SLUG  # engine, model, accelerator, context
    data = data_of(text)
    assert data["model"] == "qwen3-8-27b"  # "Qwen3.8-27B" is the model file's name
    basis = data["kv_bytes_basis"]
    # 16 full-attention layers x 4 kv heads x (256 + 256) x 2 bytes; the KV dtype is not
    # answered, so bf16 is assumed and said to be
    assert basis["bytes_per_token"] == 16 * 4 * 512 * 2 == 65536
    assert basis["dtype"] == "bf16" and basis["dtype_stated"] is False
    # 65,536 B x 150,000 tokens = 9,830,400,000 B = 9.155 GiB
    assert basis["context_tokens"] == 150000 and basis["kv_at_context"] == "9.16 GiB"
    methodology = data["methodology"]
    assert methodology["source"]["url"] == "https://senn.example/blog/vllm-prefix-caching-hermes"
    assert methodology["source"]["published"] == "2026-09-02"
    assert methodology["source"]["locator"] == 'The "Results" paragraph'
    assert methodology["hardware"] == {"accelerator": "rtx-5090", "count": 1}
    assert methodology["engine"]["name"] == "vllm"
    assert methodology["engine"]["flags"] == [
        "--enable-prefix-caching",
        "--enable-prompt-tokens-details",
    ]
    assert methodology["workload"].startswith("A 150,000-token replay prompt")
    assert data["techniques"] == ["prefix_caching", "hybrid_linear_attention"]
    # the cold TTFT a baseline run, the warm TTFT and hit rate the headline treatment run:
    # 53.2 s and 2.3 s in milliseconds, 93.5% as a fraction
    assert data["format"] == 2
    cold, warm = data["runs"]
    assert (cold["id"], cold["role"], warm["id"], warm["role"]) == (
        "cold",
        "baseline",
        "warm",
        "treatment",
    )
    assert [(m["name"], m["statistic"], m["value"]) for m in cold["metrics"]] == [
        ("ttft_ms", "single", 53200)
    ]
    assert [(m["name"], m["value"]) for m in warm["metrics"]] == [
        ("ttft_ms", 2300),
        ("hit_rate", 0.935),
    ]
    # the form asks neither the statistic nor the hit rate's definition: placeholders say so
    assert warm["metrics"][1]["definition"] == {"counted_in": "not_stated", "window": "not_stated"}
    assert cold["note"].startswith("TODO: each figure's statistic")
    assert "the hit rate's definition" in warm["note"]
    assert data["headline_run"] == "warm"
    assert data["measured_ttft_ms_at_ctx"] == 2300  # the card repeats the headline run
    assert data["measured_tps_at_ctx"] is None
    # the other runs wait in the notes placeholder
    assert data["notes"].startswith("TODO")
    assert "aggregate prefix hit rate 43-45 percent" in data["notes"]
    assert "includes decode." in data["notes"]
    listed = {e["field"]: e["reason"] for e in data["not_stated"]}
    assert listed["methodology.engine.version"] == TODO_REASON
    assert not any(field.startswith("runs") for field in listed)


def test_the_scaffold_validates_once_rated_except_for_its_placeholders(dataset: Path) -> None:
    result = run_cli("new", "--from-issue", str(APC_BODY), cwd=dataset)
    assert result.returncode == 0, result.stderr
    path = dataset / "records/kv-efficiency" / f"{APC_SLUG}.yaml"
    assert f"wrote records/kv-efficiency/{APC_SLUG}.yaml" in result.stdout
    # confidence is null until rated; the placeholders are listed beside it
    assert set(codes(dataset, path)) == {"KV101", "KV206"}
    assert codes(dataset, path).count("KV101") == 1
    path.write_text(path.read_text().replace("confidence: null", "confidence: 0.6"))
    flagged = {p.message.split(" ", 1)[0] for p in validate(dataset, [path]).problems}
    assert set(codes(dataset, path)) == {"KV206"}
    assert {"title", "notes", "methodology.source.citation", "confidence_reason"} <= flagged
    again = run_cli("new", "--from-issue", str(APC_BODY), cwd=dataset)
    assert again.returncode == 2 and "already exists" in again.stderr


def test_answers_that_cannot_be_recorded_stay_placeholders(dataset: Path) -> None:
    body = APC_BODY.read_text(encoding="utf-8")
    for label, answer in (
        ("Source URL", "see the hermes post"),
        ("Publication date", "early September"),
        ("Hardware", "H100 80GB"),
        ("Context length (tokens)", "150K"),
        ("Cold TTFT (ms)", "under a minute"),
        ("Prefix-cache hit rate", "93.5"),
    ):
        body = with_answer(body, label, answer)
    slug, text = scaffold_from_issue(dataset, parse_issue_body(body), {})
    assert slug == "vllm-qwen3-8-27b"  # no accelerator or context to name it by
    data = data_of(text)
    listed = {e["field"]: e["reason"] for e in data["not_stated"]}
    for field, quoted in (
        ("methodology.source.url", "'see the hermes post'"),
        ("methodology.source.published", "'early September'"),
        ("methodology.hardware.accelerator", "'H100 80GB'"),
        ("kv_bytes_basis.context_tokens", "'150K'"),
    ):
        assert listed[field].startswith(f"TODO: the issue answers {quoted}"), field
    # a run's figure has no null to keep: its run holds none, and says why in its note
    cold, warm = data["runs"]
    assert cold["metrics"] == [] and [m["name"] for m in warm["metrics"]] == ["ttft_ms"]
    assert cold["note"].startswith("TODO: the issue answers 'under a minute'")
    assert warm["note"].startswith("TODO: the issue answers '93.5'")
    assert "close: h100-sxm, h100-pcie" in listed["methodology.hardware.accelerator"]
    assert data["kv_bytes_basis"]["kv_at_context"] is None
    path = dataset / "records/kv-efficiency" / f"{slug}.yaml"
    path.write_text(text.replace("confidence: null", "confidence: 0.6"))
    problems = [p for p in validate(dataset, [path]).problems if p.code == "KV206"]
    assert {"not_stated[0].reason", "not_stated[3].reason", "runs[0].note", "runs[1].note"} <= {
        p.message.split(" ", 1)[0] for p in problems
    }


@pytest.mark.parametrize(
    ("scope", "metric"),
    [
        ("per sequence", {"name": "decode_tokens_per_s", "scope": "per_sequence"}),
        ("aggregate over all sequences", {"name": "output_tokens_per_s"}),
        ("None", {"name": "decode_tokens_per_s"}),  # not answered: no scope is claimed
    ],
)
def test_one_measured_setting_is_one_run_and_its_rate_keeps_its_scope(
    dataset: Path, scope: str, metric: dict[str, str]
) -> None:
    body = APC_BODY.read_text(encoding="utf-8")
    for label in ("Cold TTFT (ms)", "Warm TTFT (ms)", "Prefix-cache hit rate"):
        body = with_answer(body, label, "_No response_")
    body = with_answer(body, "Decode rate (tokens/s)", "41.35 tok/s")
    body = with_answer(body, "Decode rate is", scope)
    data = data_of(scaffold_from_issue(dataset, parse_issue_body(body), {})[1])
    (run,) = data["runs"]
    assert (run["id"], run["role"], data["headline_run"]) == ("main", "only", "main")
    assert run["label"].startswith("TODO")  # what the one setting was is the source's to say
    ttft, rate = run["metrics"]
    assert ttft == {"name": "ttft_ms", "statistic": "single", "value": 2300}
    assert rate == {**metric, "statistic": "single", "value": 41.35}
    assert (data["measured_ttft_ms_at_ctx"], data["measured_tps_at_ctx"]) == (2300, 41.35)


def test_options_beside_the_issue_win_over_its_answers(dataset: Path) -> None:
    body = with_answer(APC_BODY.read_text(encoding="utf-8"), "Hardware", "H100 80GB")
    issue = dataset / "issue.md"
    issue.write_text(body, encoding="utf-8")
    result = run_cli(
        "new",
        "--from-issue",
        str(issue),
        "--slug",
        "from-the-issue",
        "--accelerator",
        "h100-sxm",
        "--dtype",
        "fp8",
        "--dtype-stated",
        cwd=dataset,
    )
    assert result.returncode == 0, result.stderr
    path = dataset / "records/kv-efficiency/from-the-issue.yaml"
    data = data_of(path.read_text(encoding="utf-8"))
    assert data["methodology"]["hardware"]["accelerator"] == "h100-sxm"
    # fp8: 16 x 4 x 512 x 1 byte = 32,768 B/token
    assert data["kv_bytes_basis"]["bytes_per_token"] == 32768
    assert data["kv_bytes_basis"]["dtype_stated"] is True
    assert "methodology.hardware.accelerator" not in {e["field"] for e in data["not_stated"]}


@pytest.mark.parametrize(
    ("answer", "model_id"),
    [
        ("Qwen/Qwen3-32B", "qwen3-32b"),  # the Hugging Face repository
        ("Qwen3-32B", "qwen3-32b"),
        ("llama 3.1 8b", "llama-3.1-8b"),
        ("meta-llama/Llama-3.1-8B", "llama-3.1-8b"),
        ("qwen3-8b", "qwen3-8b"),
    ],
)
def test_the_model_is_found_by_id_name_or_repository(
    dataset: Path, answer: str, model_id: str
) -> None:
    answers = parse_issue_body(with_answer(APC_BODY.read_text(), "Model", answer))
    assert data_of(scaffold_from_issue(dataset, answers, {})[1])["model"] == model_id


@pytest.mark.parametrize(
    ("label", "answer", "message"),
    [
        ("Engine", "vLLM / SGLang", "is not an engine name"),
        ("KV cache dtype", "fp7", "unknown element type 'fp7'"),
    ],
)
def test_what_the_arithmetic_needs_is_refused_clearly(
    dataset: Path, label: str, answer: str, message: str
) -> None:
    issue = dataset / "issue.md"
    issue.write_text(with_answer(APC_BODY.read_text(), label, answer), encoding="utf-8")
    result = run_cli("new", "--from-issue", str(issue), cwd=dataset)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert "give --" in result.stderr
    assert list((dataset / "records/kv-efficiency").glob("vllm-qwen3-*")) == []


def test_a_model_with_no_file_is_a_todo_naming_the_closest_ids(dataset: Path) -> None:
    """The rest of the draft does not wait for the model: only the KV figures do."""
    issue = dataset / "issue.md"
    issue.write_text(with_answer(APC_BODY.read_text(), "Model", "Qwen3 32B Instruct 2599"))
    result = run_cli("new", "--from-issue", str(issue), cwd=dataset)
    assert result.returncode == 0, result.stderr
    (path,) = (dataset / "records/kv-efficiency").glob("vllm-qwen3-32b-instruct-2599-*")
    data = data_of(path.read_text())
    assert data["model"].startswith("TODO: the issue answers 'Qwen3 32B Instruct 2599'")
    assert "(close: qwen3-32b" in data["model"]
    basis = data["kv_bytes_basis"]
    assert basis["bytes_per_token"] is None and basis["kv_at_context"] is None
    assert basis["context_tokens"] == 150000
    reasons = {entry["field"]: entry["reason"] for entry in data["not_stated"]}
    assert (
        "kvrecords kv MODEL --dtype bf16 --layers cache --context 150000"
        in (reasons["kv_bytes_basis.bytes_per_token"])
    )
    # what the form answered is drafted as with a known model
    assert data["methodology"]["source"]["locator"] == 'The "Results" paragraph'
    assert [run["id"] for run in data["runs"]] == ["cold", "warm"]
    done = run_cli("validate", str(path.relative_to(dataset)), cwd=dataset)
    model_line = next(line for line in done.stdout.splitlines() if " KV101 model:" in line)
    assert "is still a placeholder: write the value it asks for" in model_line
    assert " KV206 " in done.stdout


def test_unreadable_files_are_refused_with_their_name(dataset: Path) -> None:
    bad = dataset / "issue.md"
    bad.write_bytes(b"### Model\n\n\xff\xfe\n")
    result = run_cli("new", "--from-issue", str(bad), cwd=dataset)
    assert result.returncode == 2 and "not UTF-8" in result.stderr
    result = run_cli("new", "--from-issue", str(dataset / "missing.md"), cwd=dataset)
    assert result.returncode == 2 and "missing.md: cannot be read" in result.stderr
    result = run_cli("new", cwd=dataset)
    assert result.returncode == 2 and "--from-issue FILE" in result.stderr


RUNS_TABLE = """| run | role | context | TTFT (s) | hit rate (%) | decode mean (tokens/s) |
|---|---|---|---|---|---|
| prefix not cached | baseline | 150,000 | 53.2 | | |
| prefix cached | treatment | 150,000 | 2.3 | 93.5 | ~41 |

Measured once each."""


def test_a_runs_table_becomes_runs_and_metrics(dataset: Path) -> None:
    answers = parse_issue_body(with_answer(APC_BODY.read_text(), "Runs and figures", RUNS_TABLE))
    data = data_of(scaffold_from_issue(dataset, answers, {})[1])
    cold, warm = data["runs"]
    assert (cold["id"], cold["label"], cold["role"]) == (
        "prefix-not-cached",
        "prefix not cached",
        "baseline",
    )
    assert cold["context_tokens"] == 150000
    # 53.2 s in a column headed (s) is 53,200 ms; 2.3 s is 2,300 ms; 93.5 % is 0.935
    assert cold["metrics"] == [{"name": "ttft_ms", "statistic": "single", "value": 53200}]
    assert warm["metrics"] == [
        {"name": "ttft_ms", "statistic": "single", "value": 2300},
        {
            "name": "hit_rate",
            "statistic": "single",
            "value": 0.935,
            "definition": {"counted_in": "not_stated", "window": "not_stated"},
        },
        {"name": "decode_tokens_per_s", "statistic": "mean", "value": {"about": 41}},
    ]
    assert "statistic" in warm["note"] and "definition" in warm["note"]
    assert data["headline_run"] == "prefix-cached"
    assert data["measured_ttft_ms_at_ctx"] == 2300
    assert data["measured_tps_at_ctx"] == {"about": 41}
    assert "The issue's runs answer adds: Measured once each." in data["notes"]
    assert "to check against the runs: Time to first token (ms): 2.3 s" in data["notes"]


def test_a_runs_table_validates_but_for_its_placeholders(dataset: Path) -> None:
    issue = dataset / "issue.md"
    issue.write_text(with_answer(APC_BODY.read_text(), "Runs and figures", RUNS_TABLE))
    assert run_cli("new", "--from-issue", str(issue), cwd=dataset).returncode == 0
    path = dataset / "records/kv-efficiency" / f"{APC_SLUG}.yaml"
    path.write_text(path.read_text().replace("confidence: null", "confidence: 0.6"))
    assert set(codes(dataset, path)) == {"KV206"}


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        # a cell that cannot be read is quoted in its run's note, the others are drafted
        (
            "| run | TTFT (ms) |\n|---|---|\n| only | under a minute |",
            {"note": "ttft_ms 'under a minute' cannot be recorded as it is"},
        ),
        # a column that names no metric is left for the notes
        ("| run | vibes |\n|---|---|\n| only | good |", {"notes": "the column 'vibes' names no"}),
        # a role that is not one of the three
        (
            "| run | role | ttft_ms |\n|---|---|---|\n| a | control | 10 |\n| b | treatment | 5 |",
            {"note": "the role 'control' is baseline, treatment or only"},
        ),
    ],
)
def test_what_a_runs_table_cannot_say_is_a_todo(
    dataset: Path, table: str, expected: dict[str, str]
) -> None:
    answers = parse_issue_body(with_answer(APC_BODY.read_text(), "Runs and figures", table))
    data = data_of(scaffold_from_issue(dataset, answers, {})[1])
    if "note" in expected:
        assert expected["note"] in data["runs"][0]["note"]
    else:
        assert expected["notes"] in data["notes"]


def test_an_approximate_headline_figure_is_written_twice_not_as_an_anchor(dataset: Path) -> None:
    """The card repeats the headline run's ~2300: two values, never one YAML anchor."""
    body = with_answer(APC_BODY.read_text(), "Time to first token (ms)", "~2300")
    body = with_answer(body, "Warm TTFT (ms)", "_No response_")
    data = data_of(scaffold_from_issue(dataset, parse_issue_body(body), {})[1])
    assert data["measured_ttft_ms_at_ctx"] == {"about": 2300}
    assert {"name": "ttft_ms", "statistic": "single", "value": {"about": 2300}} in (
        data["runs"][-1]["metrics"]
    )


@pytest.mark.parametrize(
    ("context", "dtype", "kv_at_context"),
    [
        # qwen3-8-27b, all 16 full-attention layers... counted as the cache holds them:
        # 16 x 4 kv heads x (256 + 256) x 2 B = 65,536 B/token (the 48 linear layers add none)
        ("1", "bf16", "64.00 KiB"),  # 65,536 B = 64 KiB
        ("512", "bf16", "32.00 MiB"),  # 65,536 x 512 = 33,554,432 B = 32 MiB, once 0.03 GiB
        ("1,000", "fp8", "31.25 MiB"),  # 32,768 x 1,000 = 32,768,000 B = 31.25 MiB
        ("150,000", "bf16", "9.16 GiB"),  # 9,830,400,000 B = 9.155 GiB
    ],
)
def test_the_issue_draft_writes_kv_at_context_the_validator_accepts(
    dataset: Path, context: str, dtype: str, kv_at_context: str
) -> None:
    body = with_answer(APC_BODY.read_text(), "Context length (tokens)", context)
    body = with_answer(body, "KV cache dtype", dtype)
    issue = dataset / "issue.md"
    issue.write_text(body, encoding="utf-8")
    done = run_cli("new", "--from-issue", str(issue), cwd=dataset)
    assert done.returncode == 0, done.stderr
    (path,) = (dataset / "records/kv-efficiency").glob("vllm-qwen3-8-27b-rtx-5090-*")
    data = data_of(path.read_text())
    assert data["kv_bytes_basis"]["kv_at_context"] == kv_at_context
    path.write_text(path.read_text().replace("confidence: null", "confidence: 0.6"))
    assert set(codes(dataset, path)) == {"KV206"}


def test_repeated_run_labels_get_unique_ids_in_linear_time() -> None:
    rows = "| same | 1 |\n" * 5000 + "| same-2 | 1 |\n"
    started = time.perf_counter()
    runs = table_runs(f"| run | ttft_ms |\n|---|---|\n{rows}").runs
    assert time.perf_counter() - started < 5
    ids = [run["id"] for run in runs]
    assert len(set(ids)) == len(ids) == 5001
    assert ids[:3] == ["same", "same-2", "same-3"] and ids[-1] == "same-2-2"
