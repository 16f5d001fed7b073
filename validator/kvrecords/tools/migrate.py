"""``kvrecords migrate``: a format-1 record rewritten as format 2, every figure carried over.

The measured figures of ``results`` become runs (a cold baseline, a warm treatment, or the one
run the source measured), each ``observations`` entry its own run, a stated speedup a
comparison between the cold and warm runs; a decode rate stated per sequence keeps that scope,
and a card left null takes the figures of the run it heads. Figures keep the text they were
written with (the YAML is read with ruamel's round-trip loader, whose numbers dump as written)
and comments outside ``results`` stay. A figure under a name the metric vocabulary does not hold
is not guessed at: the record is left as it is and the names are listed. A hit rate's
definition is not in format 1, so it is migrated as ``not_stated`` for the contributor to read
off the source. A file validate would refuse unread is refused here with the same reason.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from kvrecords.dataset.atomic import write_atomically
from kvrecords.dataset.document import Document, read_document
from kvrecords.dataset.layout import classify
from kvrecords.kv.metrics import BY_NAME
from kvrecords.problems import Problem
from kvrecords.runner.reporters import counted

# How format-1 statistics are spelt inside ad-hoc observation names.
_STATISTIC_WORDS = {
    "mean": "mean",
    "average": "mean",
    "avg": "mean",
    "median": "median",
    "p50": "p50",
    "p90": "p90",
    "p95": "p95",
    "p99": "p99",
    "min": "min",
    "max": "max",
    "total": "total",
}
_DURATION_UNITS = {
    "duration_s": "seconds",
    "duration_minutes": "minutes",
    "duration_hours": "hours",
}
_DURATION_UNITS["duration_days"] = "days"
_UNKNOWN_DEFINITION = {"counted_in": "not_stated", "window": "not_stated"}


class Migration(NamedTuple):
    """The outcome for one file: its new text, or why it stays as it is."""

    display: str
    text: str | None  # None: unchanged (already format 2, or refused)
    unplaced: tuple[str, ...] = ()  # figures the vocabulary cannot hold, by their format-1 path
    summary: str = ""
    refused: tuple[Problem, ...] = ()  # why the safe reader refuses the file, as validate says


def migrate_file(path: Path, root: Path) -> Migration:
    """The format-2 text of the record at ``path``; nothing is written."""
    from ruamel.yaml import YAML

    from kvrecords.tools.fmt import FormatRefused, UnsafeFormat, format_data, load_schema

    found = classify(root, path)
    display = found.display if found else str(path)
    # The safe reader first: a file validate refuses (a tag, an alias, a non-finite number,
    # bytes that are not UTF-8) is refused here with the same reason, before ruamel reads it.
    document = read_document(path, display)
    if not isinstance(document, Document):
        return Migration(display, None, summary="cannot be read", refused=tuple(document))
    data = YAML(typ="rt").load(document.text)
    if not isinstance(data, dict) or "id" not in data:
        return Migration(display, None, summary="is not a record")
    if data.get("format") == 2:
        return Migration(display, None, summary="is format 2 already")
    missing = [key for key in FORMAT_1_SHAPE if not isinstance(data.get(key), dict)]
    if missing:
        return Migration(display, None, summary=f"is not a format-1 record: no {missing[0]}")
    unplaced: list[str] = []
    try:
        converted = convert(data, unplaced)
        text = format_data(converted, "record", load_schema(root, "record"))
    except (KeyError, TypeError, AttributeError, FormatRefused, UnsafeFormat) as error:
        return Migration(display, None, summary=f"cannot be migrated: {_shape_error(error)}")
    if unplaced:
        return Migration(display, None, tuple(unplaced), "has figures no metric holds")
    runs = converted["runs"]
    metrics = sum(len(run["metrics"]) for run in runs)
    comparisons = len(converted.get("comparisons", []))
    summary = (
        f"{counted(len(runs), 'run')}, {counted(metrics, 'metric')}, "
        f"{counted(comparisons, 'comparison')}"
    )
    return Migration(display, text, (), summary)


# What convert reads off a format-1 record before anything else.
FORMAT_1_SHAPE = ("kv_bytes_basis", "methodology")


def _shape_error(error: Exception) -> str:
    """What a record that is not shaped like a format-1 record lacks, in a user's words."""
    if isinstance(error, KeyError):
        return f"a format-1 field it needs is missing ({error.args[0]!r})"
    if isinstance(error, (TypeError, AttributeError)):
        return "a field has another type than format 1 gives it (validate names it after migrating)"
    return str(error).splitlines()[0]


