"""A record's KV bases: the main ``kv_bytes_basis`` and each alternative merged over its settings.

Every reader of the bases (the checks, explain, export, the site, the scaffold) takes them from
here, so an alternative means the same thing everywhere: the main basis with its keys replaced.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from kvrecords.dataset.document import JsonPath, value_or_none
from kvrecords.kv.arithmetic import KvReport, kv_report, parse_element_type
from kvrecords.kv.geometry import Model

MAIN_BASIS = "main basis"


class Basis(NamedTuple):
    """One basis as stated: where it stands, how messages name it, its merged fields."""

    path: JsonPath
    label: str  # "main basis" or "alternatives[0]"
    stated: dict[str, Any]


# What an alternative takes from the main basis when it does not say: the settings, never the
# main basis's figures (an alternative's bytes per token and KV at context are its own).
INHERITED_SETTINGS = ("dtype", "dtype_stated", "state_dtype", "layers_counted", "context_tokens")


def bases(record: dict[str, Any]) -> list[Basis]:
    """The main basis, then each alternative merged over the main basis's settings."""
    main = record["kv_bytes_basis"]
    found = [Basis(("kv_bytes_basis",), MAIN_BASIS, main)]
    settings = {key: main[key] for key in INHERITED_SETTINGS if key in main}
    for index, alternative in enumerate(main.get("alternatives", [])):
        path = ("kv_bytes_basis", "alternatives", index)
        found.append(Basis(path, f"alternatives[{index}]", {**settings, **alternative}))
    return found


def named_basis(record: dict[str, Any], which: object) -> Basis | None:
    """The basis a fit claim names (``main`` or an alternative's index); None when none is."""
    found = bases(record)
    if which == "main":
        return found[0]
    if isinstance(which, int) and not isinstance(which, bool) and 0 <= which < len(found) - 1:
        return found[which + 1]
    return None


def basis_report(model: Model, stated: dict[str, Any]) -> KvReport:
    """The arithmetic a basis describes; ``ValueError`` when it does not apply to the model."""
    state_dtype = stated.get("state_dtype")
    return kv_report(
        model,
        parse_element_type(stated["dtype"]),
        stated.get("context_tokens") or 0,
        stated["layers_counted"],
        parse_element_type(state_dtype) if state_dtype else None,
    )


# ---- runs -------------------------------------------------------------------------------------


class Run(NamedTuple):
    """One run of a record, where it stands, and where its context is stated.

    A setting the run leaves out is the record's: the basis's context, the record's
    techniques (none, written ``baseline``, for a baseline run)."""

    position: int
    stated: dict[str, Any]
    context_path: JsonPath  # the run's own context_tokens, else the main basis's
    record_techniques: tuple[str, ...]

    def context(self, record: dict[str, Any]) -> Any:
        """The run's context as stated (a count, {about}, a range, a statistic, or None)."""
        if "context_tokens" in self.stated:
            return self.stated["context_tokens"]
        return record["kv_bytes_basis"].get("context_tokens")

    @property
    def techniques(self) -> list[str]:
        if "techniques" in self.stated:
            return list(self.stated["techniques"])
        return ["baseline"] if self.stated["role"] == "baseline" else list(self.record_techniques)

    @property
    def id(self) -> str:
        return str(self.stated["id"])

    @property
    def path(self) -> JsonPath:
        return ("runs", self.position)


BASELINE = "baseline"
# What the model is rather than what serving switches on: a chart's series leaves these out
# (a run's tooltip and page still name them) unless a run has nothing else; a comparison on
# one model differs by none of them.
ARCHITECTURE = frozenset(
    {"mla", "sliding_window", "hybrid_linear_attention", "sparse_attention", "kv_sharing"}
)


def run_model(run: Run, record: dict[str, Any]) -> str:
    """The model a run ran: its own, else the record's."""
    return str(run.stated.get("model") or record["model"])


def technique_difference(start: Run, end: Run, record: dict[str, Any]) -> tuple[str, ...]:
    """The techniques a comparison's treatment run has and its baseline run has not.

    A run's techniques are its own, else the record's (none for a baseline, as the schema
    says). The model's own design (MLA, windows, linear or sparse attention, shared layers)
    differs only between arms that run different models: a comparison on one model, such as a
    version upgrade or an engine against another, differs by none of it, whatever the record
    is about.
    """
    before = set(start.techniques)
    same_model = run_model(start, record) == run_model(end, record)
    return tuple(
        t
        for t in end.techniques
        if t not in before and t != BASELINE and not (same_model and t in ARCHITECTURE)
    )


