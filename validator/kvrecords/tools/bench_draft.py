"""A record drafted from benchmark result files (``kvrecords new --from-bench FILE...``).

Each run a file holds becomes a run of the record with every figure the file gives as a metric
(``stated_as`` names the file, the key and the value as written), and the run's concurrency,
request rate, request count, token lengths and duration; what the file does not hold is null
with the reason "not in the benchmark output", and what the reader could not import is listed
in the run's note. The KV arithmetic comes from the scaffold (``tools/scaffold.py``) for the
model the files name, matched to a models/ id. A start-up log (``--log``) adds the cache sizes
the engine printed, read by ``tools/engine_logs.py`` as ``kvrecords kv --from-log`` reads them.
What only a person can give (the source, the title, the confidence) stays a TODO.
"""

from __future__ import annotations

import copy
import difflib
import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from kvrecords.dataset.bench import BenchFileError, BenchRun, read_bench_file, stated_as
from kvrecords.dataset.layout import HARDWARE_DIR, MODELS_DIR
from kvrecords.tools.scaffold import ScaffoldInputs, draft_record, finish_record

NOT_IN_OUTPUT = "not in the benchmark output"
DECODE_METRICS = (
    "decode_tokens_per_s",
    "output_tokens_per_s",
)  # the card's rate, as KV803 reads it
# the engine a tool's files come from when the file does not say: llama-bench runs llama.cpp
# itself; the serving benchmarks measure whatever server they are pointed at, so a file of
# theirs that names no backend needs --engine
TOOL_ENGINES = {"llama-bench": "llama.cpp"}
# llama.cpp cache type names as the record's dtype vocabulary writes them
LLAMACPP_DTYPES = {"f16": "fp16", "f32": "fp32", "bf16": "bf16"}
_QUANT_SUFFIX = re.compile(
    r"[-_.](?:i?q[0-9]_[a-z0-9_]+|q[0-9]_[0-9]|f16|bf16|fp16|f32|fp8|int8|int4|awq|gptq)$"
)
_VARIANT_SUFFIX = re.compile(r"-(?:instruct|it|chat|hf|base)$")
_FLASH = {"enabled": "on", "disabled": "off", "auto": "auto", "1": "on", "0": "off"}  # llama.cpp


class BenchDraftError(ValueError):
    """A located reason the draft cannot be made (``FILE:LINE:COL: message``)."""


@dataclass
class Draft:
    """The draft's text, where it goes, and what is left for a person."""

    slug: str
    text: str
    runs: int
    left_to_fill: list[str] = field(default_factory=list)
    model_note: str = ""


@dataclass(frozen=True)
class BenchSources:
    """The files a draft reads: result files, the baseline's, start-up logs."""

    files: tuple[Path, ...]
    baseline: Path | None = None
    logs: tuple[Path, ...] = ()
    tool: str | None = None


