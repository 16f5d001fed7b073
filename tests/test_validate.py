"""The validator end to end: the seed, dependencies, messages, formats and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli
from kvrecords.kv.metrics import nearest_metric
from kvrecords.runner.validate import validate

SEED = Path("records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml")
MODEL = Path("models/qwen3-8-27b.yaml")


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def position(path: Path, text: str) -> tuple[int, int]:
    """1-based line and column where ``text`` starts in the file (a value's position)."""
    content = path.read_text(encoding="utf-8")
    offset = content.index(text)
    line_start = content.rfind("\n", 0, offset) + 1
    return content.count("\n", 0, offset) + 1, offset - line_start + 1


def test_model_change_fails_the_seed_through_the_model_path_alone(dataset: Path) -> None:
    edit(dataset / MODEL, "kv_heads: 4", "kv_heads: 8")
    result = run_cli("validate", str(MODEL), cwd=dataset)
    assert result.returncode == 1
    # 16 layers x 8 kv heads x (256 + 256) x 2 B = 131,072 B/token
    line, column = position(dataset / SEED, "65536\n")
    assert (
        f"{SEED.as_posix()}:{line}:{column}: KV301 bytes_per_token is 65,536; models/qwen3-8-27b gives "
        "16 layers x 8 kv heads x (256 + 256) x 2 B = 131,072 B/token"
    ) in result.stdout


def test_changed_gib_figure_fails(dataset: Path) -> None:
    edit(dataset / SEED, "kv_at_context: 9.16 GiB", "kv_at_context: 9.17 GiB")
    problems = validate(dataset, [dataset / SEED]).problems
    assert [(p.code, p.line) for p in problems] == [
        ("KV302", position(dataset / SEED, "9.17 GiB")[0])
    ]
    assert "9,830,400,000 B = 9.16 GiB (65,536 B/token x 150,000 tokens)" in problems[0].message


def test_changed_prose_figure_fails_at_its_own_line(dataset: Path) -> None:
    edit(dataset / SEED, "= 8.56 GiB", "= 8.65 GiB")
    problems = validate(dataset, [dataset / SEED]).problems
    assert [(p.code, p.line) for p in problems] == [
        ("KV501", position(dataset / SEED, "0.935 x")[0])
    ]
    assert problems[0].message == (
        "prose claims 0.935 x 150,000 x 65,536 = 8.65 GiB; it is 8.56 GiB (9,191,424,000 B)"
    )


def test_seed_prose_claims_are_all_checked(dataset: Path) -> None:
    # each of the seed's three claims, broken one at a time, is reported
    for old, new in [
        ("= 65,536 B/token", "= 65,532 B/token"),
        ("= 9.16 GiB", "= 9.15 GiB"),
        ("= 8.56 GiB", "= 8.57 GiB"),
    ]:
        edit(dataset / SEED, old, new)
        assert [p.code for p in validate(dataset, [dataset / SEED]).problems] == ["KV501"]
        edit(dataset / SEED, new, old)


def test_deleted_model_still_linked(dataset: Path) -> None:
    (dataset / MODEL).unlink()
    result = run_cli("validate", str(MODEL), cwd=dataset)
    assert result.returncode == 1
    assert "KV203 model 'qwen3-8-27b': models/qwen3-8-27b.yaml does not exist" in result.stdout


def test_schema_failure_skips_arithmetic_but_others_run(dataset: Path) -> None:
    broken = dataset / "records/kv-efficiency/broken.yaml"
    text = (dataset / SEED).read_text().replace("vllm-qwen38-27b-apc-150k-rtx5090", "broken")
    broken.write_text(
        text.replace("confidence: 0.62", "confidence: high").replace("stated: 23x", "stated: 99x")
    )
    edit(dataset / SEED, "stated: 23x", "stated: 24x")
    codes = {(p.path, p.code) for p in validate(dataset).problems}
    assert codes == {
        ("records/kv-efficiency/broken.yaml", "KV101"),
        (SEED.as_posix(), "KV402"),
    }


def test_every_schema_error_is_reported_with_its_position(dataset: Path) -> None:
    edit(dataset / SEED, "confidence: 0.62", "confidence: 1.5")
    edit(dataset / SEED, "    count: 1\n    host: hermes", "    count: one\n    host: hermes")
    problems = validate(dataset, [dataset / SEED]).problems
    assert [(p.code, p.line, p.column) for p in problems] == [
        ("KV101", *position(dataset / SEED, "one\n")),
        ("KV101", *position(dataset / SEED, "1.5\n")),
    ]
    assert problems[1].message.startswith("confidence: 1.5 is greater than the maximum of 1")


def test_separator_hint(dataset: Path) -> None:
    edit(dataset / SEED, "bytes_per_token: 65536", "bytes_per_token: 65,536")
    (problem,) = validate(dataset, [dataset / SEED]).problems
    assert problem.code == "KV101"
    assert (problem.line, problem.column) == position(dataset / SEED, "65,536\n")
    assert "write 65536 without thousands separators" in problem.message


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "context_tokens: 150000",
            "context_tokens: '150000'",
            "kv_bytes_basis.context_tokens: '150000' is a string: write the number 150000",
        ),
        (
            "value: 53200",
            'value: "53200"',
            "runs[0].metrics[0].value: '53200' is a string: write the number 53200",
        ),
        (
            "measured_tps_at_ctx: null",
            "measured_tps_at_ctx: '1_000'",
            "measured_tps_at_ctx: '1_000' is a string: write the number in decimal digits only",
        ),
        (
            "measured_tps_at_ctx: null",
            "measured_tps_at_ctx: -3",
            "measured_tps_at_ctx: -3 is less than or equal to the minimum of 0",
        ),
        (
            "measured_tps_at_ctx: null",
            "measured_tps_at_ctx: yes",
            "measured_tps_at_ctx: 'yes' is not of type 'number', 'object', 'null'",
        ),
        (
            "measured_ttft_ms_at_ctx: 2300",
            "measured_ttft_ms_at_ctx: true",
            "measured_ttft_ms_at_ctx: true is not of type 'number', 'object', 'null' (a boolean",
        ),
        (
            "stated: 23x",
            "stated: 23X",
            "a ratio is written with a lower-case x: 23x",
        ),
        (
            "    - basis: 0\n",
            "    - basis: first\n",
            "kv_bytes_basis.fit_claims[1].basis: 'first' is not 'main' or of type 'integer'",
        ),
    ],
)
def test_a_field_that_takes_a_number_or_null_names_the_branch_the_value_was_meant_for(
    dataset: Path, old: str, new: str, message: str
) -> None:
    edit(dataset / SEED, old, new)
    (problem,) = validate(dataset, [dataset / SEED]).problems
    assert problem.code == "KV101"
    line, column = position(dataset / SEED, new)
    value = new.rsplit(": ", 1)[1]  # the value, or the innermost one in a flow mapping
    assert (problem.line, problem.column) == (line, column + new.rindex(value))
    assert message in problem.message, problem.message
    assert "is not of type 'null'" not in problem.message


