"""A record drafted from a submission issue (``kvrecords new --from-issue``).

Every answer lands in the field it names, read as strictly as the validator reads the field.
The headline figures become metrics of runs: a cold TTFT a baseline run, a warm TTFT and a hit
rate the treatment run (the headline), or one run when the source measured one setting; the
card repeats the headline run's figures. An answer that cannot be read leaves its field null
with a TODO reason quoting it (a run's figure: a TODO note on the run), each run's note asks
for the statistic the form does not, and answers with no field of their own (the other runs,
anything else) go into the notes placeholder. KV206 rejects every placeholder until a
maintainer has dealt with it. The rest of the draft is ``scaffold``'s, as for ``kvrecords new``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kvrecords.dataset.document import Document, read_document
from kvrecords.dataset.layout import HARDWARE_DIR, ID_PATTERN, MODELS_DIR
from kvrecords.kv.arithmetic import parse_element_type
from kvrecords.kv.weights import weight_format
from kvrecords.problems import closest
from kvrecords.tools.fmt import load_schema
from kvrecords.tools.issue_form import (
    DECODE_RATE_SCOPES,
    LABELS,
    choices,
    date,
    figure,
    lines_of,
    one_line,
    paragraph,
    url,
    whole_number,
)
from kvrecords.tools.issue_runs import (
    DEFINITION_TODO,
    STATISTIC_TODO,
    UNKNOWN_DEFINITION,
    TableRuns,
    table_runs,
)
from kvrecords.tools.scaffold import (
    MAX_SLUG,
    RUN_LABEL,
    ContextPastModel,
    ScaffoldInputs,
    draft_record,
    finish_record,
)

# The headline answers: how each is read, and the metric it is in a run.
_RUN_FIGURES = {
    "ttft_ms": ("ms", "ttft_ms"),
    "cold_ttft_ms": ("ms", "ttft_ms"),
    "warm_ttft_ms": ("ms", "ttft_ms"),
    "hit_rate": ("fraction", "hit_rate"),
    "decode_tokens_per_s": ("rate", "decode_tokens_per_s"),
    "prefill_tokens_per_s": ("rate", "prefill_tokens_per_s"),
}
_COMPARED = ("cold_ttft_ms", "warm_ttft_ms", "hit_rate")  # answers that make two runs
_CARD = {"ttft_ms": "measured_ttft_ms_at_ctx", "decode_tokens_per_s": "measured_tps_at_ctx"}
_VENDOR_WORDS = ("nvidia", "amd", "apple", "geforce", "instinct")
_MODEL_SPELLINGS = ("name", "hf_repo")
_HARDWARE_SPELLINGS = ("name",)


def scaffold_from_issue(
    root: Path, answers: dict[str, str], overrides: dict[str, Any]
) -> tuple[str, str]:
    """The slug and YAML text of a record drafted from a submission issue's answers.

    ``answers`` come from ``issue_form.parse_issue_body``; ``overrides`` (fields of
    ``ScaffoldInputs``, as given on the command line) win over them. A model with no file in
    models/ is a TODO naming the closest ids. ``ValueError`` when the model or engine is not
    answered, or the engine or KV dtype, which the schema cannot do without, cannot be read;
    ``FileExistsError`` when the record exists.
    """
    reasons: dict[str, str] = {}

    def read(answer_id: str, reader: Callable[[str], Any], field: str) -> Any:
        answer = answers.get(answer_id)
        if answer is None:
            return None
        try:
            return reader(answer)
        except ValueError as error:
            reasons[field] = _unread(answer, str(error))
            return None

    model_todo = None
    model_id = overrides.get("model_id")
    if model_id is None:
        model_id, model_todo = _issue_model(root, answers.get("model"))
    engine = overrides.get("engine") or _issue_engine(answers.get("engine"))
    accelerator = None
    if answers.get("hardware") is not None:
        accelerator = _issue_hardware(root, answers["hardware"])
        if accelerator is None:
            reasons["methodology.hardware.accelerator"] = _unread(
                answers["hardware"],
                _no_file(root, HARDWARE_DIR, answers["hardware"], _HARDWARE_SPELLINGS),
            )
    techniques = choices(answers.get("techniques", ""))
    inputs = ScaffoldInputs(
        slug="",
        model_id=model_id,
        dtype=one_line(answers.get("kv_dtype", "bf16")),
        dtype_stated="kv_dtype" in answers,
        context_tokens=read("context_tokens", whole_number, "kv_bytes_basis.context_tokens"),
        layers_counted="cache",
        source_url=read("source_url", url, "methodology.source.url"),
        publisher=one_line(answers.get("publisher", "TODO: who published the source")),
        techniques=[t for t in techniques if t in _techniques(root)],
        accelerator=accelerator,
        accelerator_count=read("accelerator_count", whole_number, "methodology.hardware.count"),
        engine=engine,
        engine_version=_line_or_none(answers.get("engine_version")),
        locator=_line_or_none(answers.get("locator")),
    )
    inputs = inputs._replace(**overrides)
    for name, field in (
        ("context_tokens", "kv_bytes_basis.context_tokens"),
        ("source_url", "methodology.source.url"),
        ("accelerator", "methodology.hardware.accelerator"),
        ("accelerator_count", "methodology.hardware.count"),
    ):
        if name in overrides:
            reasons.pop(field, None)  # the command line answered it
    if not inputs.slug:
        inputs = inputs._replace(slug=_issue_slug(inputs))
    try:
        parse_element_type(inputs.dtype)
    except ValueError as error:
        raise ValueError(f"the KV cache dtype answer: {error}; give --dtype") from None
    try:
        record, geometry_reasons = draft_record(root, inputs, model_todo)
    except ContextPastModel as error:
        if "context_tokens" in overrides:
            raise
        reasons["kv_bytes_basis.context_tokens"] = _unread(answers["context_tokens"], str(error))
        inputs = inputs._replace(context_tokens=None)
        record, geometry_reasons = draft_record(root, inputs, model_todo)
    reasons.update(geometry_reasons)

    methodology = record["methodology"]
    source = methodology["source"]
    source["title"] = _line_or_none(answers.get("source_title"))
    source["published"] = read("published", date, "methodology.source.published")
    flags = lines_of(answers.get("engine_flags", ""))
    if flags:
        methodology["engine"]["flags"] = flags
    weights = _line_or_none(answers.get("weights_precision"))
    if weights is not None and weight_format(weights) is None:
        # the source's words; the precision waits, listed with a TODO, for a vocabulary name
        methodology["weights_stated_as"] = weights
        weights = None
    methodology["weights_precision"] = weights
    methodology["concurrency"] = read("concurrency", whole_number, "methodology.concurrency")
    if answers.get("workload"):
        methodology["workload"] = paragraph(answers["workload"])
    table = table_runs(answers.get("runs", ""))
    if table.runs:
        _runs_from_table(record, table.runs)
    else:
        _issue_runs(record, answers, reasons)
    unknown_techniques = [t for t in techniques if t not in _techniques(root)]
    record["notes"] = _issue_notes(answers, unknown_techniques, table)
    return inputs.slug, finish_record(root, record, reasons)


def _issue_runs(record: dict[str, Any], answers: dict[str, str], reasons: dict[str, str]) -> None:
    """The runs the headline answers describe, the headline run, and the card from it; an
    unreadable card figure gets its reason in ``reasons``, a run's in the run's note."""
    figures: dict[str, Any] = {}
    unread: dict[str, str] = {}
    for answer_id, (kind, _) in _RUN_FIGURES.items():
        if answer_id in answers:
            try:
                figures[answer_id] = figure(answers[answer_id], kind)
            except ValueError as error:
                unread[answer_id] = _unread(answers[answer_id], str(error))
    for answer_id, field in _CARD.items():
        if answer_id in unread:
            reasons[field] = unread.pop(answer_id)
    runs: list[dict[str, Any]] = []
    if "cold_ttft_ms" in answers:
        cold = {"id": "cold", "label": "prefix not cached (cold)", "role": "baseline"}
        runs.append(_issue_run(cold, ["cold_ttft_ms"], figures, unread))
    headline: dict[str, Any]
    if any(answer_id in answers for answer_id in _COMPARED):
        # the form's headline TTFT is the warm one when the warm TTFT is not answered apart
        ttft = "warm_ttft_ms" if "warm_ttft_ms" in answers else "ttft_ms"
        headline = {"id": "warm", "label": "prefix served from cache (warm)", "role": "treatment"}
        own = [ttft, "hit_rate"]
    else:
        headline = {"id": "main", "label": RUN_LABEL, "role": "only"}
        own = ["ttft_ms"]
    own += ["decode_tokens_per_s", "prefill_tokens_per_s"]
    scope = DECODE_RATE_SCOPES.get(answers.get("decode_rate_scope", ""))
    runs.append(_issue_run(headline, own, figures, unread, scope))
    record["runs"] = runs
    record["headline_run"] = headline["id"]
    given = {metric["name"]: metric["value"] for metric in headline["metrics"]}
    # copies, as in _runs_from_table
    record["measured_ttft_ms_at_ctx"] = copy.deepcopy(figures.get("ttft_ms", given.get("ttft_ms")))
    record["measured_tps_at_ctx"] = copy.deepcopy(figures.get("decode_tokens_per_s"))


def _runs_from_table(record: dict[str, Any], runs: list[dict[str, Any]]) -> None:
    """The table's runs, the first treatment (else the first run) as the headline, and the
    card repeating its figures."""
    record["runs"] = runs
    headline = next((run for run in runs if run["role"] == "treatment"), runs[0])
    record["headline_run"] = headline["id"]
    # copies: one object in two places would be written as a YAML anchor, which is refused
    given = {metric["name"]: copy.deepcopy(metric["value"]) for metric in headline["metrics"]}
    record["measured_ttft_ms_at_ctx"] = given.get("ttft_ms")
    record["measured_tps_at_ctx"] = given.get("decode_tokens_per_s")


def _issue_run(
    run: dict[str, Any],
    answer_ids: list[str],
    figures: dict[str, Any],
    unread: dict[str, str],
    scope: str | None = None,
) -> dict[str, Any]:
    """A run with the figures of ``answer_ids`` as metrics, and a note of what to check: the
    answers that could not be read, each figure's statistic, a hit rate's definition."""
    run["metrics"] = []
    for answer_id in answer_ids:
        if answer_id not in figures:
            continue
        name = _RUN_FIGURES[answer_id][1]
        if name == "decode_tokens_per_s" and scope == "aggregate":
            name = "output_tokens_per_s"  # an aggregate rate has its own metric
        metric = {"name": name, "statistic": "single", "value": figures[answer_id]}
        if name == "hit_rate":
            metric["definition"] = dict(UNKNOWN_DEFINITION)
        if name == "decode_tokens_per_s" and scope == "per_sequence":
            metric["scope"] = scope
        run["metrics"].append(metric)
    notes = [unread[answer_id] for answer_id in answer_ids if answer_id in unread]
    if run["metrics"]:
        defined = any(metric["name"] == "hit_rate" for metric in run["metrics"])
        notes.append(STATISTIC_TODO + (DEFINITION_TODO if defined else ""))
    if notes:
        run["note"] = "; ".join(notes)
    return run


def _issue_model(root: Path, answer: str | None) -> tuple[str, str | None]:
    """The model id the answer names, or a slug made of the answer and the TODO that says
    which model files come closest and what to do (the rest of the draft does not wait)."""
    if answer is None:
        raise ValueError("the issue does not name the model; give --model")
    found = _find_id(root, MODELS_DIR, answer, _MODEL_SPELLINGS)
    if found is not None:
        return found, None
    why = _no_file(root, MODELS_DIR, answer, _MODEL_SPELLINGS)
    todo = _unread(
        answer,
        f"{why}; write the model's id here (add its file first with kvrecords model import-hf "
        "if it has none) and the KV figures from kvrecords kv, or delete this draft and run "
        "kvrecords new --from-issue again with --model",
    )
    slug = "-".join(re.findall(r"[a-z0-9.]+", one_line(answer).lower())).strip(".-")
    return slug or "model", todo


def _issue_hardware(root: Path, answer: str) -> str | None:
    return _find_id(root, HARDWARE_DIR, answer, _HARDWARE_SPELLINGS)


def _issue_engine(answer: str | None) -> str:
    if answer is None:
        raise ValueError("the issue does not name the engine; give --engine")
    name = "-".join(one_line(answer).lower().split())
    if not ID_PATTERN.fullmatch(name.replace("_", "-").replace("+", "-")):
        raise ValueError(
            f"the Engine answer {one_line(answer)!r} is not an engine name such as vllm, sglang "
            "or llama.cpp; give --engine"
        )
    return name


def _find_id(root: Path, folder: str, answer: str, keys: tuple[str, ...]) -> str | None:
    """The one file of ``folder`` whose id, name or Hugging Face repository (or its last part)
    the answer spells, ignoring case, spaces and punctuation; None when none or several do."""
    variants = {_key(one_line(answer)), _key(one_line(answer).rsplit("/", 1)[-1])}
    for word in _VENDOR_WORDS:  # "NVIDIA H100 SXM" is h100-sxm
        variants |= {v.removeprefix(word) for v in set(variants)}
    found = set()
    for file_id, spellings in _spellings(root, folder, keys).items():
        keyed = {_key(spelling) for spelling in spellings}
        keyed |= {_key(spelling.rsplit("/", 1)[-1]) for spelling in spellings}
        if keyed & variants:
            found.add(file_id)
    return found.pop() if len(found) == 1 else None


def _spellings(root: Path, folder: str, keys: tuple[str, ...]) -> dict[str, list[str]]:
    """Each file's id with its name and repository (the ``keys`` it states) in ``folder``."""
    found = {}
    for path in sorted((root / folder).glob("*.yaml")):
        spellings = [path.stem]
        document = read_document(path, f"{folder}/{path.name}")
        if isinstance(document, Document) and isinstance(document.data, dict):
            values = (document.data.get(key) for key in keys)
            spellings += [value for value in values if isinstance(value, str)]
        found[path.stem] = spellings
    return found