def draft_from_bench(root: Path, sources: BenchSources, options: dict[str, Any]) -> Draft:
    """The draft record; ``options`` are ``new``'s options the command line gave (they win
    over what the files say). ``BenchDraftError`` for an unreadable file or a missing model."""
    files = list(sources.files)
    if sources.baseline is not None and not any(_same(sources.baseline, f) for f in files):
        files.insert(0, sources.baseline)
    read = [(path, _read(path, sources.tool)) for path in files]
    if len(sources.logs) not in (0, 1, len(files)):
        raise BenchDraftError(
            f"{len(sources.logs)} logs for {len(files)} result files: give one log for every "
            "run, or one per result file in the same order"
        )
    first = read[0][1][0]
    model_id, model_note = _model(
        root, options.get("model_id"), [r for _, runs in read for r in runs]
    )
    engine = options.get("engine") or first.engine or TOOL_ENGINES.get(first.tool)
    if engine is None:
        raise BenchDraftError(
            f"{files[0]}:1:1: the file does not name the engine that served it ({first.tool} "
            "measures any server): give --engine"
        )
    inputs = ScaffoldInputs(
        slug=options.get("slug") or _slug(model_id, files[0]),
        model_id=model_id,
        dtype=options.get("dtype") or _dtype(first) or "bf16",
        dtype_stated=bool(options.get("dtype_stated")) or _dtype(first) is not None,
        context_tokens=options.get("context_tokens"),
        layers_counted=options.get("layers_counted") or "cache",
        source_url=options.get("source_url"),
        publisher=options.get("publisher") or "TODO: who published the source",
        techniques=list(options.get("techniques") or ["baseline"]),
        accelerator=options.get("accelerator") or _accelerator(root, first.hardware),
        accelerator_count=options.get("count"),
        engine=engine,
        engine_version=options.get("engine_version") or first.engine_version,
        locator=options.get("locator"),
    )
    record, reasons = draft_record(root, inputs)
    logs = [_log_metrics(path) for path in sources.logs]
    every = [run for _, file_runs in read for run in file_runs]
    shared = [flag for flag in first.flags if all(flag in run.flags for run in every)]
    runs: list[dict[str, Any]] = []
    for index, (path, file_runs) in enumerate(read):
        role = "only"
        if sources.baseline is not None:
            role = "baseline" if _same(path, sources.baseline) else "treatment"
        log = logs[0] if len(logs) == 1 else logs[index] if logs else None
        for run in file_runs:
            own = tuple(flag for flag in run.flags if flag not in shared)
            drafted = _run(run, role, len(read) > 1, log, own, reasons, len(runs))
            other = _other_model(root, run, first, model_id, options.get("model_id"))
            if other:
                drafted["model"] = other
            elif run.model is None and first.model and not options.get("model_id"):
                unnamed = "TODO: the file names no model; say whether it is the record's"
                drafted["note"] = f"{unnamed}. {drafted.get('note', '')}".strip()
            stated = record["methodology"]["engine"]
            name = run.engine or stated["name"]
            if name != stated["name"] or run.engine_version not in (None, stated["version"]):
                drafted["engine"] = {"name": name, "version": run.engine_version}  # its own
                if run.engine_version is None:
                    reasons[f"runs[{len(runs)}].engine.version"] = NOT_IN_OUTPUT
            runs.append(drafted)
    record["runs"] = runs
    headline = next((r for r in runs if r["role"] == "treatment"), runs[0])
    record["headline_run"] = headline["id"]
    # the card holds the headline run's TTFT and decode rate (KV803), the first it gives
    for card, names in (
        ("measured_ttft_ms_at_ctx", ("ttft_ms",)),
        ("measured_tps_at_ctx", DECODE_METRICS),
    ):
        given = [m["value"] for name in names for m in headline["metrics"] if m["name"] == name]
        if given:
            record[card] = given[0]
        else:
            reasons[card] = f"the headline run gives no {' or '.join(names)}"
    _methodology(record, every, shared, reasons)
    if model_note.startswith("TODO"):
        record["notes"] = f"{model_note}. {record['notes']}"
    text = finish_record(root, record, reasons)
    left = [
        "title, methodology.source (publisher, title, url, published, citation), notes: "
        "where the measurement is published",
        "confidence and confidence_reason: rate them with the rubric in CONTRIBUTING.md",
        "every TODO the draft still holds (kvrecords validate lists each one)",
    ]
    return Draft(inputs.slug, text, len(runs), left, model_note)


def _read(path: Path, tool: str | None) -> list[BenchRun]:
    try:
        runs = read_bench_file(path, tool)
    except BenchFileError as error:
        raise BenchDraftError(f"{path}:{error.line}:{error.column}: {error.message}") from None
    if not runs:
        raise BenchDraftError(f"{path}:1:1: the file holds no run")
    return runs


def _same(a: Path, b: Path) -> bool:
    return a.resolve() == b.resolve()


# ---- model, dtype, hardware ----------------------------------------------------------------


def _model(root: Path, given: str | None, runs: list[BenchRun]) -> tuple[str, str]:
    """The models/ id and a line on how it was chosen. A name no id matches exactly gets the
    nearest id with a TODO; a file naming no model needs --model."""
    if given:
        return given, f"model: {given} (--model)"
    named = next((run.model for run in runs if run.model), None)
    if named is None:
        raise BenchDraftError(
            f"{runs[0].file_name}:1:1: the file names no model; give --model ID (an id from models/)"
        )
    ids, by_repo = _model_ids(root)
    exact = by_repo.get(_repository(named).lower()) or _by_name(named, ids)
    if exact:
        return exact, f"model: {named} -> models/{exact}.yaml"
    nearest = difflib.get_close_matches(_normalised(named), ids, n=3, cutoff=0.5)
    if not nearest:
        raise BenchDraftError(
            f"{runs[0].file_name}:1:1: the model {named!r} matches no file in models/; give "
            "--model ID, or add the model (kvrecords model import-hf)"
        )
    return nearest[0], (
        f"TODO: the file names the model {named!r}, which no models/ id matches; the nearest "
        f"are {', '.join(nearest)}: check the model (give --model ID) and its arithmetic"
    )