SPECULATIVE = Path("records/kv-efficiency/llamacpp-qwen38-27b-q4-rtx3090-128k.yaml")


@pytest.mark.parametrize(
    ("path", "old", "new", "message"),
    [
        (SEED, "  dtype: bf16\n", "  dtype: BFloat16\n", "'BFloat16' is written bf16 here"),
        (SEED, "  dtype: bf16\n", "  dtype: FP8\n", "'FP8' is written fp8 here"),
        (
            SEED,
            "  dtype: bf16\n",
            "  dtype: float8_e4m3fn\n",
            "'float8_e4m3fn' is written fp8_e4m3 here",
        ),
        (SEED, "  dtype: bf16\n", "  dtype: Q8_0\n", "'Q8_0' is written q8_0 here"),
        (
            SEED,
            "  dtype: bf16\n",
            "  dtype: fp6\n",
            "'fp6' is not a KV dtype (did you mean fp16 or fp8?); the names: bf16, fp16, fp32,",
        ),
        (
            SEED,
            "  dtype: bf16\n",
            "  dtype: auto\n",
            "'auto' is the engine's choice, not a dtype: write the dtype it resolves to",
        ),
        (SPECULATIVE, "method: mtp", "method: Multi-Token Prediction", "(write mtp)"),
        (SPECULATIVE, "method: mtp", "method: EAGLE-3", "(write eagle3)"),
        (SPECULATIVE, "method: mtp", "method: prompt lookup", "(write ngram)"),
        (SPECULATIVE, "method: mtp", "method: medussa", "(did you mean medusa?)"),
    ],
)
def test_a_value_outside_a_closed_vocabulary_names_the_value_it_is_written_as(
    dataset: Path, path: Path, old: str, new: str, message: str
) -> None:
    edit(dataset / path, old, new)
    (problem,) = validate(dataset, [dataset / path]).problems
    assert problem.code == "KV101"
    line, column = position(dataset / path, new)
    assert (problem.line, problem.column) == (line, column + new.index(": ") + 2)
    assert message in problem.message, problem.message


