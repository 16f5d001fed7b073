"""The commands on one record: new (a scaffold), explain (its recomputation) and review (what
a change does to the records)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from kvrecords.cli.bench_options import BenchOptions, bench_options, new_from_bench
from kvrecords.cli.choices import (
    TECHNIQUES,
    dtype_option,
    format_option,
    layers_option,
    whole_number_option,
)
from kvrecords.cli.common import dataset_root, fail, inside_dataset


@click.command()
@click.option("--slug", help="The record's slug: records/kv-efficiency/<slug>.yaml.")
@click.option("--model", "model_id", help="Model id from models/.")
@dtype_option("KV element type (bf16, fp8, int2-g32, nvfp4, ...), as for kvrecords kv.")
@click.option(
    "--dtype-stated/--dtype-assumed",
    default=False,
    show_default=True,
    help="Whether the source states the KV dtype.",
)
@whole_number_option("--context", "context_tokens", help="Context length in tokens.")
@layers_option(
    "Which layers the basis counts: cache (every layer as the model is, windows capped), "
    "full_attention (only full-attention layers) or all_layers_as_full_attention (the "
    "counterfactual where every layer is full attention)."
)
@click.option("--source-url", help="URL of the source.")
@click.option("--locator", help="Where in the source the figures are: a section, table or figure.")
@click.option(
    "--publisher", default="TODO: who published the source", help="Who published the source."
)
@click.option(
    "--technique",
    "techniques",
    multiple=True,
    type=click.Choice(TECHNIQUES),
    help="A technique the record measures (repeatable); baseline when none is given.",
)
@click.option("--accelerator", help="Hardware id from hardware/.")
@whole_number_option("--count", help="Number of accelerators.")
@click.option(
    "--engine",
    help="Engine name, lowercase (vllm, sglang, tensorrt-llm, llama.cpp, ...); required: the "
    "plausibility checks and plan's evidence read each record by its engine, so none is assumed.",
)
@click.option("--engine-version", help="Engine version as stated.")
@click.option(
    "--from-issue",
    "issue_body",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Draft the record from the body of an issue opened with the 'Submit a measurement' "
    "form (.github/ISSUE_TEMPLATE/record.yml), saved to a file; options given beside it win "
    "over the issue's answers.",
)
@bench_options
def new(issue_body: Path | None, **options: Any) -> None:
    """Scaffold a record with its KV arithmetic already computed from the model.

    Measured fields are null and listed under not_stated with a TODO reason; fill them from
    the source. With --from-issue, the issue's answers fill what they can, and an answer that
    cannot be recorded as written is quoted in a TODO. With --from-bench, a benchmark's result
    files give the runs with every figure they hold, for the model they name. Never overwrites
    an existing file.
    """
    from kvrecords.tools.scaffold import scaffold_record, write_scaffold

    root = dataset_root()
    bench = BenchOptions.take(options)
    if bench.files:
        if issue_body is not None:
            fail("give --from-bench or --from-issue, not both")
        _new_from_bench(root, bench)
        return
    if issue_body is not None:
        _new_from_issue(root, issue_body)
        return
    missing = [option for name, option in _REQUIRED.items() if options[name] is None]
    if missing:
        fail(f"give {_listed(missing)} (or --from-issue FILE, or --from-bench FILE...)")
    slug = options["slug"]
    options["techniques"] = list(options["techniques"]) or ["baseline"]
    try:
        text = scaffold_record(root, **options)
        path = write_scaffold(root, slug, text)
    except (ValueError, FileExistsError) as error:
        fail(str(error))
    _wrote_scaffold(root, path)


# What new needs from the command line when no issue or benchmark gives it, by parameter name.
_REQUIRED = {"slug": "--slug", "model_id": "--model", "engine": "--engine"}


def _listed(options: list[str]) -> str:
    return options[0] if len(options) == 1 else f"{', '.join(options[:-1])} and {options[-1]}"


def _new_from_bench(root: Path, bench: BenchOptions) -> None:
    new_from_bench(root, bench, _given_options())


def _given_options() -> dict[str, Any]:
    """new's options as the command line gave them (not their defaults), by ScaffoldInputs' names."""
    from click.core import ParameterSource

    context = click.get_current_context()
    return {
        _SCAFFOLD_FIELDS.get(option, option): value
        for option, value in context.params.items()
        if context.get_parameter_source(option) == ParameterSource.COMMANDLINE
    }


def _wrote_scaffold(root: Path, path: Path) -> None:
    shown = path.relative_to(root).as_posix()
    click.echo(f"wrote {shown}")
    click.echo(
        f"fill the TODOs and nulls from the source, then: kvrecords fmt {shown} && kvrecords validate {shown}"
    )


# new's options that ScaffoldInputs names otherwise (scaffold_record takes them as given)
_SCAFFOLD_FIELDS = {"count": "accelerator_count"}


def _new_from_issue(root: Path, issue_body: Path) -> None:
    from click.core import ParameterSource

    from kvrecords.tools.issue_form import IssueFormError, read_issue_body
    from kvrecords.tools.issue_scaffold import scaffold_from_issue
    from kvrecords.tools.scaffold import write_scaffold

    context = click.get_current_context()
    overrides = {
        _SCAFFOLD_FIELDS.get(option, option): value
        for option, value in context.params.items()
        if option != "issue_body"
        and context.get_parameter_source(option) == ParameterSource.COMMANDLINE
    }
    if "techniques" in overrides:
        overrides["techniques"] = list(overrides["techniques"])
    try:
        answers = read_issue_body(issue_body)
        slug, text = scaffold_from_issue(root, answers, overrides)
        path = write_scaffold(root, slug, text)
    except IssueFormError as error:
        fail(str(error))
    except (ValueError, FileExistsError) as error:
        fail(f"{issue_body}: {error}")
    _wrote_scaffold(root, path)


@click.command()
@click.argument("record", type=click.Path(dir_okay=False, path_type=Path))
def explain(record: Path) -> None:
    """Every number the validator derives for RECORD (a record file), its inputs and each
    check's margin."""
    from kvrecords.tools.explain import explain_record

    root = dataset_root()
    if not record.is_file():
        fail(f"no record file {record}{_close_records(root, record)}")
    click.echo(explain_record(root, inside_dataset(root, record)))