def _other_model(
    root: Path, run: BenchRun, first: BenchRun, model_id: str, given: str | None
) -> str | None:
    """The models/ id of a run whose file names another model than the record's, if any."""
    if given or not run.model or run.model == first.model:
        return None
    other, note = _model(root, None, [run])
    if note.startswith("TODO"):
        raise BenchDraftError(f"{run.file_name}:1:1: {note.removeprefix('TODO: ')}")
    return other if other != model_id else None


def _model_ids(root: Path) -> tuple[list[str], dict[str, str]]:
    """The model ids, and each model's Hugging Face repository (lowercase) to its id."""
    ids, by_repo = [], {}
    for path in sorted((root / MODELS_DIR).glob("*.yaml")):
        ids.append(path.stem)
        with path.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                if line.startswith("hf_repo:"):
                    by_repo[line.split(":", 1)[1].strip().strip("'\"").lower()] = path.stem
                    break
    return ids, by_repo


def _repository(name: str) -> str:
    """The Hugging Face id a model path names: a cache path '/models/models--openai--gpt-oss-120b/
    snapshots/<hash>/' is 'openai/gpt-oss-120b'; anything else is as given."""
    cached = re.search(r"models--([^/\\]+?)--([^/\\]+)", name)
    return f"{cached[1]}/{cached[2]}" if cached else name.strip().rstrip("/")


def _normalised(name: str) -> str:
    """'models/Qwen2.5-7B-Instruct-Q4_K_M.gguf' -> 'qwen2.5-7b-instruct'."""
    stem = re.split(r"[\\/]", _repository(name))[-1].lower().removesuffix(".gguf")
    previous = None
    while previous != stem:
        previous, stem = stem, _QUANT_SUFFIX.sub("", stem)
    return stem.replace("_", "-")


def _by_name(named: str, ids: list[str]) -> str | None:
    """The id the name is, or is with an instruct/chat suffix dropped (the same geometry)."""
    name = _normalised(named)
    for candidate in (name, _VARIANT_SUFFIX.sub("", name)):
        if candidate in ids:
            return candidate
    return None


def _dtype(run: BenchRun) -> str | None:
    """The KV dtype a llama-bench test names, when K and V share it."""
    if run.kv_cache_types is None or run.kv_cache_types[0] != run.kv_cache_types[1]:
        return None
    return LLAMACPP_DTYPES.get(run.kv_cache_types[0], run.kv_cache_types[0])


def _accelerator(root: Path, named: str | None) -> str | None:
    """The hardware/ id of 'NVIDIA GeForce RTX 4090' (rtx-4090), when there is one."""
    if not named:
        return None
    first = named.split(",")[0].strip().lower()
    for prefix in ("nvidia ", "geforce ", "amd ", "radeon "):
        first = first.removeprefix(prefix)
    candidate = re.sub(r"[^a-z0-9.]+", "-", first).strip("-")
    return candidate if (root / HARDWARE_DIR / f"{candidate}.yaml").is_file() else None


def _weights_precision(model: str | None) -> str | None:
    """The GGUF type a model file's name ends with ('...-Q4_K_M.gguf' -> 'Q4_K_M'), when the
    weights vocabulary knows it."""
    from kvrecords.kv.weights import weight_format

    if not model or not model.lower().endswith(".gguf"):
        return None
    match = re.search(r"[-_.](i?q[0-9]_[a-z0-9_]+|f16|bf16|f32)$", model[:-5], re.IGNORECASE)
    if match is None or weight_format(match[1]) is None:
        return None
    return match[1].upper()


def _slug(model_id: str, path: Path) -> str:
    stem = re.sub(r"[^a-z0-9.]+", "-", path.stem.lower()).strip("-.") or "bench"
    slug = f"bench-{model_id}-{stem}"
    return slug[:100].rstrip("-.")


# ---- runs ------------------------------------------------------------------------------------


