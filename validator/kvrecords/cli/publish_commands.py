"""The commands that publish the dataset or add to it from outside: export, site build and
model import-hf."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kvrecords.cli.choices import HF_MODEL_TYPES
from kvrecords.cli.common import clean_root, dataset_root, fail
from kvrecords.runner.reporters import counted


@click.command()
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["csv", "json", "jsonl", "markdown", "parquet", "datapackage", "llm-d"]),
    default="csv",
    show_default=True,
    help="parquet: a typed Parquet file (needs pyarrow: pip install "
    "'kv-efficiency-records[parquet]'). datapackage: a folder with the CSV tables and their "
    "datapackage.json (Frictionless Data). llm-d: a folder of llm-d benchmark reports "
    "(version 0.2), one per run.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path),
    help="Write to a file (a folder for datapackage) instead of standard output.",
)
@click.option(
    "--metrics",
    is_flag=True,
    help="One row per record x run x metric (and per comparison between runs) instead of one "
    "per record; not with --format markdown.",
)
@click.option(
    "--record",
    "record_ids",
    multiple=True,
    metavar="ID",
    help="With --format llm-d: only this record's runs (repeatable; kv-efficiency/<slug>).",
)
def export(
    output_format: str, output: Path | None, metrics: bool, record_ids: tuple[str, ...]
) -> None:
    """The dataset, one row per record: measured figures, recomputed KV figures, model,
    hardware, engine, technique, source and confidence; with --metrics, one row per measured
    figure with its run's configuration. Every row carries the dataset version.

    Refused (exit 1) while the dataset has errors: run kvrecords validate.
    """
    from kvrecords.tools.export import METRIC_COLUMN_NAMES, RENDERERS, metric_rows, rows, to_csv

    if output_format in ("parquet", "datapackage"):
        _export_files(output_format, output, metrics)
        return
    if output_format == "llm-d":
        _export_llm_d(output, list(record_ids))
        return
    if record_ids:
        fail("--record selects records for --format llm-d only")
    if metrics and output_format == "markdown":
        fail("--metrics writes csv, json, jsonl, parquet or datapackage, not markdown")
    root = clean_root()
    table = metric_rows(root) if metrics else rows(root)
    if metrics and output_format == "csv":
        text = to_csv(table, METRIC_COLUMN_NAMES)
    else:
        text = RENDERERS[output_format](table)
    if output is None:
        click.echo(text, nl=False)
    else:
        from kvrecords.dataset.atomic import write_atomically

        try:
            write_atomically(output, text)
        except OSError as error:
            fail(f"{output}: {error.strerror or error}")
        noun = "figure" if metrics else "record"
        click.echo(f"wrote {counted(len(table), noun)} to {output}", err=True)


def _export_files(output_format: str, output: Path | None, metrics: bool) -> None:
    """The typed outputs: a Parquet file (the record or the metric table), or a data package
    folder (both tables)."""
    from kvrecords.tools.export import metric_table, record_table
    from kvrecords.tools.tables import (
        MissingDependency,
        require_pyarrow,
        write_datapackage,
        write_parquet,
    )

    if output is None:
        where = "FILE" if output_format == "parquet" else "FOLDER"
        fail(f"--format {output_format} writes files: give --output {where}")
    try:
        if output_format == "parquet":
            require_pyarrow()  # before the dataset is read
        root = clean_root()
        if output_format == "parquet":
            table = metric_table(root) if metrics else record_table(root)
            write_parquet(table, output)
            noun = "figure" if metrics else "record"
            click.echo(f"wrote {counted(len(table.rows), noun)} to {output}", err=True)
        else:
            written = write_datapackage([record_table(root), metric_table(root)], output)
            click.echo(f"wrote {', '.join(str(path) for path in written)}", err=True)
    except MissingDependency as error:
        fail(str(error))
    except OSError as error:
        fail(f"{output}: {error.strerror or error}")


def _export_llm_d(output: Path | None, record_ids: list[str]) -> None:
    """One llm-d benchmark report (v0.2) per run, in a folder; what a report cannot hold is
    listed on standard error."""
    from kvrecords.dataset.atomic import write_atomically
    from kvrecords.tools.export_llm_d import reports, to_yaml

    if output is None:
        fail("--format llm-d writes a report per run: give --output FOLDER")
    root = clean_root()
    found = reports(root, record_ids or None)
    missing = sorted(set(record_ids) - {r.report["run"]["eid"] for r in found})
    if missing:
        fail(f"no record {', '.join(missing)} (give ids as kv-efficiency/<slug>)")
    try:
        output.mkdir(parents=True, exist_ok=True)
        for report in found:
            write_atomically(output / report.file_name, to_yaml(report.report))
    except OSError as error:
        fail(f"{output}: {error.strerror or error}")
    for report in found:
        for figure in report.not_exported:
            click.echo(f"{report.file_name}: not exported: {figure}", err=True)
    click.echo(f"wrote {counted(len(found), 'report')} to {output}", err=True)


@click.group()
def site() -> None:
    """The static web site of the dataset."""


@site.command("build")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("site"),
    show_default=True,
    help="Folder to write the site into (created if missing).",
)
def site_build(out: Path) -> None:
    """Write a static site: index.html (sortable, filterable table and overview charts), one
    page per record (with the validator's recomputation), one per model, and one per
    accelerator class ranking what each technique bought on it.

    Refused (exit 1) while the dataset has errors: run kvrecords validate.
    """
    try:
        from kvrecords.tools.site import build_site
    except ImportError as missing:  # Jinja2, markdown-it-py or markupsafe: the site extra
        if missing.name not in ("jinja2", "markdown_it", "markupsafe"):
            raise
        fail(
            f"site build needs {missing.name}, which is not installed: "
            "pip install 'kv-efficiency-records[site]'"
        )
    root = clean_root()
    written = build_site(root, out)
    click.echo(
        f"wrote {counted(len(written), 'file')} to {out}; open {out / 'index.html'}", err=True
    )


MAX_CONFIG_BYTES = 4 * 1024 * 1024  # a Hugging Face config.json is a few KB


@click.group()
def model() -> None:
    """Model geometry files."""


@model.command(
    "import-hf",
    help=(
        "Write models/<ID>.yaml from a Hugging Face config.json, as kvrecords fmt writes it.\n\n"
        "Model types read by their own rules (head_dim, kv heads, windows, layer kinds as "
        f"transformers builds them): {', '.join(HF_MODEL_TYPES)}. A config of any other type "
        "is read through its layer_types (full_attention, sliding_attention) when it also states "
        "num_hidden_layers, sliding_window, num_key_value_heads and head_dim. Otherwise the "
        "error names the missing key; the file can always be written by hand "
        "(schema/model.schema.json, docs/conventions.md). Refuses to overwrite a file."
    ),
)
@click.argument(
    "config_path",
    metavar="CONFIG.json",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
)
@click.option(
    "--id", "model_id", required=True, help="Model id: lowercase letters, digits, dots, hyphens."
)
@click.option("--source-url", help="Where the config was read (kept in the file's source).")
@click.option("--citation", help="What was read, when there is no URL or to say more.")
@click.option(
    "--stdout",
    "to_stdout",
    is_flag=True,
    help="Print the file instead of writing models/<id>.yaml.",
)
def import_hf(
    config_path: Path, model_id: str, source_url: str | None, citation: str | None, to_stdout: bool
) -> None:
    from kvrecords.tools.fmt import load_schema
    from kvrecords.tools.hf_import import model_yaml_from_hf_config

    try:
        if config_path.stat().st_size > MAX_CONFIG_BYTES:
            fail(f"{config_path}: over {MAX_CONFIG_BYTES:,} bytes; a model config is a few KB")
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:  # JSON errors; integers past Python's digit limit
        fail(f"{config_path}: not a readable JSON config: {error}")
    except RecursionError:
        fail(f"{config_path}: not a readable JSON config: nested too deeply")
    if not isinstance(config, dict):
        fail(f"{config_path}: the config must be a JSON object")
    root = dataset_root()
    try:
        text = model_yaml_from_hf_config(
            config,
            model_id,
            load_schema(root, "model"),
            source_url=source_url,
            source_citation=citation,
        )
    except ValueError as error:
        fail(f"{config_path}: {error}")
    if to_stdout:
        click.echo(text, nl=False)
        return
    from kvrecords.dataset.atomic import create_new

    target = root / "models" / f"{model_id}.yaml"
    try:
        create_new(target, text)
    except FileExistsError:
        fail(f"{target} exists; remove it first or choose another id")
    shown = target.relative_to(root).as_posix()
    click.echo(f"wrote {shown}; check it with: kvrecords validate {shown}")
