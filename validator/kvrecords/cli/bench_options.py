"""``kvrecords new --from-bench FILE...``: new's options for a draft from benchmark result files."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import click

from kvrecords.cli.common import fail

F = TypeVar("F", bound=Callable[..., Any])
_FILE = click.Path(dir_okay=False, path_type=Path)


class BenchOptions(NamedTuple):
    files: tuple[Path, ...]
    baseline: Path | None
    logs: tuple[Path, ...]
    tool: str | None

    @classmethod
    def take(cls, options: dict[str, Any]) -> BenchOptions:
        """The bench options, removed from ``options`` (the rest are new's own)."""
        first, more = tuple(options.pop("from_bench")), tuple(options.pop("more_bench_files"))
        if more and not first:
            fail(f"unexpected argument {str(more[0])!r}; result files follow --from-bench")
        files = first + more
        taken = cls(
            files, options.pop("baseline"), tuple(options.pop("bench_logs")), options.pop("tool")
        )
        if not files and (taken.baseline or taken.logs or taken.tool):
            fail("--baseline, --log and --tool go with --from-bench FILE")
        return taken


def bench_options(command: F) -> F:
    """The --from-bench options of ``new`` (and the further result files after the first)."""
    for decorator in reversed(
        (
            click.option(
                "--from-bench",
                "from_bench",
                type=_FILE,
                multiple=True,
                help="Draft the record from a benchmark's result file: vllm bench serve "
                "--save-result JSON, SGLang bench_serving JSONL, llama-bench -o json/jsonl/csv. "
                "Each run the file holds becomes a run with every figure it gives; more files "
                "may follow (--from-bench A.json B.json).",
            ),
            click.option(
                "--baseline",
                type=_FILE,
                help="With --from-bench: the result file of the baseline; its runs are the "
                "baseline, the other files' the treatment.",
            ),
            click.option(
                "--log",
                "bench_logs",
                type=_FILE,
                multiple=True,
                help="With --from-bench: the engine's start-up log, whose printed KV size fills "
                "kv_bytes_reported and its engine_accounting (as kvrecords kv --from-log reads "
                "it); one for every run, or one per result file in order.",
            ),
            click.option(
                "--tool",
                help="With --from-bench: the format (vllm-bench-serve, sglang-bench-serving, "
                "llama-bench) when it is not recognised.",
            ),
            click.argument("more_bench_files", nargs=-1, type=_FILE, metavar="[FILE]..."),
        )
    ):
        command = decorator(command)
    return command


def new_from_bench(root: Path, bench: BenchOptions, given: dict[str, Any]) -> None:
    """Write the draft; a file that cannot be read is ``FILE:LINE:COL: message``, exit 1."""
    from kvrecords.tools.bench_draft import BenchDraftError, BenchSources, draft_from_bench
    from kvrecords.tools.scaffold import write_scaffold

    sources = BenchSources(bench.files, bench.baseline, bench.logs, bench.tool)
    try:
        draft = draft_from_bench(root, sources, given)
        path = write_scaffold(root, draft.slug, draft.text)
    except BenchDraftError as error:
        print(f"{error}", file=sys.stderr)
        sys.exit(1)
    except FileExistsError as error:
        print(
            f"kvrecords: {error.filename}: already exists; not overwritten (give --slug)",
            file=sys.stderr,
        )
        sys.exit(1)
    except (ValueError, OSError) as error:
        print(f"kvrecords: {error}", file=sys.stderr)
        sys.exit(1)
    shown = path.relative_to(root).as_posix()
    click.echo(f"wrote {shown}: {draft.runs} run(s) from {len(bench.files)} file(s)")
    if draft.model_note:
        click.echo(draft.model_note)
    click.echo("left to fill:")
    for item in draft.left_to_fill:
        click.echo(f"  - {item}")
    click.echo(f"then: kvrecords fmt {shown} && kvrecords validate {shown}")