def _run(
    run: BenchRun,
    role: str,
    several_files: bool,
    log: list[dict[str, Any]] | None,
    flags: tuple[str, ...],
    reasons: dict[str, str],
    index: int,
) -> dict[str, Any]:
    label = f"{run.file_name}: {run.label}" if several_files else run.label
    out: dict[str, Any] = {"id": _run_id(label, index), "label": label, "role": role}
    if run.kv_cache_types is not None:
        k, v = (LLAMACPP_DTYPES.get(t, t) for t in run.kv_cache_types)
        out["kv_dtype"] = k if k == v else {"k": k, "v": v}
        out["kv_dtype_stated"] = True
    context = (run.input_tokens or 0) + (run.depth_tokens or 0)
    settings = {
        "concurrency": "unbounded" if run.unbounded else run.concurrency,
        "request_rate": "inf" if run.request_rate == math.inf else run.request_rate,
        "context_tokens": context or None,
        "output_tokens": run.output_tokens,
        "requests": run.num_requests,
    }
    # a load generator's run has each of these, stated or not; a single-sequence test
    # (llama-bench) has no request rate or count, and a prompt test no output
    served = run.unbounded or run.request_rate is not None or run.num_requests is not None
    for key, value in settings.items():
        if value is not None or served:
            out[key] = value
        if value is None and served:
            reasons[f"runs[{index}].{key}"] = NOT_IN_OUTPUT
    if run.duration_s is not None:
        out["duration"] = {"seconds": run.duration_s}
    metrics = [_metric(run, figure) for figure in run.figures]
    if log:
        metrics += copy.deepcopy(log)  # each run its own copy: the YAML has no aliases
    out["metrics"] = metrics
    notes = []
    if run.workload:
        notes.append("The file's settings: " + "; ".join(run.workload) + ".")
    if flags:
        notes.append("Engine settings of this run: " + "; ".join(flags) + ".")
    if run.not_imported:
        notes.append("Not imported: " + "; ".join(run.not_imported) + ".")
    if notes:
        out["note"] = " ".join(notes)
    return out


def _run_id(label: str, index: int) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")[:50].rstrip("-")
    return f"r{index + 1}-{words}" if words else f"r{index + 1}"


def _metric(run: BenchRun, figure: Any) -> dict[str, Any]:
    metric: dict[str, Any] = {
        "name": figure.metric,
        "statistic": figure.statistic,
        "value": figure.value,
    }
    if figure.scope is not None:
        metric["scope"] = figure.scope
    if figure.spread is not None:
        metric["spread"] = {"of": "std", "value": figure.spread}
    metric["stated_as"] = stated_as(run, figure)
    if figure.metric == "goodput_requests_per_s":
        metric["note"] = "TODO: the latency objective the goodput counted (--goodput)"
    return metric


def _methodology(
    record: dict[str, Any], runs: list[BenchRun], shared: list[str], reasons: dict[str, str]
) -> None:
    """What every run shares goes on the record; what differs stays with the runs."""
    methodology = record["methodology"]
    caps = {("unbounded" if r.unbounded else r.concurrency) for r in runs}
    methodology["concurrency"] = caps.pop() if len(caps) == 1 else None
    if methodology["concurrency"] is None:
        reasons["methodology.concurrency"] = (
            NOT_IN_OUTPUT if len(caps) == 0 else "differs by run: each run states its own"
        )
    if shared:
        methodology["engine"]["flags"] = shared
    if methodology["engine"]["version"] is None:
        reasons["methodology.engine.version"] = NOT_IN_OUTPUT
    hardware = methodology["hardware"]
    named = runs[0].hardware
    if hardware["accelerator"] is None:
        reasons["methodology.hardware.accelerator"] = (
            f"the file names {named!r}, which no hardware/ file describes"
            if named
            else NOT_IN_OUTPUT
        )
    if hardware["count"] is None:
        reasons["methodology.hardware.count"] = NOT_IN_OUTPUT
    if named:
        hardware["memory_stated"] = named
    weights = {r.weights for r in runs if r.weights}
    if len(weights) == 1:
        methodology["weights_stated_as"] = weights.pop()
    precisions = {_weights_precision(r.model) for r in runs}
    if len(precisions) == 1 and None not in precisions:
        methodology["weights_precision"] = precisions.pop()
    else:
        reasons["methodology.weights_precision"] = NOT_IN_OUTPUT
    if record["kv_bytes_basis"]["context_tokens"] is None:
        for key in ("context_tokens", "kv_at_context"):
            reasons[f"kv_bytes_basis.{key}"] = (
                f"{NOT_IN_OUTPUT} as one context for the record; each run states its own"
            )
    workload = sorted({fact for r in runs for fact in r.workload})
    tools = sorted({r.tool for r in runs})
    methodology["workload"] = (
        "TODO: the prompts and traffic in words. Measured with "
        + ", ".join(tools)
        + (f"; the file's settings: {'; '.join(workload)}" if workload else "")
        + "."
    )


# ---- start-up log ----------------------------------------------------------------------------


