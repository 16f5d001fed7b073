"""KV901: a record's kept result files say what the record says they say.

A record may keep the raw files its runs were drawn from (``evidence``: file, format, sha256 and
the runs drawn from it), as MLPerf's checker keeps the logs it recomputes results from. A
metric drawn from a file names it in ``stated_as`` as ``<file>: <key> = <raw>``, the trace the
benchmark import writes. ``dataset/evidence.py`` reads the files; this compares them with the
record, as data only.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NamedTuple

from kvrecords.dataset.document import Document, JsonPath
from kvrecords.dataset.evidence import EvidenceFile
from kvrecords.kv.metrics import BY_NAME
from kvrecords.kv.units import Written, disagreement, exact, format_number
from kvrecords.problems import Problem, Rule

if TYPE_CHECKING:
    from kvrecords.dataset.bench import BenchFigure, BenchRun

EVIDENCE = Rule(
    "KV901",
    "evidence",
    "Each raw result file a record keeps (evidence/<slug>/<file>) is a regular file inside that "
    "folder, at most 16 MiB, readable by its format and with the stated sha256; every metric "
    "whose stated_as traces it ('<file>: <key> = <raw>') belongs to a run the file lists and "
    "equals what the file gives at that key (metric, statistic, raw text, value at the "
    "precision written, spread); each listed run draws from one of the file's runs, no two "
    "from the same one, and states no concurrency, request rate or request count that run "
    "contradicts; a folder under evidence/ belongs to a record.",
    "A figure copied by hand slips (a median entered as a mean, seconds as ms, one digit); "
    "re-reading the tool's own file catches every such slip, and the digest ties the record to "
    "the bytes a reviewer can open.",
    "evidence:\n  - {file: report.json, format: guidellm, sha256: 4e1f...c2, runs: [rate-2]}\n"
    "runs:\n  - id: rate-2\n    metrics:\n      - name: ttft_ms\n        statistic: mean\n"
    "        value: 11.48\n        stated_as: 'report.json: benchmarks[0].metrics."
    "time_to_first_token_ms.successful.mean = 11.481165885925293'",
    "        value: 12.48\n# KV901 ttft_ms mean is 12.48; report.json gives 11.481165885925293 at "
    "benchmarks[0].metrics.time_to_first_token_ms.successful.mean",
)


class _Trace(NamedTuple):
    """A metric that says it was drawn from a kept file."""

    run_id: str
    path: JsonPath  # the metric's
    file: EvidenceFile
    key: str
    raw: str


def evidence_problems(
    document: Document, files: list[EvidenceFile], unlisted: list[str]
) -> list[Problem]:
    """KV901 for a schema-valid record with ``evidence``, its files as read."""
    return sorted(_problems(document, files, unlisted))


def orphan_evidence_problems(orphans: list[tuple[str, str]]) -> list[Problem]:
    """KV901 for evidence folders whose record is gone (renamed or removed), as
    ``dataset/evidence.py orphan_folders`` finds them: nothing else would read their files."""
    return [
        EVIDENCE.problem(
            display,
            1,
            1,
            f"kept for {record_id}, which has no record file; move it with its record",
        )
        for record_id, display in orphans
    ]


def _problems(
    document: Document, files: list[EvidenceFile], unlisted: list[str]
) -> Iterator[Problem]:
    data = document.data
    listed: list[dict[str, Any]] = data["evidence"]
    run_ids = [str(run["id"]) for run in data.get("runs", [])]
    by_name: dict[str, EvidenceFile] = {}
    for kept in files:
        entry = listed[kept.position]
        where: JsonPath = ("evidence", kept.position)
        if entry["file"] in by_name:
            yield _at(document, (*where, "file"), f"{entry['file']} is listed twice")
            continue
        by_name[entry["file"]] = kept
        if kept.problem is not None:  # unread (at its name) or not parsed (at its format)
            field = "file" if kept.sha256 is None else "format"
            yield _at(document, (*where, field), f"{kept.display}: {kept.problem}")
        if kept.sha256 is not None and kept.sha256 != entry["sha256"]:
            yield _at(
                document,
                (*where, "sha256"),
                f"{kept.display} has sha256 {kept.sha256}; the record states {entry['sha256']}: "
                "the file changed after its figures were drawn, or the digest is mistyped",
            )
        for index, run_id in enumerate(entry["runs"]):
            if run_id not in run_ids:
                yield _at(
                    document,
                    (*where, "runs", index),
                    f"{entry['file']} lists run '{run_id}'; the runs are {', '.join(run_ids)}",
                )
    for display in unlisted:
        yield _at(
            document,
            ("evidence",),
            f"{display} is kept but not listed, so nothing checks it; list it or remove it",
        )
    traces = list(_traces(data, by_name))
    # each readable file's figures by key, built once: a file may hold thousands of figures
    indexes = {name: _index(kept.runs) for name, kept in by_name.items() if kept.runs}
    yield from _trace_problems(document, traces, listed, indexes)
    yield from _runs_drawn(document, traces, listed, by_name, indexes)


def _traces(data: dict[str, Any], files: dict[str, EvidenceFile]) -> Iterator[_Trace]:
    """Every metric whose stated_as names a kept file."""
    for run_index, run in enumerate(data.get("runs", [])):
        for metric_index, metric in enumerate(run.get("metrics", [])):
            stated = metric.get("stated_as")
            if not isinstance(stated, str) or ": " not in stated:
                continue
            name, trace = stated.split(": ", 1)
            if name not in files:
                continue
            key, _, raw = trace.rpartition(" = ")
            if raw.endswith(")") and " (" in raw:  # '0.0198 (19.8 ms)': the value converted
                raw = raw.split(" (", 1)[0]
            path: JsonPath = ("runs", run_index, "metrics", metric_index)
            yield _Trace(str(run["id"]), path, files[name], key, raw)


def _trace_problems(
    document: Document,
    traces: list[_Trace],
    listed: list[dict[str, Any]],
    indexes: dict[str, _Index],
) -> Iterator[Problem]:
    for trace in traces:
        entry = listed[trace.file.position]
        name = entry["file"]
        metric = _value_at(document.data, trace.path)
        if trace.run_id not in entry["runs"]:
            yield _at(
                document,
                (*trace.path, "stated_as"),
                f"run '{trace.run_id}' cites {name}, which is the evidence of "
                f"{_listing(entry['runs'])} only",
            )
            continue
        if not trace.key:
            yield _at(
                document,
                (*trace.path, "stated_as"),
                f"stated_as names {name}; write '{name}: <key> = <value as the file writes it>'",
            )
            continue
        if trace.file.runs is None:
            continue  # the file could not be read: reported at its entry
        found = indexes.get(name, {}).get(trace.key)
        if found is None:
            yield _at(document, (*trace.path, "stated_as"), _missing(name, trace))
            continue
        yield from _compare(document, trace, metric, found[1], name)


def _compare(
    document: Document, trace: _Trace, metric: dict[str, Any], figure: BenchFigure, name: str
) -> Iterator[Problem]:
    shown = f"{name} gives {figure.metric} {figure.statistic} at {trace.key}"
    if (metric["name"], metric["statistic"]) != (figure.metric, figure.statistic):
        yield _at(
            document,
            (*trace.path, "name" if metric["name"] != figure.metric else "statistic"),
            f"the metric is {metric['name']} {metric['statistic']}; {shown}",
        )
        return
    if trace.raw != figure.raw:
        yield _at(
            document,
            (*trace.path, "stated_as"),
            f"stated_as quotes {trace.raw}; {name} writes {figure.raw} at {trace.key}",
        )
    yield from _value_problems(document, trace, metric, figure, name)
    stated_scope = metric.get("scope")
    if stated_scope is not None and figure.scope is not None and stated_scope != figure.scope:
        yield _at(
            document,
            (*trace.path, "scope"),
            f"scope is {stated_scope}; {name}'s {trace.key} is {figure.scope}",
        )


def _value_problems(
    document: Document, trace: _Trace, metric: dict[str, Any], figure: BenchFigure, name: str
) -> Iterator[Problem]:
    value_path = (*trace.path, "value")
    written = _written(document, value_path)
    given = figure.raw
    if _converted(figure):  # the file's number, then the metric's: 0.0198 (19.8 ms)
        given += f" ({format_number(figure.value)} {BY_NAME[figure.metric].unit})"
    if written is None:
        yield _at(
            document,
            value_path,
            f"a figure drawn from {name} is the number the file gives, not a range or an "
            f"approximation ({given} at {trace.key})",
        )
    else:
        what, gives = f"{figure.metric} {figure.statistic}", f"{name} gives {given} at {trace.key}"
        yield from _disagreeing(document, value_path, written, figure.value, what, gives)
    spread = metric.get("spread")
    if spread is None:
        return
    spread_path = (*trace.path, "spread", "value")
    if figure.spread is None or spread["of"] != "std":
        yield _at(
            document,
            (*trace.path, "spread"),
            f"{name} gives no spread of {spread['of']} beside {trace.key}"
            + (
                f" (its standard deviation is {format_number(figure.spread)})"
                if figure.spread
                else ""
            ),
        )
        return
    written_spread = _written(document, spread_path)
    if written_spread is not None:
        gives = f"{name} gives a standard deviation of {format_number(figure.spread)}"
        gives += f" beside {trace.key}"
        yield from _disagreeing(
            document, spread_path, written_spread, figure.spread, "spread", gives
        )


def _disagreeing(
    document: Document,
    path: JsonPath,
    written: Written,
    number: float,
    what: str,
    gives: str,
) -> Iterator[Problem]:
    """KV901 at ``path`` when the figure written there (``what``) does not state the file's
    ``number`` by the precision rule; ``gives`` says what the file gives and where."""
    why = disagreement(written, exact(repr(number)))
    if why is not None:
        yield _at(document, path, f"{what} is {written.text}; {gives}: {why}")


def _runs_drawn(
    document: Document,
    traces: list[_Trace],
    listed: list[dict[str, Any]],
    files: dict[str, EvidenceFile],
    indexes: dict[str, _Index],
) -> Iterator[Problem]:
    """Each listed run draws from the file, from one of its runs, and no two from the same."""
    for name, kept in files.items():
        entry = listed[kept.position]
        mine = [t for t in traces if t.file is kept and t.run_id in entry["runs"]]
        drawn_by: dict[int, str] = {}
        for index, run_id in enumerate(entry["runs"]):
            own = [t for t in mine if t.run_id == run_id]
            if not own:
                yield _at(
                    document,
                    ("evidence", kept.position, "runs", index),
                    f"{name} lists run '{run_id}', which draws no figure from it",
                )
                continue
            if kept.runs is None:
                continue
            sources: dict[int, _Trace] = {}
            for trace in own:
                found = indexes.get(name, {}).get(trace.key)
                if found is not None:
                    sources.setdefault(found[0], trace)
            if len(sources) > 1:
                labels = " and ".join(f"'{kept.runs[i].label}'" for i in sorted(sources))
                second = sources[sorted(sources)[1]]
                yield _at(
                    document,
                    (*second.path, "stated_as"),
                    f"run '{run_id}' draws from {labels} of {name}: a run is one of the file's "
                    "runs",
                )
            for source, trace in sources.items():
                if source in drawn_by:
                    yield _at(
                        document,
                        (*trace.path, "stated_as"),
                        f"runs '{drawn_by[source]}' and '{run_id}' both draw from "
                        f"'{kept.runs[source].label}' of {name}",
                    )
                else:
                    drawn_by[source] = run_id
            if len(sources) == 1:
                [(source, trace)] = sources.items()
                yield from _settings(document, trace.path[1], kept.runs[source], name)


# The run settings a file may state, and the record's names for them.
_SETTINGS = (("concurrency", "concurrency"), ("request_rate", "request_rate"))


def _settings(document: Document, run_index: Any, drawn: BenchRun, name: str) -> Iterator[Problem]:
    """A run's concurrency, request rate and request count against the file's run it draws
    from, where both say one (a run's own setting, else the methodology's)."""
    data = document.data
    run = data["runs"][run_index]
    for field, attribute in _SETTINGS:
        in_run = field in run
        stated = run[field] if in_run else data["methodology"].get(field)
        given = getattr(drawn, attribute)
        if given is None or not _contradicts(stated, given):
            continue
        path: JsonPath = ("runs", run_index, field) if in_run else ("methodology", field)
        shown = "inf" if given == math.inf else format_number(given)
        yield _at(
            document,
            path,
            f"{field} is {stated}; run '{run['id']}' draws from '{drawn.label}' of {name}, "
            f"whose {field} is {shown}",
        )
    requests = run.get("requests")
    if isinstance(requests, int) and drawn.num_requests not in (None, requests):
        yield _at(
            document,
            ("runs", run_index, "requests"),
            f"requests is {requests}; '{drawn.label}' of {name} completed {drawn.num_requests}",
        )


def _contradicts(stated: Any, given: float) -> bool:
    """Whether a stated concurrency or rate cannot be the file's (a range or null can be)."""
    if stated in ("unbounded", "inf"):
        return given != math.inf
    if isinstance(stated, bool) or not isinstance(stated, int | float):
        return False
    return bool(exact(stated) != exact(repr(given))) if given != math.inf else True


