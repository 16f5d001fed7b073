"""What every plausibility check reads, and what it hands back.

A ``RunSetup`` is what one run was measured with (its own settings, else the record's): the
accelerator on both readings (``HardwareReading``), the weights (``WeightReadings``), the cache
one sequence holds (``KvReading``), speculative decoding (``Drafting``) and the figures to
compare (``Figure``). The family modules (fit, decode, prefill) turn setups into
``Evaluation``s: one comparison of a figure with its physical limit on both readings
(``Side``), or why it could not be made.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, NamedTuple

from kvrecords.checks.context import ModelLookup, RecordContext
from kvrecords.checks.plausibility.links import SETTINGS
from kvrecords.dataset.document import JsonPath
from kvrecords.dataset.hardware import HardwareIndex
from kvrecords.dataset.records import Run
from kvrecords.kv.arithmetic import element_bits, sequence_cache
from kvrecords.kv.geometry import Model
from kvrecords.kv.hardware import Hardware, family_reading
from kvrecords.kv.units import Unknown, exact, percent, unknown_reasons
from kvrecords.kv.weights import (
    ParameterBillions,
    WeightReadings,
    engine_floor,
    parameter_billions,
    readings,
    weight_format,
)
from kvrecords.problems import Rule

# Techniques under which a measured TTFT may be served from reused KV, not a full prefill.
PREFIX_REUSE = ("prefix_caching", "radix_reuse", "cache_aware_routing", "kv_offload")


# ---- evaluations ----------------------------------------------------------------------------


class Side(NamedTuple):
    """One reading of a check: the figure, its physical limit, and the working of each."""

    value: Fraction
    limit: Fraction
    subject: str  # the value with its working, e.g. "12.57 GiB weights + 9.16 GiB KV"
    working: str  # the limit with its working

    def within(self) -> bool:
        return self.value <= self.limit

    def margin(self) -> str:
        """``12.57 GiB is 39% of 31.84 GiB``: the value as a share of its limit."""
        return f"{self.subject} is {percent(self.value, self.limit)} of {self.working}"


class Evaluation(NamedTuple):
    """One comparison of a figure with its physical limit on both readings, or why it could
    not be made."""

    rule: Rule
    check: str  # what is compared, e.g. "run 'warm': decode decode_tokens_per_s"
    path: JsonPath  # where a violation is reported
    favourable: Side | None = None  # the reading most favourable to the record
    likely: Side | None = None  # None: the same as the favourable one
    expect_within: bool = True  # False: the record claims value > limit (does not fit)
    assumptions: tuple[str, ...] = ()  # what the likely reading assumes
    unfirm: tuple[str, ...] = ()  # figures rated low: the favourable bound only warns
    notes: tuple[str, ...] = ()  # simplifications, shown but not changing the verdict
    skipped: str | None = None  # why the check was not run

    @property
    def checked(self) -> bool:
        return self.skipped is None and self.favourable is not None

    def _holds(self, side: Side | None) -> bool:
        return side is None or side.within() == self.expect_within

    @property
    def impossible(self) -> bool:
        """Violated on the reading most favourable to the record."""
        return self.checked and not self._holds(self.favourable)

    @property
    def violated(self) -> bool:
        return self.impossible or (self.checked and not self._holds(self.likely))

    @property
    def severity(self) -> str:
        return "error" if self.impossible and not self.unfirm else "warning"

    @property
    def value(self) -> Fraction | None:
        return None if self.favourable is None else self.favourable.value

    @property
    def limit(self) -> Fraction | None:
        return None if self.favourable is None else self.favourable.limit

    def margin(self) -> str:
        assert self.favourable is not None
        return self.favourable.margin()

    def readings(self) -> str:
        """Both bounds, as explain prints them."""
        assert self.favourable is not None
        text = f"favourable: {self.favourable.margin()}"
        if self.likely is not None and self.likely != self.favourable:
            text += f"; likely: {self.likely.margin()}"
        return text

    def summary(self) -> str:
        if not self.checked:
            return f"{self.rule.code} {self.check}: not checked: {self.skipped}"
        if self.impossible:
            verdict = "VIOLATED on any reading"
        elif self.violated:
            verdict = "VIOLATED on the likely reading"
        else:
            verdict = "ok"
        return f"{self.rule.code} {self.check}: {self.readings()} [{verdict}]{self.qualifiers()}"

    def qualifiers(self) -> str:
        """The simplifications and assumptions behind the comparison."""
        text = ""
        if self.notes:
            text += f"; {'; '.join(self.notes)}"
        if self.unfirm:
            text += f"; rests on figures rated low: {'; '.join(self.unfirm)}"
        if self.assumptions:
            text += f" (likely reading assumes: {'; '.join(self.assumptions)})"
        return text


def skip(rule: Rule, check: str, path: JsonPath, reason: str) -> Evaluation:
    return Evaluation(rule, check, path, skipped=reason)


# ---- inputs ---------------------------------------------------------------------------------


class HardwareReading(NamedTuple):
    """The accelerator a run names, on both readings (one part: both the same)."""

    favourable: Hardware
    likely: Hardware
    assumption: str | None


class KvReading(NamedTuple):
    """Cache bytes one sequence holds on the accelerator, on both readings."""

    favourable: Fraction
    likely: Fraction
    favourable_text: str
    likely_text: str
    assumption: str | None
    notes: tuple[str, ...]


class Drafting(NamedTuple):
    """Speculative decoding as a run states it (method None: none)."""

    method: str | None
    draft_tokens: int | None
    acceptance: Fraction | None
    draft_model: Model | None
    draft_model_id: str | None


class Figure(NamedTuple):
    """One measured figure a plausibility check compares: where it stands and how to read it."""

    kind: str  # decode | ttft | prefill
    path: JsonPath
    name: str  # as messages name it
    statistic: str | None
    scope: str | None  # per_sequence | aggregate | None


class RunSetup(NamedTuple):
    """What a run was measured with: its own settings, else the record's."""

    label: str  # "run 'warm'"
    path: JsonPath  # where a fit problem is reported
    model: Model | None
    model_display: str
    hardware: HardwareReading | Unknown
    device_count: int | None
    engine: str | None
    weights: WeightReadings | Unknown
    weights_offloaded: bool
    refused_to_start: bool  # the engine refused the configuration: nothing ran, nothing fit
    techniques: tuple[str, ...]
    concurrency: int | str | None  # a number, "unbounded", or None when not stated
    requests: int | None  # requests in the run, when stated
    drafting: Drafting | Unknown
    kv_fit: KvReading | Unknown  # KV at the longest context a sequence is known to reach
    kv_decode: KvReading | Unknown  # KV at the context every sequence is known to reach
    prefill_context: Fraction | Unknown  # prompt tokens of a full prefill
    figures: tuple[Figure, ...]
    reuse: tuple[str, ...]  # why a TTFT of this run may not be a full prefill