def _log_metrics(path: Path) -> list[dict[str, Any]]:
    """The cache sizes a start-up log prints, as metrics: llama.cpp's, SGLang's and
    TensorRT-LLM's KV size with the engine accounting it follows from, and the token capacity
    (vLLM prints its pool in tokens, beside the memory it left for the cache)."""
    from kvrecords.tools.engine_logs import LogError, read_log_file

    try:
        reading = read_log_file(path)
    except LogError as error:
        raise BenchDraftError(f"{error}") from None
    settings = {s.key: s.value for s in reading.settings}
    metrics: list[dict[str, Any]] = []
    for figure in reading.figures:
        fields = dict(figure.fields)
        quoted = f"{path.name}:{figure.line}: {figure.quoted}"
        if figure.engine == "llamacpp" and "size" in fields and "cells" in fields:
            options: dict[str, Any] = {}
            if "type_k" in fields:
                options = {"cache_type_k": fields["type_k"], "cache_type_v": fields["type_v"]}
            flash = _FLASH.get(settings.get("llamacpp_flash_attn", ""))
            if flash:
                options["flash_attn"] = flash
            accounting: dict[str, Any] = {"context_tokens": int(fields["cells"])}
            if options:
                accounting["options"] = options
            accounting["log_line"] = figure.quoted
            metrics.append(_kv_bytes(fields["size"], "pool", quoted, accounting))
            metrics.append(_tokens("kv_tokens_reported", fields["cells"], "pool", quoted))
        elif figure.engine == "llamacpp" and "size" in fields and settings.get("llamacpp_n_ctx"):
            accounting = {
                "context_tokens": int(settings["llamacpp_n_ctx"]),
                "options": {"cache_type_k": fields["type_k"], "cache_type_v": fields["type_v"]},
                "log_line": figure.quoted,
            }
            metrics.append(_kv_bytes(fields["size"], "pool", quoted, accounting))
        elif figure.engine == "sglang" and "pool_tokens" in fields:
            metrics.append(_sglang_bytes(fields, settings, quoted, figure.quoted))
            metrics.append(_tokens("kv_tokens_reported", fields["pool_tokens"], "pool", quoted))
        elif figure.engine == "tensorrt-llm" and "kv_pool_size" in fields:
            accounting = {"context_tokens": int(fields["pool_tokens"]), "log_line": figure.quoted}
            metrics.append(_kv_bytes(fields["kv_pool_size"], "per_device", quoted, accounting))
        elif figure.engine == "vllm" and "gpu_kv_cache_tokens" in fields:
            metrics.append(
                _tokens("kv_tokens_reported", fields["gpu_kv_cache_tokens"], "pool", quoted)
            )
        elif figure.engine == "vllm" and "available_kv_cache_memory" in fields:
            metrics.append(
                {
                    "name": "kv_budget_bytes",
                    "statistic": "single",
                    "value": fields["available_kv_cache_memory"],
                    "stated_as": quoted,
                }
            )
    if not metrics:
        raise BenchDraftError(f"{path}: the log prints no KV size or capacity this draft can use")
    return metrics


def _kv_bytes(value: str, scope: str, quoted: str, accounting: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "kv_bytes_reported",
        "statistic": "single",
        "value": value,
        "scope": scope,
        "stated_as": quoted,
        "engine_accounting": accounting,
    }


def _tokens(name: str, value: str, scope: str, quoted: str) -> dict[str, Any]:
    return {
        "name": name,
        "statistic": "single",
        "value": int(value),
        "scope": scope,
        "stated_as": quoted,
    }


def _sglang_bytes(
    fields: dict[str, str], settings: dict[str, str], quoted: str, line: str
) -> dict[str, Any]:
    """SGLang prints K and V (or K+V) in GiB to two decimals ('GB' in its log): the value is the
    whole bytes the rounded figures allow, each printed figure +- 0.005 GiB (1.42 + 1.42 GiB:
    from 2.83 x 2^30 = 3,038,689,361.92, so 3,038,689,362, to 3,060,164,198)."""
    printed = [fields[k] for k in ("kv_size", "k_size", "v_size") if k in fields]
    total = sum(Decimal(p.split()[0]) for p in printed)
    half = Decimal("0.005") * len(printed)
    gib = 2**30
    low, high = (total - half) * gib, (total + half) * gib
    accounting: dict[str, Any] = {"context_tokens": int(fields["pool_tokens"])}
    options: dict[str, Any] = {}
    if "sglang_tp_size" in settings:
        options["tp_size"] = int(settings["sglang_tp_size"])
    if "kv_cache_dtype" in settings:
        options["kv_cache_dtype"] = settings["kv_cache_dtype"]
    if options:
        accounting["options"] = options
    accounting["log_line"] = line
    return {
        "name": "kv_bytes_reported",
        "statistic": "single",
        "value": {
            "min": math.ceil(low),
            "max": math.floor(high),
        },
        "scope": "per_device",
        "stated_as": quoted,
        "engine_accounting": accounting,
    }