def convert(record: Any, unplaced: list[str]) -> Any:
    """``record`` (a ruamel mapping) as format 2, in place; names no metric holds go to
    ``unplaced``."""
    results = record.pop("results", None) or {}
    runs = _result_runs(record, results)
    for index, observation in enumerate(results.get("observations", [])):
        runs.append(_observation_run(index, observation, unplaced))
    record.insert(0, "format", 2)
    position = list(record).index("methodology") + 1
    record.insert(position, "runs", runs)
    position += 1
    speedup = results.get("speedup")
    if speedup is not None and {"cold", "warm"} <= {run["id"] for run in runs}:
        comparison = {"kind": "speedup", "metric": "ttft_ms", "statistic": "single"}
        comparison.update({"from": "cold", "to": "warm", "stated": speedup})
        record.insert(position, "comparisons", [comparison])
        position += 1
    elif speedup is not None:
        unplaced.append("results.speedup (no cold and warm TTFT to compare)")
    record.insert(position, "headline_run", _headline(record, runs))
    _drop_not_stated(record, lambda field: field.startswith("results."))
    return record


def _metric(name: str, value: Any, statistic: str = "single") -> dict[str, Any]:
    metric = {"name": name, "statistic": statistic, "value": value}
    if BY_NAME[name].needs == "definition":
        metric["definition"] = dict(_UNKNOWN_DEFINITION)
    return metric


def _result_runs(record: Any, results: Any) -> list[dict[str, Any]]:
    """The cold and warm runs (or the one run) that ``results`` and the card describe."""
    cold, warm = results.get("cold_ttft_ms"), results.get("warm_ttft_ms")
    hit_rate = results.get("hit_rate")
    decode_name = (
        "output_tokens_per_s"
        if results.get("decode_rate_scope") == "aggregate"
        else "decode_tokens_per_s"
    )
    main: dict[str, Any]
    runs: list[dict[str, Any]] = []
    if cold is not None:
        label = "prefix not cached (cold)"
        runs.append({"id": "cold", "label": label, "role": "baseline", "metrics": []})
        runs[-1]["metrics"].append(_metric("ttft_ms", cold))
    if warm is not None or hit_rate is not None or cold is not None:
        label = "prefix served from cache (warm)"
        main = {"id": "warm", "label": label, "role": "treatment", "metrics": []}
        if warm is not None:
            main["metrics"].append(_metric("ttft_ms", warm))
        if hit_rate is not None:
            main["metrics"].append(_metric("hit_rate", hit_rate))
    else:
        main = {"id": "main", "label": "as measured", "role": "only", "metrics": []}
        ttft = record.get("measured_ttft_ms_at_ctx")
        if ttft is not None:
            main["metrics"].append(_metric("ttft_ms", ttft))
    for name, value in (
        (decode_name, results.get("decode_tokens_per_s")),
        ("prefill_tokens_per_s", results.get("prefill_tokens_per_s")),
    ):
        if value is not None:
            main["metrics"].append(_metric(name, value))
    if results.get("decode_rate_scope") == "per_sequence" and decode_name in _names(main):
        _find_metric(main, decode_name)["scope"] = "per_sequence"
    derived = {
        key: results[key]
        for key in ("tokens_not_recomputed", "bytes_not_recomputed")
        if results.get(key) is not None
    }
    if derived:
        main["derived"] = derived
    prefill = results.get("prefill_tokens_per_s_from_ttft")
    if prefill is not None:
        (runs[0] if runs else main).setdefault("derived", {})["prefill_tokens_per_s_from_ttft"] = (
            prefill
        )
    return [*runs, main]