def _key(text: str) -> str:
    return "".join(character for character in text.lower() if character.isalnum())


def _no_file(root: Path, folder: str, answer: str, keys: tuple[str, ...]) -> str:
    """Why the answer names no file, with the files that share the most of its words."""
    import difflib  # only for an answer that names no file

    words = set(re.findall(r"[a-z0-9.]{2,}", one_line(answer).lower()))
    spellings = _spellings(root, folder, keys)
    holding = {
        word: {f for f, names in spellings.items() if any(word in n.lower() for n in names)}
        for word in words
    }
    # a word few files hold (a size, 32b) tells more than one most hold (qwen3, instruct)
    shared = {f: sum(1 / len(held) for held in holding.values() if f in held) for f in spellings}

    def likeness(file_id: str) -> tuple[float, float]:
        similar = difflib.SequenceMatcher(None, _key(answer), _key(file_id)).ratio()
        return (shared[file_id], similar)

    ranked = sorted((f for f in shared if shared[f]), key=likeness, reverse=True)
    close = ranked[:3] or closest(_key(answer), shared)
    hint = f" (close: {', '.join(close)})" if close else ""
    return f"no single file in {folder}/ is named so{hint}"


def _techniques(root: Path) -> set[str]:
    techniques = load_schema(root, "record")["properties"]["techniques"]
    return set(techniques["items"]["enum"])