def _close_records(root: Path, record: Path) -> str:
    """``; did you mean records/kv-efficiency/<slug>.yaml?`` for a record path that is wrong."""
    from kvrecords.dataset.layout import RECORDS_DIR
    from kvrecords.problems import did_you_mean

    folder = root / RECORDS_DIR / "kv-efficiency"
    paths = {path.stem: os.path.relpath(path) for path in folder.glob("*.yaml")}
    return did_you_mean(record.stem, paths)


@click.command()
@click.option(
    "--base",
    "base_ref",
    required=True,
    help="The git revision to compare with (a branch, tag or commit; never checked out).",
)
@click.option(
    "--head",
    "head_ref",
    help="Compare this revision with BASE instead of the working tree (two releases: "
    "--base data-2026.12.0 --head data-2027.1.0); read through git too.",
)
@format_option(
    ("markdown", "json"), "markdown for a pull request comment or job summary; json for tools."
)
def review(base_ref: str, head_ref: str | None, output_format: str) -> None:
    """What the working tree (or --head) changes in the dataset since BASE, for reviewers
    and release notes.

    Records added, changed (field by field) and removed, each with the validator's
    recomputation; for a changed model or hardware file, every record linking it whose
    derived figures move, old and new. Revisions are read through git, never checked out.
    """
    from kvrecords.tools.review import review as compare_with
    from kvrecords.tools.review_report import to_json, to_markdown
    from kvrecords.tools.revision import RevisionError

    try:
        found = compare_with(dataset_root(), base_ref, head_ref)
    except RevisionError as error:
        fail(str(error))
    click.echo((to_json if output_format == "json" else to_markdown)(found), nl=False)