class Inputs(NamedTuple):
    """Every file a record's plausibility checks read, already loaded."""

    hardware: HardwareIndex
    models: ModelLookup | None = None


def measured_value(value: Any, *, lenient_high: bool) -> Fraction | None:
    """A measured figure: a number, ``{about: x}``, a range (the lenient end), or a bound that
    limits it on the lenient side ({max: x} of a time, {min: x} of a rate)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return exact(value)
    if isinstance(value, dict):
        if "about" in value:
            return measured_value(value["about"], lenient_high=lenient_high)
        if "min" in value and "max" in value:
            return measured_value(
                value["max" if lenient_high else "min"], lenient_high=lenient_high
            )
        if set(value) == {"min"} and not lenient_high:
            return measured_value(value["min"], lenient_high=lenient_high)
        if set(value) == {"max"} and lenient_high:
            return measured_value(value["max"], lenient_high=lenient_high)
    return None


def resolve_hardware(
    stated: dict[str, Any], index: HardwareIndex, where: str
) -> HardwareReading | Unknown:
    """The accelerator (or family) a hardware mapping names, or why there is none to use."""
    accelerator, family = stated.get("accelerator"), stated.get("family")
    if accelerator is not None:
        state = index.get(accelerator)
        if state is None:
            return Unknown(f"hardware/{accelerator}.yaml does not exist")
        if state.hardware is None:
            return Unknown(f"{state.display} has problems")
        return HardwareReading(state.hardware, state.hardware, None)
    if family is not None:
        members = index.families.get(family, ())
        if not members:
            return Unknown(f"no hardware file declares family {family}")
        generous = family_reading(family, members, generous=True)
        if len(members) == 1:
            return HardwareReading(generous, generous, None)
        least = family_reading(family, members, generous=False)
        assumption = (
            f"the {family} family's least generous member ({', '.join(m.id for m in members)})"
        )
        return HardwareReading(generous, least, assumption)
    return Unknown(f"{where}.accelerator is null")


def _weights(stated: Any, model: Model, engine: str | None) -> WeightReadings | Unknown:
    found = None if stated is None else weight_format(str(stated))
    if stated is not None and found is None:
        return Unknown(f"weights precision {stated!r} is not in the vocabulary ({SETTINGS.code})")
    return readings(found, model.dtype, engine, model.published_precisions)


def kv_reading(
    model: Model,
    context: int | None,
    dtype: Any,
    dtype_stated: bool,
    state_dtype: str | None,
    engine: str | None,
) -> KvReading | Unknown:
    """One sequence's cache at ``context`` on both readings of the KV dtype."""
    if context is None:
        return KvReading(
            Fraction(0), Fraction(0), "no KV", "no KV", None, ("KV not counted: no context stated",)
        )
    names = list(dtype.values()) if isinstance(dtype, dict) else [dtype]
    try:
        likely = min(names, key=element_bits)
    except ValueError as error:
        return Unknown(str(error))
    notes = ["KV at the smallest of the stated types"] if len(set(names)) > 1 else []
    favourable, assumption = likely, None
    if not dtype_stated:
        floor = engine_floor(engine).kv_dtype
        if element_bits(floor) < element_bits(likely):
            favourable = floor
        assumption = (
            f"KV dtype {likely} assumed (not stated; {engine or 'the engine'} offers {floor})"
        )
    low = sequence_cache(model, favourable, context, state_dtype)
    high = sequence_cache(model, likely, context, state_dtype)
    notes += [note for note in dict.fromkeys(low.notes + high.notes)]
    if low.bytes == high.bytes:
        assumption = None
    return KvReading(low.bytes, high.bytes, low.working, high.working, assumption, tuple(notes))


