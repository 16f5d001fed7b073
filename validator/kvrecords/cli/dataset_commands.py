"""The commands on the dataset as a whole: validate, fmt, migrate, docs, and the rules and
metrics vocabularies."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kvrecords.cli.common import clean_root, dataset_root, fail, run_validate
from kvrecords.runner.reporters import counted, problem_line

# runner.reporters.REPORTERS, named here so that --help loads no reporter
FORMATS = ("text", "json", "github")


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--format",
    "output_format",
    type=click.Choice(FORMATS),
    help="Output format; github when GITHUB_ACTIONS=true, else text.",
)
@click.option("--strict", is_flag=True, help="Warnings fail the run too.")
def validate(paths: tuple[Path, ...], output_format: str | None, strict: bool) -> None:
    """Check records and models; recompute every derived number.

    With no PATHS, the whole dataset. With PATHS (as pre-commit passes them), those files and
    every record that depends on them: a changed model re-checks each record linking it.
    """
    sys.exit(run_validate(list(paths), output_format, strict))


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--check", is_flag=True, help="Change nothing; list unformatted files and exit 1 if any."
)
def fmt(paths: tuple[Path, ...], check: bool) -> None:
    """Format records, models and hardware files canonically.

    Key order follows the schema, prose becomes folded blocks, the schema modeline comes first;
    every comment and every value is kept and the write is atomic. With no PATHS, the whole
    dataset; files outside records/, models/ and hardware/ are skipped.
    """
    from kvrecords.dataset.layout import HARDWARE_DIR, MODELS_DIR, RECORDS_DIR
    from kvrecords.tools.fmt import file_kind, first_change, format_files

    root = dataset_root()
    if paths:
        targets = [p for p in paths if file_kind(root, p) is not None]
        missing = [p for p in targets if not (p.exists() or p.is_symlink())]
        if missing:
            fail(f"{missing[0]}: no such file")
    else:
        folders = (RECORDS_DIR, MODELS_DIR, HARDWARE_DIR)
        targets = sorted(p for f in folders for p in (root / f).rglob("*.y*ml") if p.is_file())
    outcomes = format_files(targets, root, check=check)
    for outcome in outcomes:
        for line in outcome.refused:
            click.echo(line)
    changed = [outcome for outcome in outcomes if outcome.changed]
    for outcome in changed:
        why = f": {first_change(outcome.path, root)}" if check else ""
        click.echo(f"{'would reformat' if check else 'formatted'} {outcome.display}{why}")
    verb = "would be reformatted" if check else "reformatted"
    click.echo(f"{counted(len(targets), 'file')} checked, {len(changed)} {verb}")
    refused = any(outcome.refused for outcome in outcomes)
    sys.exit(1 if refused or (check and changed) else 0)


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--check",
    is_flag=True,
    help="Change nothing; list the format-1 records and exit 1 if there are any.",
)
def migrate(paths: tuple[Path, ...], check: bool) -> None:
    """Rewrite format-1 records (every record when no PATH is given) as format 2.

    Every figure is carried over with the text it was written with; a figure under a name no
    metric holds leaves its record unchanged and is listed. Exit 1 when a record could not be
    migrated (or, with --check, when one is format 1).
    """
    from kvrecords.dataset.layout import discover
    from kvrecords.tools.migrate import migrate_file, write_migration

    root = Path.cwd()
    files = list(paths) or [found.path for found in discover(root, "record")]
    failed = False
    for path in files:
        migration = migrate_file(path, root)
        if migration.refused:
            failed = True
            click.echo("\n".join(problem_line(problem) for problem in migration.refused))
            continue
        if migration.text is None and not migration.unplaced:
            if migration.summary != "is format 2 already":
                click.echo(f"{migration.display}: {migration.summary}")
                failed = True
            continue
        if migration.unplaced:
            failed = True
            click.echo(f"{migration.display}: not migrated; no metric holds:")
            for figure in migration.unplaced:
                click.echo(f"  {figure}")
            continue
        if check:
            failed = True
            click.echo(f"{migration.display}: format 1 (kvrecords migrate {migration.display})")
            continue
        write_migration(path, migration)
        click.echo(f"migrated {migration.display}: {migration.summary}")
    if not check:
        click.echo("check the runs against the source, then: kvrecords validate")
    sys.exit(1 if failed else 0)


@click.command()
@click.option(
    "--check",
    is_flag=True,
    help="Change nothing; show how the generated pages of docs/ differ from what they should be,"
    " with the command that fixes them, and exit 1 if they do.",
)
def docs(check: bool) -> None:
    """Regenerate docs/rules.md (the check codes), docs/metrics.md (the metric vocabulary),
    docs/dataset.md (the dataset table) and docs/coverage.md (records per technique, engine and
    hardware class, with docs/coverage-notes.yaml).

    The kvrecords-docs pre-commit hook runs this on every commit that changes the data or the
    validator. Refused (exit 1) while the dataset has errors: run kvrecords validate.
    """
    from kvrecords.tools.docs import drift, write_pages

    root = clean_root()
    try:
        if check:
            reports = drift(root)
            for report in reports:
                click.echo(report)
            sys.exit(1 if reports else 0)
        for page in write_pages(root):
            click.echo(f"wrote {page}; add it to the commit: git add docs")
    except ValueError as error:  # docs/coverage-notes.yaml that cannot be read: the data's fault
        click.echo(f"kvrecords: {error}", err=True)
        sys.exit(1)


@click.command()
@click.option("--markdown", is_flag=True, help="Print docs/rules.md.")
def rules(markdown: bool) -> None:
    """List the check codes."""
    import kvrecords.checks.registry as registry

    if markdown:
        click.echo(registry.markdown(), nl=False)
        return
    for rule in registry.RULES.values():
        click.echo(f"{rule.code}  {rule.name:<22} {rule.summary}")


@click.command()
@click.option("--markdown", is_flag=True, help="Print docs/metrics.md.")
def metrics(markdown: bool) -> None:
    """List the metric vocabulary a run's metrics are named from."""
    from kvrecords.kv.metrics import METRICS
    from kvrecords.kv.metrics import markdown as metrics_markdown

    if markdown:
        click.echo(metrics_markdown(), nl=False)
        return
    for metric in METRICS:
        needs = f" (needs {metric.needs})" if metric.needs else ""
        click.echo(f"{metric.name:<24} {metric.unit:<11} {metric.meaning}{needs}")