_Index = dict[str, tuple[int, "BenchFigure"]]  # a figure's key -> (its run's index, it)


def _index(runs: list[BenchRun]) -> _Index:
    return {
        figure.key: (position, figure)
        for position, run in enumerate(runs)
        for figure in run.figures
    }


def _missing(name: str, trace: _Trace) -> str:
    from kvrecords.dataset.bench.readers.summaries import skipped_key  # only on this error

    runs = trace.file.runs or []
    if any(
        trace.key == key or trace.key.startswith(f"{key}.")
        for run in runs
        for key in map(skipped_key, run.not_imported)
    ):
        return f"{name}'s {trace.key} is not a figure the {runs[0].tool} reader imports"
    return f"{name} has no figure at {trace.key}"


def _converted(figure: BenchFigure) -> bool:
    """Whether the reader scaled the file's number (seconds to ms)."""
    try:
        return not math.isclose(float(figure.raw), figure.value, rel_tol=1e-12)
    except ValueError:
        return False


def _written(document: Document, path: JsonPath) -> Written | None:
    """The plain number at ``path`` as written, or None when it is not one."""
    value = _value_at(document.data, path)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    text = document.written.get(path, repr(value))
    try:
        Decimal(text.replace(",", ""))
    except ArithmeticError:
        return None
    return Written(text)


def _value_at(data: Any, path: JsonPath) -> Any:
    for part in path:
        data = data[part]
    return data


def _listing(run_ids: list[str]) -> str:
    return ", ".join(f"'{run_id}'" for run_id in run_ids)


def _at(document: Document, path: JsonPath, message: str) -> Problem:
    return document.problem(EVIDENCE, path, message)
