"""KV705 hardware links and KV706 settings: what a record names exists and is known."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kvrecords.checks.context import RecordContext
from kvrecords.dataset.document import JsonPath, value_or_none
from kvrecords.dataset.records import accelerator_links
from kvrecords.kv.weights import GGUF_BITS, PRECISIONS, normalise, weight_format
from kvrecords.problems import Problem, Rule, did_you_mean

if TYPE_CHECKING:  # the setup module imports this one's rules
    from kvrecords.checks.plausibility.setup import Inputs

HARDWARE_LINK = Rule(
    "KV705",
    "hardware-link",
    "Every accelerator a record names (methodology.hardware, runs, fit_claims) is a file "
    "hardware/<id>.yaml that passes its own schema, and every family one that some hardware "
    "file declares.",
    "The hardware checks divide by the file's memory, bandwidth and peaks; a misspelt or "
    "missing accelerator would silently skip them.",
    "hardware: {accelerator: rtx-5090, count: 1}\nhardware: {accelerator: null, family: h100, "
    "count: 16}",
    "hardware: {accelerator: rtx-5009, count: 1}\n# KV705 accelerator 'rtx-5009': "
    "hardware/rtx-5009.yaml does not exist; did you mean rtx-5090?",
)

SETTINGS = Rule(
    "KV706",
    "settings",
    "weights_precision (of the methodology, a run or a fit claim) is a name or synonym from the "
    "weights vocabulary, and speculative_decoding.draft_model names a model file.",
    "The hardware checks read bits per weight off the precision; a value they do not know "
    "would have to be guessed, and every guess so far was wrong somewhere ('non-quantized' "
    "read as 4-bit, 'BF16 weights, FP8 KV' as 8-bit weights). The vocabulary: native "
    "(non-quantized, unquantized, full precision: the model's own dtype), quantized (width not "
    "stated), bf16, fp16, 16-bit, fp32, fp8, int8 (W8A8), w4a8, int4 (W4A16, AWQ, GPTQ, "
    "AutoRound, 4-bit), nf4, int3, int2, fp4, nvfp4, mxfp4, GGUF types (Q8_0 ... IQ1_S, "
    "Q4_K_M, UD-Q4_K_XL) and EXL2 bits (4.65bpw). The source's own words go in "
    "weights_stated_as.",
    "weights_precision: non-quantized\nweights_precision: AWQ int4\nweights_precision: Q4_K_M",
    "weights_precision: BF-16 weights\n# KV706 weights precision 'BF-16 weights' is not in the "
    "vocabulary; did you mean bf16?",
)

# ---- KV705 hardware link and KV706 settings ----------------------------------------------------


def check_hardware_links(record: RecordContext, inputs: Inputs) -> Iterator[Problem]:
    """KV705: every accelerator names a sound file in hardware/, every family some files."""
    index = inputs.hardware
    for path, named, family in accelerator_links(record.data):
        if family:
            if not index.families.get(named):
                known = sorted({f for f in index.families if index.families[f]})
                message = (
                    f"family {named!r}: no hardware file declares it{did_you_mean(named, known)}"
                )
                yield record.problem(HARDWARE_LINK, path, message)
            continue
        state = index.get(named)
        if state is None:
            hint = did_you_mean(named, index.catalog_ids)
            yield record.problem(
                HARDWARE_LINK,
                path,
                f"accelerator {named!r}: hardware/{named}.yaml does not exist{hint}",
            )
        elif state.hardware is None:
            message = f"accelerator {named!r}: {state.display} has problems (reported there); hardware checks not run"
            yield record.problem(HARDWARE_LINK, path, message)
            yield from state.problems


def _precision_places(data: dict[str, Any]) -> Iterator[JsonPath]:
    yield ("methodology", "weights_precision")
    for index, _ in enumerate(value_or_none(data, "runs") or []):
        yield ("runs", index, "weights_precision")
    for index, _ in enumerate(value_or_none(data, "kv_bytes_basis", "fit_claims") or []):
        yield ("kv_bytes_basis", "fit_claims", index, "weights_precision")


def nearest_precision(stated: str) -> str:
    """The vocabulary's name closest to an unknown value: the first run of its words that is a
    known value, else the name most like the whole."""
    import difflib  # only when a value is unknown

    text = normalise(stated)
    names = {
        **{name: name.replace("_", "-") for name in PRECISIONS},
        **{n: n.upper() for n in GGUF_BITS},
    }
    words = text.split("_")
    for start in range(len(words)):
        for end in range(len(words), start, -1):
            found = weight_format("_".join(words[start:end]))
            if found is not None:
                return found.name
    best = max(sorted(names), key=lambda name: difflib.SequenceMatcher(None, text, name).ratio())
    return names[best]


def check_settings(record: RecordContext, inputs: Inputs) -> Iterator[Problem]:
    """KV706: weights precisions from the vocabulary; draft models that exist."""
    data = record.data
    for path in _precision_places(data):
        stated = value_or_none(data, *path)
        if isinstance(stated, str) and weight_format(stated) is None:
            message = (
                f"weights precision {stated!r} is not in the vocabulary; the nearest known "
                f"value is {nearest_precision(stated)} (the source's own words go in "
                "weights_stated_as)"
            )
            yield record.problem(SETTINGS, path, message)
    places: list[JsonPath] = [("methodology",)]
    places += [("runs", index) for index in range(len(value_or_none(data, "runs") or []))]
    for place in places:
        path = (*place, "speculative_decoding", "draft_model")
        draft = value_or_none(data, *path)
        if isinstance(draft, str) and (inputs.models is None or inputs.models(draft) is None):
            yield record.problem(
                SETTINGS,
                path,
                f"draft model {draft!r}: models/{draft}.yaml is not a sound model file",
            )