@pytest.mark.parametrize(
    ("metric", "needs"),
    [
        ("kv_bytes_reported", "scope"),
        ("accuracy", "benchmark"),
        ("slo_attainment", "note"),
        ("goodput_requests_per_s", "note"),
        ("memory_in_use_bytes", "note"),
    ],
)
def test_a_metric_without_what_it_needs_says_what_to_add(
    dataset: Path, metric: str, needs: str
) -> None:
    added = f"      - name: {metric}\n        statistic: single\n        value: 0.5\n"
    edit(dataset / SEED, "      - name: hit_rate\n", added + "      - name: hit_rate\n")
    problems = validate(dataset, [dataset / SEED]).problems
    assert [p.code for p in problems] == ["KV802"]
    (problem,) = problems
    line, column = position(dataset / SEED, f"name: {metric}")
    assert (problem.line, problem.column) == (line, column + len("name: "))
    assert problem.message.startswith(f"{metric} needs {needs}: ")
    edit(dataset / SEED, added, added + f"        {needs}: {_NEED_VALUES[needs]}\n")
    assert validate(dataset, [dataset / SEED]).problems == []


def test_two_readings_of_one_metric_in_a_run_are_told_apart_by_what_they_need(
    dataset: Path,
) -> None:
    """Memory in use at two points of a run: the notes say when, so both stand; the same
    note twice is one figure given twice."""
    reading = (
        "      - name: memory_in_use_bytes\n        statistic: single\n        value: {value}\n"
        "        note: {note}\n"
    )
    first = reading.format(value="10 GiB", note="after the first request")
    second = reading.format(value="12 GiB", note="after the last request")
    edit(dataset / SEED, "      - name: hit_rate\n", first + second + "      - name: hit_rate\n")
    assert validate(dataset, [dataset / SEED]).problems == []
    edit(dataset / SEED, "after the last request", "after the first request")
    (problem,) = validate(dataset, [dataset / SEED]).problems
    assert problem.code == "KV802"
    assert "memory_in_use_bytes (single) is given twice in run 'warm'" in problem.message


_NEED_VALUES = {
    "scope": "pool",
    "benchmark": "GSM8K",
    "note": "the objective is a TTFT under 2 s",
}


@pytest.mark.parametrize(
    ("new", "message"),
    [
        ("value: 93.5", "hit_rate is 93.5, above 1: it is a fraction, write 0.935"),
        ("value: {about: 43}", "hit_rate is 43, above 1: it is a fraction, write 0.43"),
    ],
)
def test_a_percentage_given_as_a_hit_rate_says_to_write_the_fraction(
    dataset: Path, new: str, message: str
) -> None:
    edit(dataset / SEED, "value: 0.935", new)
    (problem,) = validate(dataset, [dataset / SEED]).problems
    assert problem.code == "KV802"
    line, column = position(dataset / SEED, new)
    number = new.rstrip("}").rsplit(" ", 1)[1]
    assert (problem.line, problem.column) == (line, column + new.index(number))
    assert problem.message == message


