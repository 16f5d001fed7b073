"""The command line explains itself: help for every option, allowed values listed, and a
did-you-mean for every id it is given."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from conftest import run_cli
from kvrecords.cli import app, choices

REPO = Path(__file__).resolve().parents[1]


def _commands(command: click.Command, name: str = "kvrecords") -> list[tuple[str, click.Command]]:
    found = [(name, command)]
    if isinstance(command, click.Group):
        for sub_name, sub in sorted(command.commands.items()):
            found += _commands(sub, f"{name} {sub_name}")
    return found


COMMANDS = _commands(app.cli)


@pytest.mark.parametrize(("name", "command"), COMMANDS, ids=[name for name, _ in COMMANDS])
def test_every_option_has_help_and_lists_its_values(name: str, command: click.Command) -> None:
    assert command.help, name
    shown = CliRunner().invoke(app.cli, [*name.split()[1:], "--help"], terminal_width=400)
    assert shown.exit_code == 0, shown.output
    for option in command.params:
        if not isinstance(option, click.Option) or option.hidden:
            continue
        assert option.help, f"{name} {option.opts[0]} has no help"
        if isinstance(option.type, click.Choice):
            for value in option.type.choices:
                assert str(value) in shown.output, f"{name} {option.opts[0]}: {value}"


def test_new_offers_the_techniques_the_record_schema_allows() -> None:
    schema = json.loads((REPO / "schema" / "record.schema.json").read_text(encoding="utf-8"))
    allowed = schema["properties"]["techniques"]["items"]["enum"]
    assert list(choices.TECHNIQUES) == allowed


def test_kv_suggests_the_model_meant(dataset: Path) -> None:
    done = run_cli("kv", "qwen3-8-72b", cwd=dataset)
    assert done.returncode == 2
    assert done.stderr == (
        "kvrecords: model 'qwen3-8-72b': models/qwen3-8-72b.yaml does not exist; "
        "did you mean qwen3-8-27b, qwen3-8b, qwen3-32b?\n"
    )


def test_explain_suggests_the_record_meant(dataset: Path) -> None:
    done = run_cli("explain", "records/kv-efficiency/vllm-qwen38-27b-apc-150k.yaml", cwd=dataset)
    assert done.returncode == 2
    assert done.stderr.startswith(
        "kvrecords: no record file records/kv-efficiency/vllm-qwen38-27b-apc-150k.yaml; "
        "did you mean records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml"
    )


@pytest.mark.parametrize(
    ("options", "hint"),
    [
        (["--model", "qwen3-8-72b"], "did you mean qwen3-8-27b"),
        (["--model", "qwen3-8-27b", "--accelerator", "rtx-5900"], "did you mean rtx-5090"),
    ],
)
def test_new_suggests_the_id_meant(dataset: Path, options: list[str], hint: str) -> None:
    done = run_cli("new", "--slug", "a-new-record", "--engine", "vllm", *options, cwd=dataset)
    assert done.returncode == 2
    assert hint in done.stderr
    assert not (dataset / "records" / "kv-efficiency" / "a-new-record.yaml").exists()


def test_new_never_assumes_an_engine(dataset: Path) -> None:
    """Without --engine, new names what is missing and writes nothing (it once wrote vllm)."""
    done = run_cli("new", "--slug", "a-new-record", "--model", "qwen3-8-27b", cwd=dataset)
    assert done.returncode == 2
    assert (
        done.stderr == "kvrecords: give --engine (or --from-issue FILE, or --from-bench FILE...)\n"
    )
    assert not (dataset / "records" / "kv-efficiency" / "a-new-record.yaml").exists()
    done = run_cli("new", cwd=dataset)
    assert "give --slug, --model and --engine" in done.stderr
    done = run_cli(
        "new", "--slug", "a-new-record", "--model", "qwen3-8-27b", "--engine", "sglang", cwd=dataset
    )
    assert done.returncode == 0, done.stderr
    written = (dataset / "records" / "kv-efficiency" / "a-new-record.yaml").read_text()
    assert "  engine:\n    name: sglang\n" in written