def _issue_slug(inputs: ScaffoldInputs) -> str:
    """engine-model-accelerator-context, as the records are named (vllm-qwen3-8b-h100-sxm-32k)."""
    context = inputs.context_tokens
    parts = [inputs.engine.replace(".", ""), inputs.model_id, inputs.accelerator or ""]
    if context:
        parts.append(f"{context // 1000}k" if context % 1000 == 0 else str(context))
    slug = "-".join(part for part in parts if part)
    slug = "-".join(piece for piece in slug.replace("_", "-").replace("+", "-").split("-") if piece)
    return slug[:MAX_SLUG].rstrip(".-")


def _issue_notes(answers: dict[str, str], unknown_techniques: list[str], table: TableRuns) -> str:
    """The notes placeholder, carrying the answers that have no field of their own: with a
    runs table, its columns that could not be read, the lines around it and the headline
    answers (the runs came from the table), to check against the runs."""
    parts = ["TODO: what the record shows and how to read it."]
    if table.runs:
        if table.unread_columns:
            parts.append("Runs table columns not drafted: " + _sentence(table.unread_columns))
        if table.other_lines:
            parts.append("The issue's runs answer adds: " + _sentence(table.other_lines))
        headline = [f"{LABELS[a]}: {one_line(answers[a])}" for a in _RUN_FIGURES if a in answers]
        if headline:
            parts.append(
                "The form's headline figures, to check against the runs: " + _sentence(headline)
            )
    elif answers.get("runs"):
        parts.append(
            "The issue's runs and figures, each to be written as a run with its metrics: "
            + _sentence(lines_of(answers["runs"]))
        )
    if answers.get("other"):
        parts.append("The issue adds: " + _sentence(lines_of(answers["other"])))
    if unknown_techniques:
        parts.append(f"Techniques the schema does not know: {', '.join(unknown_techniques)}.")
    return " ".join(parts)


def _sentence(lines: list[str]) -> str:
    return "; ".join(line.rstrip(".;") for line in lines) + "."


def _unread(answer: str, why: str) -> str:
    shown = one_line(answer)
    if len(shown) > 80:
        shown = shown[:79] + "…"
    return f"TODO: the issue answers {shown!r}, which cannot be recorded as it is: {why}"


def _line_or_none(answer: str | None) -> str | None:
    return None if answer is None else one_line(answer)
