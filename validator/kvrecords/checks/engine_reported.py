"""KV804: what an engine printed about its cache, against the engine model of that release.

A ``kv_bytes_reported`` metric with ``engine_accounting`` states the settings the engine sized
its cache with. The block is held to the engine model's own vocabulary before anything is
computed: an option the engine model does not take, a value of the wrong type, a value outside
the engine's set or a version the engine model has not read is an error at that place, so that
a slip cannot switch the check off. Then the engine model sizes the printed cache for the run's
own model: an error when no accounting the record allows agrees; a warning only when the engine
model honestly cannot size the model or engine (``NotCovered``).
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from typing import Any, NamedTuple

from kvrecords.checks.context import ModelLookup, RecordContext
from kvrecords.checks.runs import Bounds, show_figure, value_bounds
from kvrecords.dataset.document import JsonPath
from kvrecords.dataset.records import Measured
from kvrecords.kv.geometry import Model
from kvrecords.kv.units import format_in_unit, parse_byte_quantity
from kvrecords.problems import Problem, Rule, did_you_mean

ENGINE_REPORTED = Rule(
    "KV804",
    "engine-reported",
    "A kv_bytes_reported metric with engine_accounting equals what the engine model computes "
    "for the run's engine, version, model and those settings (`kvrecords kv --engine`), for the "
    "printed cache engine_accounting.cache names (the whole allocation by default), at the "
    "precision written. The accounting is checked first: an option the engine model does not "
    "take, a value of the wrong type or outside the engine's set, a version outside the engine "
    "model's table, and a cache the engine does not build for the model are errors at their "
    "place; only an engine or model the engine model does not cover warns.",
    "An engine's printed size is evidence a reader can reproduce; it differs from the logical "
    "bytes by padding, blocks and scales, so it is checked against the engine's own accounting, "
    "not against kv_at_context. llama.cpp prints each of its caches on a line of its own, so a "
    "quoted line is checked against the cache it sizes. A misspelt option or a wrong type must "
    "not turn the check into a warning that CI lets through.",
    "metrics:\n  - name: kv_bytes_reported\n    value: 1088.00 MiB\n    engine_accounting:\n"
    "      context_tokens: 8192\n      options: {cache_type_k: q8_0, cache_type_v: q8_0}",
    "value: 1024.00 MiB\n# KV804 kv_bytes_reported is 1024.00 MiB; llamacpp (latest) allocates "
    "1,140,850,688 B = 1088.00 MiB\noptions: {cache_typ_k: q8_0}\n# KV804 engine_accounting "
    "option 'cache_typ_k' is not one llamacpp takes; did you mean cache_type_k?",
)

# Engine names as records write them, to the engine models' names.
ENGINE_MODELS = {
    "llama.cpp": "llamacpp",
    "llamacpp": "llamacpp",
    "vllm": "vllm",
    "sglang": "sglang",
    "tensorrt-llm": "tensorrt-llm",
}


class Candidate(NamedTuple):
    """One accounting the record allows (a release, or a llama.cpp era), computed."""

    version: str
    bytes: int
    working: str
    agrees: bool


class AccountingError(NamedTuple):
    """An engine_accounting the engine model cannot take as written: where, and why."""

    path: JsonPath
    message: str
    at_key: bool = False  # an option's name is wrong: point at the name, not its value


class EngineCheck(NamedTuple):
    """A kv_bytes_reported metric against the engine model: each accounting the record allows,
    computed; or the errors in its accounting; or why the engine model cannot size it."""

    item: Measured
    candidates: tuple[Candidate, ...] = ()
    errors: tuple[AccountingError, ...] = ()  # the accounting is wrong: errors
    why_not: str = ""  # not covered by the engine model: a warning
    version_assumed: bool = False  # no version stated or mapped: the latest accounting only

    @property
    def agreeing(self) -> tuple[Candidate, ...]:
        return tuple(candidate for candidate in self.candidates if candidate.agrees)


def engine_checks(record: RecordContext, models: ModelLookup | None = None) -> list[EngineCheck]:
    """Every engine-reported KV size that states its engine accounting, checked; ``models``
    gives the geometry of a model a run names other than the record's."""
    found = []
    methodology = record.data["methodology"]
    for run in record.runs:
        for index, metric in enumerate(run.stated.get("metrics", [])):
            accounting = metric.get("engine_accounting")
            if metric["name"] != "kv_bytes_reported" or accounting is None:
                continue
            item = Measured(run, index, metric)
            own_engine = "engine" in run.stated
            engine = run.stated["engine"] if own_engine else methodology["engine"]
            engine_path = (*run.path, "engine") if own_engine else ("methodology", "engine")
            name = ENGINE_MODELS.get(engine["name"])
            model_id = run.stated.get("model", record.data["model"])
            model = record.model if model_id == record.data["model"] else None
            if model is None and models is not None:
                model = models(model_id)
            if name is None:
                found.append(EngineCheck(item, why_not=f"no engine model for {engine['name']}"))
            elif model is None:
                found.append(EngineCheck(item, why_not=f"models/{model_id} is not loaded"))
            else:
                version = _Version(engine.get("version"), (*engine_path, "version"))
                target = _Target(name, model, f"models/{model_id}")
                found.append(_engine_check(record, item, target, version, accounting))
    return found