@pytest.mark.parametrize(
    ("new", "message"),
    [
        (
            "speculative_decoding: {method: eagle, acceptance_rate: 72.5}",
            "72.5 is above 1: rates are fractions, write 0.725",
        ),
    ],
)
def test_a_rate_in_the_schema_written_as_a_percentage_says_to_write_the_fraction(
    dataset: Path, new: str, message: str
) -> None:
    # the run's settings come before its metrics: put drafting on the warm run
    edit(dataset / SEED, "  - id: warm\n", f"  - id: warm\n    {new}\n")
    (problem,) = validate(dataset, [dataset / SEED]).problems
    assert problem.code == "KV101"
    line, column = position(dataset / SEED, new)
    number = new.rstrip("}").rsplit(" ", 1)[1]
    assert (problem.line, problem.column) == (line, column + new.index(number))
    assert problem.message == f"runs[1].speculative_decoding.acceptance_rate: {message}"


def test_an_acceptance_length_is_a_metric_of_its_own(dataset: Path) -> None:
    # tokens per verification step (P-EAGLE's "AL 3.02" at 3 drafted tokens), not a fraction
    edit(
        dataset / SEED,
        "      - name: hit_rate\n",
        "      - {name: acceptance_length, statistic: mean, value: 3.02, stated_as: AL 3.02}\n"
        "      - name: hit_rate\n",
    )
    assert validate(dataset, [dataset / SEED]).problems == []
    assert nearest_metric("mean_acceptance_length") == "acceptance_length"


FORMAT_1 = Path(__file__).parent / "migration" / "format-1-seed.yaml"


@pytest.mark.parametrize("marker", ["results:", "format: 1"])
def test_a_format_1_record_is_told_to_migrate_not_given_every_schema_error(
    dataset: Path, marker: str
) -> None:
    text = FORMAT_1.read_text(encoding="utf-8")
    if marker == "format: 1":
        text = text.replace("\nid: ", "\nformat: 1\nid: ", 1)
    (dataset / SEED).write_text(text, encoding="utf-8")
    result = run_cli("validate", SEED.as_posix(), cwd=dataset)
    assert result.returncode == 1 and not result.stderr
    line, column = position(dataset / SEED, marker)
    column += len("format: ") if marker == "format: 1" else 0  # at the 1, else the results key
    assert result.stdout.splitlines() == [
        f"{SEED.as_posix()}:{line}:{column}: KV101 this record is in format 1 (results and "
        "observations), which is no longer read: rewrite it as format 2 with `kvrecords migrate "
        f"{SEED.as_posix()}`, then check its runs against the source",
        "1 file checked: 1 error, 0 warnings in 1 file",
    ]


def test_output_is_sorted_and_deterministic(dataset: Path) -> None:
    edit(dataset / SEED, "stated: 23x", "stated: 24x")
    edit(dataset / SEED, "bytes_per_token: 65536", "bytes_per_token: 65537")
    first = run_cli("validate", cwd=dataset).stdout
    assert first == run_cli("validate", cwd=dataset).stdout
    lines = first.splitlines()[:-1]
    assert lines == sorted(lines, key=lambda line: int(line.split(":")[1]))


def test_json_and_github_formats(dataset: Path) -> None:
    edit(dataset / SEED, "stated: 23x", "stated: 24x")
    report = json.loads(run_cli("validate", "--format", "json", cwd=dataset).stdout)
    assert report["errors"] == 1
    assert report["problems"][0] == {
        "path": SEED.as_posix(),
        "line": position(dataset / SEED, "24x")[0],
        "column": position(dataset / SEED, "24x")[1],
        "code": "KV402",
        "severity": "error",
        # 24 is 0.87 units of its last digit from 23.1304: it may be the source's own slip
        "message": "speedup is 24x; 53,200 / 2,300 = 23.1304x; if the source itself wrote 24x "
        "from these figures, keep it and flag it with source_arithmetic (docs/conventions.md)",
    }
    github = run_cli("validate", cwd=dataset, env={"GITHUB_ACTIONS": "true"})
    line, column = position(dataset / SEED, "24x")
    assert github.returncode == 1
    # commas and colons are escaped only in the properties, not in the message
    assert github.stdout.startswith(
        f"::error file={SEED.as_posix()},line={line},col={column},title=KV402::KV402 speedup is 24x; 53,200 / 2,300 = 23.1304x"
    )