class Measured(NamedTuple):
    """One metric of a run and where it stands in the file."""

    run: Run
    position: int
    stated: dict[str, Any]

    @property
    def path(self) -> JsonPath:
        return (*self.run.path, "metrics", self.position)

    @property
    def value_path(self) -> JsonPath:
        return (*self.path, "value")


def runs(record: dict[str, Any]) -> list[Run]:
    """A record's runs, in file order."""
    found = []
    for index, run in enumerate(record.get("runs", [])):
        own = "context_tokens" in run
        context_path = (
            ("runs", index, "context_tokens") if own else ("kv_bytes_basis", "context_tokens")
        )
        found.append(Run(index, run, context_path, tuple(record.get("techniques", []))))
    return found


def run_by_id(record: dict[str, Any]) -> dict[str, Run]:
    """The runs by id (the first of a duplicated id)."""
    found: dict[str, Run] = {}
    for run in runs(record):
        found.setdefault(run.id, run)
    return found


def measured(run: Run, name: str, statistic: str | None = None) -> Measured | None:
    """The run's first metric ``name`` (with ``statistic`` when given), or None."""
    for index, metric in enumerate(run.stated.get("metrics", [])):
        if metric["name"] == name and statistic in (None, metric["statistic"]):
            return Measured(run, index, metric)
    return None


HEADLINE_FIGURES = (
    "cold_ttft_ms",
    "warm_ttft_ms",
    "hit_rate",
    "decode_tokens_per_s",
    "output_tokens_per_s",
    "speedup",
    "speedup_techniques",
)


def headline_figures(record: dict[str, Any]) -> dict[str, Any]:
    """The figures a table row shows beside the card: cold and warm TTFT with the speedup
    between them (the record's first TTFT speedup) and the techniques its runs differ by, and
    the headline run's hit rate, per-sequence decode rate and aggregate output rate (two
    quantities, never one column)."""
    figures: dict[str, Any] = dict.fromkeys(HEADLINE_FIGURES)
    by_id = run_by_id(record)
    for comparison in record.get("comparisons", []):
        if comparison["kind"] == "speedup" and comparison["metric"] == "ttft_ms":
            statistic = comparison["statistic"]
            for end, field in (("from", "cold_ttft_ms"), ("to", "warm_ttft_ms")):
                run = by_id.get(comparison[end])
                found = measured(run, "ttft_ms", statistic) if run else None
                figures[field] = found.stated["value"] if found else None
            figures["speedup"] = comparison["stated"]
            baseline, treatment = by_id.get(comparison["from"]), by_id.get(comparison["to"])
            if baseline is not None and treatment is not None:
                figures["speedup_techniques"] = list(
                    technique_difference(baseline, treatment, record)
                )
            break
    headline = by_id.get(record.get("headline_run", ""))
    if headline is not None:
        for name in ("hit_rate", "decode_tokens_per_s", "output_tokens_per_s"):
            found = measured(headline, name)
            figures[name] = found.stated["value"] if found else None
    return figures


# ---- the hardware a record names -------------------------------------------------------------


def accelerator_links(data: dict[str, Any]) -> list[tuple[JsonPath, str, bool]]:
    """Every accelerator id (False) or family (True) a record names, with where it names it."""
    links: list[tuple[JsonPath, str, bool]] = []
    places: list[JsonPath] = [("methodology", "hardware")]
    places += [("runs", i, "hardware") for i in range(len(value_or_none(data, "runs") or []))]
    for place in places:
        for key, family in (("accelerator", False), ("family", True)):
            named = value_or_none(data, *place, key)
            if isinstance(named, str):
                links.append(((*place, key), named, family))
    for index, claim in enumerate(value_or_none(data, "kv_bytes_basis", "fit_claims") or []):
        links.append(
            (("kv_bytes_basis", "fit_claims", index, "accelerator"), claim["accelerator"], False)
        )
    return links