def _observation_run(index: int, observation: Any, unplaced: list[str]) -> dict[str, Any]:
    run: dict[str, Any] = {"id": f"observation-{index + 1}", "label": observation["label"]}
    run["role"] = "treatment"
    if "hardware" in observation:
        run["hardware"] = observation["hardware"]
    if "context_tokens" in observation:
        run["context_tokens"] = observation["context_tokens"]
    run["metrics"] = []
    for name, value in observation["figures"].items():
        if name in _DURATION_UNITS:
            run["duration"] = {_DURATION_UNITS[name]: value}
            continue
        placed = metric_for(name)
        if placed is None:
            unplaced.append(f"results.observations[{index}].figures.{name}")
            continue
        run["metrics"].append(_metric(placed[0], value, placed[1]))
    run["stated_as"] = observation["stated_as"]
    return run


def metric_for(name: str) -> tuple[str, str] | None:
    """The metric and statistic an ad-hoc format-1 name stands for (``ttft_p90_ms`` ->
    ``ttft_ms``, ``p90``), or None when it is not one name of the vocabulary plus at most one
    statistic word."""
    if name in BY_NAME:
        return name, "single"
    words = name.split("_")
    for position, word in enumerate(words):
        statistic = _STATISTIC_WORDS.get(word)
        rest = "_".join(words[:position] + words[position + 1 :])
        if statistic and rest in BY_NAME:
            return rest, statistic
    return None


def _headline(record: Any, runs: list[dict[str, Any]]) -> str:
    """The run whose TTFT is the card's: the one whose ttft_ms it repeats, else the last of
    the results' runs, which then gets the card's figures it lacks (they were measured in it)."""
    card_ttft = record.get("measured_ttft_ms_at_ctx")
    card_tps = record.get("measured_tps_at_ctx")
    for run in runs:
        if any(m["name"] == "ttft_ms" and m["value"] == card_ttft for m in run["metrics"]):
            headline = run
            break
    else:
        headline = [run for run in runs if not run["id"].startswith("observation-")][-1]
    names = _names(headline)
    if card_ttft is not None and "ttft_ms" not in names:
        headline["metrics"].insert(0, _metric("ttft_ms", card_ttft))
    decode_names = ("decode_tokens_per_s", "output_tokens_per_s")
    if card_tps is not None and not names & set(decode_names):
        headline["metrics"].append(_metric("decode_tokens_per_s", card_tps))
    # The card repeats the headline run's figures: a figure format 1 held only in results
    # (the card left null) is the card's now.
    for field, metric_names in (
        ("measured_ttft_ms_at_ctx", ("ttft_ms",)),
        ("measured_tps_at_ctx", decode_names),
    ):
        given = [name for name in metric_names if name in _names(headline)]
        if record.get(field) is None and given:
            record[field] = _find_metric(headline, given[0])["value"]
            _drop_not_stated(record, field.__eq__)
    return str(headline["id"])


def _names(run: dict[str, Any]) -> set[str]:
    return {metric["name"] for metric in run["metrics"]}


def _find_metric(run: dict[str, Any], name: str) -> dict[str, Any]:
    return next(metric for metric in run["metrics"] if metric["name"] == name)


def _drop_not_stated(record: Any, dropped: Callable[[str], bool]) -> None:
    """``not_stated`` without the entries of fields that are no longer null or no longer exist
    (a null results field is not a metric, so its entry goes with it)."""
    entries = record.get("not_stated")
    if entries is not None:
        kept = [entry for entry in entries if not dropped(str(entry["field"]))]
        entries.clear()
        entries.extend(kept)


def write_migration(path: Path, migration: Migration) -> None:
    assert migration.text is not None
    write_atomically(path, migration.text)