class _Version(NamedTuple):
    """The run's engine version as stated, and where."""

    stated: str | None
    path: JsonPath


class _Target(NamedTuple):
    """The engine model and the model it sizes."""

    engine: str
    model: Model
    model_display: str


def _engine_check(
    record: RecordContext,
    item: Measured,
    target: _Target,
    engine_version: _Version,
    accounting: dict[str, Any],
) -> EngineCheck:
    """The accountings a record allows: the one ``engine_accounting.version`` names; else for
    llama.cpp every era (builds are not mapped to eras, so the reading most favourable to the
    record), for the others the engine's stated release, or the latest accounting when none is
    stated."""
    from kvrecords.kv.engines import (
        TOTAL,
        NoSuchCache,
        NotCovered,
        UnknownValue,
        bytes_of,
        engine_report,
    )
    from kvrecords.kv.engines.llamacpp import ERAS

    name, model = target.engine, target.model
    accounting_path = (*item.path, "engine_accounting")
    errors = _option_errors(name, accounting, accounting_path)
    if errors:
        return EngineCheck(item, errors=tuple(errors))
    version_path = (*accounting_path, "version") if "version" in accounting else engine_version.path
    versions: list[str] = [accounting["version"]] if "version" in accounting else []
    assumed = False
    if not versions and name == "llamacpp":
        versions = list(ERAS)
    elif not versions:
        stated = engine_version.stated
        versions, assumed = ([stated], False) if stated else (["latest"], True)
    cache = accounting.get("cache", TOTAL)
    options = accounting.get("options", {})
    candidates: list[Candidate] = []
    refused: list[AccountingError] = []
    not_covered: list[str] = []
    without_cache: list[str] = []
    for version in versions:
        try:
            report = engine_report(model, name, accounting["context_tokens"], version, **options)
            parts = report.cache_parts(cache)
        except NoSuchCache as error:
            without_cache.append(str(error))
            continue
        except NotCovered as error:
            not_covered.append(f"{name} {version}: {error}")
            continue
        except UnknownValue as error:
            where = _option_path(error.option, options, version_path, accounting_path)
            refused.append(AccountingError(where, str(error)))
            continue
        except ValueError as error:  # EngineError: settings the engine itself would refuse
            refused.append(AccountingError(accounting_path, f"{name} {version}: {error}"))
            continue
        engine_bytes = bytes_of(parts)
        if engine_bytes is not None:
            working = "; ".join(f"{part.name}: {part.how}" for part in parts)
            which = "" if cache == TOTAL else f" for its {cache} cache:"
            candidates.append(
                Candidate(
                    report.version,
                    engine_bytes,
                    f"{name} ({report.version}) allocates{which} {working}",
                    _reported_agrees(record, item.value_path, item.stated["value"], engine_bytes),
                )
            )
        else:
            not_covered.append(f"{name} {version}: {target.model_display} lacks a dimension")
    if candidates:
        return EngineCheck(item, tuple(candidates), version_assumed=assumed)
    if without_cache:  # the newest accounting says which caches there are
        others = (
            f" (nor does any other of the {len(without_cache)} accountings tried)"
            if len(without_cache) > 1
            else ""
        )
        cache_path = (*accounting_path, "cache")
        return EngineCheck(
            item,
            errors=(
                AccountingError(
                    cache_path, f"engine_accounting.cache is {cache}; {without_cache[-1]}{others}"
                ),
            ),
        )
    if refused:
        return EngineCheck(item, errors=(refused[0],) if len(versions) == 1 else _joined(refused))
    return EngineCheck(item, why_not="; ".join(not_covered))


def _joined(refused: list[AccountingError]) -> tuple[AccountingError, ...]:
    """Every era refused the settings: one error, at the first place, giving each reason."""
    reasons = "; ".join(error.message for error in refused)
    return (AccountingError(refused[0].path, f"no accounting can size these settings: {reasons}"),)