def _context_forms(value: Any) -> tuple[int | None, int | None, Fraction | Unknown]:
    """A run's context as (a length some sequence reaches, a length every sequence reaches,
    the prompt tokens of one prefill or why not)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value, value, Fraction(value)
    if isinstance(value, dict):
        if "about" in value:
            about = exact(value["about"])
            return math.floor(about), math.floor(about), about
        if "min" in value and "max" in value:
            low = exact(value["min"])
            return math.floor(exact(value["max"])), math.floor(low), low
        if len(value) == 1:
            ((statistic, number),) = value.items()
            reach = math.floor(exact(number))
            every = reach if statistic == "min" else None
            return reach, every, Unknown(f"the context is a distribution ({statistic} {number:,})")
    return None, None, Unknown("the context is not stated")


def _drafting(stated: dict[str, Any] | None, models: ModelLookup | None) -> Drafting | Unknown:
    if stated is None:
        return Drafting(None, None, None, None, None)
    acceptance = stated.get("acceptance_rate")
    draft_id = stated.get("draft_model")
    draft = None
    if draft_id is not None:
        draft = models(draft_id) if models is not None else None
        if draft is None:
            return Unknown(f"draft model {draft_id!r} is not a sound model file ({SETTINGS.code})")
    return Drafting(
        stated["method"],
        stated.get("draft_tokens"),
        None if acceptance is None else exact(acceptance),
        draft,
        draft_id,
    )


def _run_figures(run: Run, data: dict[str, Any]) -> tuple[Figure, ...]:
    figures = []
    for index, metric in enumerate(run.stated.get("metrics", [])):
        path: JsonPath = (*run.path, "metrics", index, "value")
        name, statistic = metric["name"], metric["statistic"]
        if name == "decode_tokens_per_s":
            figures.append(Figure("decode", path, name, statistic, metric.get("scope")))
        elif name == "output_tokens_per_s":
            figures.append(Figure("decode", path, name, statistic, "aggregate"))
        elif name == "ttft_ms":
            figures.append(Figure("ttft", path, name, statistic, None))
        elif name == "prefill_tokens_per_s":
            figures.append(Figure("prefill", path, name, statistic, metric.get("scope")))
    return tuple(figures)


def _reuse(techniques: tuple[str, ...], metrics: list[dict[str, Any]]) -> tuple[str, ...]:
    """Why a run's TTFT may come from reused KV: a reuse technique on in it (whatever its
    role: an `only` run with prefix caching may have hit), or a stated hit rate."""
    reasons = [t for t in techniques if t in PREFIX_REUSE]
    if any(m["name"] == "hit_rate" for m in metrics):
        reasons.append("a hit rate is stated")
    return tuple(reasons)


def run_setups(record: RecordContext, inputs: Inputs) -> list[RunSetup]:
    """Each run's setup."""
    return [_run_setup(record, inputs, run) for run in record.runs]