def test_exit_codes(dataset: Path, tmp_path: Path) -> None:
    assert run_cli("validate", cwd=dataset).returncode == 0
    missing = run_cli("validate", "records/kv-efficiency/nope.yaml", cwd=dataset)
    assert missing.returncode == 2 and "no such file" in missing.stderr
    outside = run_cli("validate", cwd=tmp_path)
    assert outside.returncode == 2 and "not inside a dataset" in outside.stderr
    assert run_cli("validate", "--format", "xml", cwd=dataset).returncode == 2


def test_runs_from_any_folder_inside_the_dataset(dataset: Path) -> None:
    result = run_cli("validate", "kv-efficiency", cwd=dataset / "records")
    records = len(list((dataset / "records/kv-efficiency").glob("*.yaml")))
    assert result.returncode == 0
    assert result.stdout.strip() == f"{records} files checked, no problems"


def test_kv_command_json(dataset: Path) -> None:
    result = run_cli(
        "kv", "qwen3-8-27b", "--context", "150000", "--format", "json", cwd=dataset / "records"
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["bytes_per_token"] == 65536
    assert report["kv_bytes_at_context"] == 9830400000
    assert report["fixed_state_bytes"] is None
    assert (report["model"], report["dtype"], report["context_tokens"]) == (
        "qwen3-8-27b",
        "bf16",
        150000,
    )


def test_kv_command_text_shows_each_formula(dataset: Path) -> None:
    result = run_cli("kv", "models/gemma-3-27b.yaml", "--context", "32768", cwd=dataset)
    assert result.returncode == 0, result.stderr
    assert "52 layers x 16 kv heads x (128 + 128) x 2 B = 425,984 B/token" in result.stdout
    assert "holds 1,024 tokens (window)" in result.stdout
    assert "KV bytes at 32,768 tokens: 3,120,562,176 B (2.91 GiB)" in result.stdout


@pytest.mark.parametrize(
    "args",
    [["kv", "no-such-model"], ["kv", "qwen3-8-27b"], ["kv", "llama-3.1-8b", "--dtype", "fp9"]],
)
def test_kv_command_errors(dataset: Path, args: list[str]) -> None:
    result = run_cli(*args, cwd=dataset)
    assert result.returncode == 2
    assert result.stderr.startswith("kvrecords: ") and "Traceback" not in result.stderr


def test_hardware_change_rechecks_the_records_that_name_it(dataset: Path) -> None:
    edit(dataset / "hardware/rtx-5090.yaml", "  usable_gib: 31.84", "  usable_gib: 10")
    outcome = validate(dataset, [dataset / "hardware/rtx-5090.yaml"])
    seed = {(p.code, p.severity) for p in outcome.problems if p.path == SEED.as_posix()}
    # likely: 27e9 x 4 bits / 8 = 12.57 GiB + 9.16 GiB KV = 21.73 GiB > 10 GiB; favourable:
    # 26.5e9 x 1.5625 bits / 8 = 4.82 GiB + 4.58 GiB fp8 KV = 9.40 GiB fits: a warning
    assert ("KV701", "warning") in seed
    # the claim that 9.16 GiB of KV fits one card beside the weights cannot hold in 10 GiB:
    # 4.82 GiB + 9.16 GiB = 13.98 GiB at the fewest bits
    assert ("KV704", "error") in seed


def test_a_full_run_checks_every_hardware_file(dataset: Path) -> None:
    edit(dataset / "hardware/a40.yaml", "vendor: NVIDIA", "vendor: NVIDIA\nrumour: true")
    problems = validate(dataset).problems
    assert [(p.path, p.code) for p in problems] == [("hardware/a40.yaml", "KV101")]


def test_explain_command(dataset: Path) -> None:
    result = run_cli("explain", str(SEED), cwd=dataset)
    assert result.returncode == 0, result.stderr
    assert "warm: tokens not recomputed: 0.935 x 150,000 = 140,250 (stated 140250)" in result.stdout
    assert "speedup of ttft_ms (single), cold -> warm: 53,200 / 2,300 = 23.1304x (stated 23x)" in (
        result.stdout
    )
    assert "KV704 fit claim [1] (does not fit)" in result.stdout


def test_worker_processes_report_what_one_process_reports(dataset: Path) -> None:
    edit(dataset / SEED, "stated: 23x", "stated: 24x")
    for index in range(6):
        text = (
            (dataset / SEED)
            .read_text()
            .replace("vllm-qwen38-27b-apc-150k-rtx5090", f"copy-{index}")
        )
        (dataset / f"records/kv-efficiency/copy-{index}.yaml").write_text(text)
    alone = validate(dataset, jobs=1)
    together = validate(dataset, jobs=2)
    assert together == alone
    assert sum(p.code == "KV402" for p in together.problems) == 7


def test_ids_that_differ_only_in_case_clash_in_a_one_file_run(dataset: Path) -> None:
    # Seed.yaml and seed.yaml are one file on macOS and Windows checkouts.
    twin = dataset / SEED.with_name("VLLM-qwen38-27b-apc-150k-rtx5090.yaml")
    twin.write_text((dataset / SEED).read_text())
    for changed, other in (
        (twin, SEED.as_posix()),
        (dataset / SEED, "records/kv-efficiency/VLLM-"),
    ):
        problems = validate(dataset, [changed]).problems
        clashes = [p.message for p in problems if p.code == "KV202"]
        assert len(clashes) == 1 and other in clashes[0], clashes


def test_model_files_with_one_id_in_two_suffixes_clash(dataset: Path) -> None:
    (dataset / "models/qwen3-8-27b.yml").write_text((dataset / MODEL).read_text())
    problems = validate(dataset).problems
    assert ("KV202", "models/qwen3-8-27b.yml") in {(p.code, p.path) for p in problems}


def test_a_changed_record_is_checked_without_listing_every_record(
    dataset: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kvrecords.runner.validate

    listed: list[str] = []
    discover = kvrecords.runner.validate.discover

    def recording(root: Path, kind: str) -> object:
        listed.append(kind)
        return discover(root, kind)

    monkeypatch.setattr(kvrecords.runner.validate, "discover", recording)
    edit(dataset / SEED, "stated: 23x", "stated: 24x")
    problems = validate(dataset, [dataset / SEED]).problems
    assert [p.code for p in problems] == ["KV402"]
    assert "record" not in listed
    listed.clear()
    validate(dataset, [dataset / MODEL])  # a model change re-checks the records naming it
    assert "record" in listed


def test_pre_commits_call_skips_click_and_answers_as_the_full_command_line(dataset: Path) -> None:
    edit(dataset / SEED, "stated: 23x", "stated: 24x")
    for paths, code in (([str(SEED)], 1), ([], 1), (["records/kv-efficiency/gone.yaml"], 2)):
        fast = run_cli("validate", *paths, cwd=dataset)
        through_click = run_cli("validate", "--format", "text", *paths, cwd=dataset)
        assert fast.returncode == through_click.returncode == code
        assert (fast.stdout, fast.stderr) == (through_click.stdout, through_click.stderr)
    # whether click was loaded, printed after the report
    probe = (
        "import sys\nfrom kvrecords.cli.main import main\n"
        "code = main()\nprint('click' in sys.modules)\nsys.exit(code)"
    )
    for options, click_loaded in (([], "False"), (["--strict"], "True")):
        result = subprocess.run(
            [sys.executable, "-c", probe, "validate", *options, str(SEED)],
            cwd=dataset,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert "KV402" in result.stdout
        assert result.stdout.splitlines()[-1] == click_loaded