def _option_path(
    option: str, options: dict[str, Any], version_path: JsonPath, accounting_path: JsonPath
) -> JsonPath:
    """Where a value an engine refused stands: ``--cache-type-k`` is options.cache_type_k."""
    key = option.lstrip("-").replace("-", "_")
    if key == "engine_version":
        return version_path
    return (*accounting_path, "options", key) if key in options else accounting_path


def _option_errors(
    name: str, accounting: dict[str, Any], accounting_path: JsonPath
) -> list[AccountingError]:
    """Option names, their types and their sets, and a stated version, against the engine
    model's vocabulary, before it runs."""
    from kvrecords.kv.engines import option_names, option_types

    types = option_types(name)
    names = option_names(name)
    errors = []
    for key, value in accounting.get("options", {}).items():
        path = (*accounting_path, "options", key)
        if key == "version":
            message = "the version goes in engine_accounting.version, not in options"
            errors.append(AccountingError(path, message, at_key=True))
        elif key not in types:
            message = (
                f"engine_accounting option {key!r} is not one {name} takes"
                f"{did_you_mean(key, names)}; its options: {', '.join(names)}"
            )
            errors.append(AccountingError(path, message, at_key=True))
        else:
            errors += _value_errors(name, key, value, types[key], path)
    if "version" in accounting:
        path = (*accounting_path, "version")
        errors += _value_errors(name, "version", accounting["version"], (str,), path)
    return errors


def _value_errors(
    name: str, key: str, value: Any, allowed: tuple[type, ...], path: JsonPath
) -> list[AccountingError]:
    """A value of the wrong type, or outside the engine's set: what it is and what is taken."""
    from kvrecords.kv.engines import option_choices

    choices = option_choices(name, key)
    if isinstance(value, bool) != (bool in allowed) or not isinstance(value, allowed):
        wanted = _kind(allowed, choices)
        return [AccountingError(path, f"{key} is {_shown(value)}; {name} takes {wanted}")]
    if choices is not None and value not in choices:
        close = did_you_mean(str(value), choices)
        message = f"{key} is {value!r}{close}; {name} takes one of {', '.join(choices)}"
        return [AccountingError(path, message)]
    return []


def _kind(allowed: tuple[type, ...], choices: tuple[str, ...] | None) -> str:
    if choices is not None:
        return f"one of {', '.join(choices)}"
    if bool in allowed:
        return "true or false"
    if int in allowed:
        return "a whole number"
    return "text"


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, str):
        return f"{value!r} (text)"
    return f"{value} (a number)"


def check_engine_reported(
    record: RecordContext, models: ModelLookup | None = None
) -> Iterator[Problem]:
    """KV804: each engine-reported KV size with its accounting agrees with the engine model."""
    for check in engine_checks(record, models):
        path = check.item.value_path
        for error in check.errors:
            yield record.document.problem(
                ENGINE_REPORTED, error.path, error.message, key=error.at_key
            )
        if check.errors or check.agreeing:
            continue
        if not check.candidates:
            message = f"kv_bytes_reported not checked: {check.why_not}"
            yield record.problem(ENGINE_REPORTED, path, message)._replace(severity="warning")
            continue
        stated = check.item.stated["value"]
        last = check.candidates[-1]
        quantity = parse_byte_quantity(stated) if isinstance(stated, str) else None
        shown = stated if isinstance(stated, str) else show_figure(stated)  # a number or a range
        in_unit = ""
        if quantity is not None:
            in_unit = f" = {format_in_unit(last.bytes, quantity.unit, quantity.number.decimals)}"
        message = f"kv_bytes_reported is {shown}; {last.working} = {last.bytes:,} B{in_unit}"
        if len(check.candidates) > 1:
            message += f" (and no other of the {len(check.candidates)} accountings agrees)"
        problem = record.problem(ENGINE_REPORTED, path, message)
        if check.version_assumed:
            message += "; the engine version is not stated, so this is the latest accounting"
            problem = record.problem(ENGINE_REPORTED, path, message)._replace(severity="warning")
        yield problem


def _reported_agrees(record: RecordContext, path: JsonPath, stated: Any, engine_bytes: int) -> bool:
    if isinstance(stated, str):
        quantity = parse_byte_quantity(stated)
        assert quantity is not None  # the schema admits only byte figures as text
        return quantity.agrees_with_bytes(Fraction(engine_bytes))
    if isinstance(stated, dict):
        bounds = value_bounds(record, path)
        return isinstance(bounds, Bounds) and bounds.low <= engine_bytes <= bounds.high
    return bool(stated == engine_bytes)