def _setup(
    record: RecordContext,
    inputs: Inputs,
    *,
    label: str,
    path: JsonPath,
    settings: Mapping[str, Any],
    model_id: str | None,
    techniques: tuple[str, ...],
    context: Any,
    figures: tuple[Figure, ...],
    reuse: tuple[str, ...],
    hardware_where: str,
) -> RunSetup:
    data = record.data
    methodology = data["methodology"]
    basis = data["kv_bytes_basis"]

    def setting(key: str) -> Any:
        return settings[key] if key in settings else methodology.get(key)

    model: Model | None = record.model
    model_display = record.model_display
    if model_id is not None and model_id != data["model"]:
        model = inputs.models(model_id) if inputs.models is not None else None
        model_display = f"models/{model_id}"
    hardware_stated = setting("hardware")
    engine = (setting("engine") or {}).get("name")
    hardware = resolve_hardware(hardware_stated, inputs.hardware, hardware_where)
    placement = setting("weights_placement") or {}
    concurrency = setting("concurrency")
    if "kv_dtype" in settings:
        dtype, dtype_stated = settings["kv_dtype"], bool(settings.get("kv_dtype_stated", False))
    else:
        dtype, dtype_stated = basis["dtype"], bool(basis["dtype_stated"])
    reach, every, prefill_context = _context_forms(context)
    weights: WeightReadings | Unknown
    kv_fit: KvReading | Unknown
    kv_decode: KvReading | Unknown
    if model is None:
        weights = kv_fit = kv_decode = Unknown(f"{model_display} is not loaded")
    else:
        weights = _weights(setting("weights_precision"), model, engine)
        state_dtype = basis.get("state_dtype")
        kv_fit = kv_reading(model, reach, dtype, dtype_stated, state_dtype, engine)
        kv_decode = (  # one context for both, the common case: the reading is the same
            kv_fit
            if every == reach
            else kv_reading(model, every, dtype, dtype_stated, state_dtype, engine)
        )
        if every is None and reach is not None and isinstance(kv_decode, KvReading):
            kv_decode = kv_decode._replace(notes=("KV not counted: the context is a distribution",))
    return RunSetup(
        label=label,
        path=path,
        model=model,
        model_display=model_display,
        hardware=hardware,
        device_count=_whole(hardware_stated.get("count")),
        engine=engine,
        weights=weights,
        weights_offloaded=placement.get("on") == "offloaded",
        refused_to_start=settings.get("outcome") == "refused_to_start",
        techniques=techniques,
        concurrency=concurrency,
        requests=_whole(settings.get("requests")),
        drafting=_drafting(setting("speculative_decoding"), inputs.models),
        kv_fit=kv_fit,
        kv_decode=kv_decode,
        prefill_context=prefill_context,
        figures=figures,
        reuse=reuse,
    )


def _run_setup(record: RecordContext, inputs: Inputs, run: Run) -> RunSetup:
    own_hardware = "hardware" in run.stated and run.stated["hardware"].get("accelerator")
    path: JsonPath = (*run.path, "hardware", "accelerator") if own_hardware else (*run.path, "id")
    where = f"runs[{run.position}].hardware" if "hardware" in run.stated else "methodology.hardware"
    techniques = tuple(run.techniques)
    return _setup(
        record,
        inputs,
        label=f"run '{run.id}'",
        path=path,
        settings=run.stated,
        model_id=run.stated.get("model"),
        techniques=techniques,
        context=run.context(record.data),
        figures=_run_figures(run, record.data),
        reuse=_reuse(techniques, run.stated.get("metrics", [])),
        hardware_where=where,
    )


def _whole(count: Any) -> int | None:
    """A count as an integer: the schema's ``integer`` admits ``4.0`` (JSON Schema counts a
    number with no fraction as one), which the checks read as 4."""
    return int(count) if isinstance(count, float) and count.is_integer() else count


def _count(setup: RunSetup) -> int | Unknown:
    if setup.device_count is None:
        return Unknown("the accelerator count is null")
    return setup.device_count


def rated_low(rating: str, what: str, hardware: Hardware) -> list[str]:
    return [f"{what} rated low in {hardware.display}"] if rating == "low" else []


def listed(*items: str | None) -> tuple[str, ...]:
    return tuple(item for item in items if item is not None)


class CommonInputs(NamedTuple):
    """What every check of a run needs."""

    hardware: HardwareReading
    devices: int  # accelerators
    parameters: ParameterBillions  # the total or the active count, as the check asked
    weights: WeightReadings


def common_inputs(setup: RunSetup, which: str) -> CommonInputs | Unknown:
    """The hardware, count, parameter count (``which``: total or active) and weights every
    check needs, or why not."""
    parameters = (
        parameter_billions(setup.model.parameters, which, setup.model_display)
        if setup.model is not None
        else Unknown(f"{setup.model_display} is not loaded")
    )
    count = _count(setup)
    missing = unknown_reasons(setup.hardware, count, parameters, setup.weights)
    if missing:
        return Unknown("; ".join(missing))
    assert isinstance(setup.hardware, HardwareReading) and isinstance(count, int)
    assert isinstance(parameters, ParameterBillions) and isinstance(setup.weights, WeightReadings)
    return CommonInputs(setup.hardware, count, parameters, setup.weights)
