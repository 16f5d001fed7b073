"""The registry of problem codes: one entry per code, never reused, each its own documentation.

``docs/rules.md`` is generated from these entries (``kvrecords rules --markdown``), and a test
fails when a code lacks documentation or a failing fixture under ``tests/cases/<code>/``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    summary: str  # what it checks
    why: str  # why it matters
    passing: str  # a YAML fragment that passes
    failing: str  # a YAML fragment that fails, with the message it gets


_RULES = [
    Rule(
        "KV001",
        "yaml-syntax",
        "The file is well-formed YAML.",
        "A file the parser cannot read cannot be checked at all; the message gives the parser's "
        "own reason at the line and column where it stopped.",
        "kv_at_context: 9.16 GiB",
        "kv_at_context: '9.16 GiB\n# KV001 YAML syntax: found unexpected end of stream",
    ),
    Rule(
        "KV002",
        "duplicate-key",
        "No mapping repeats a key.",
        "Most YAML loaders keep the last value silently, so a record could show a reviewer one "
        "figure and feed the dataset another.",
        "bytes_per_token: 65536",
        "bytes_per_token: 65536\nbytes_per_token: 131072\n# KV002 duplicate key 'bytes_per_token'",
    ),
    Rule(
        "KV003",
        "anchor-alias",
        "No anchors (&a) or aliases (*a).",
        "Aliases hide where a value comes from and allow exponential expansion (billion laughs); "
        "records are small enough to write every value out.",
        "dtype: bf16",
        "dtype: &d bf16\n# KV003 anchor &d: anchors and aliases are not allowed",
    ),
    Rule(
        "KV004",
        "tag",
        "No explicit tags (!!python/object, !!binary, !custom).",
        "Tags ask a loader to construct objects; some loaders run code for them. Values in this "
        "dataset are plain strings, numbers, booleans, lists and mappings.",
        "engine: {name: vllm}",
        "engine: !!python/object/apply:os.system [id]\n# KV004 tag ... is not allowed",
    ),
    Rule(
        "KV005",
        "encoding",
        "The file is UTF-8 without a byte-order mark.",
        "Other encodings and BOMs make diffs, tools and the export disagree about the text.",
        "publisher: Senn Tech",
        "publisher: Senn\\xff Tech   (a byte that is not UTF-8)\n# KV005 byte 0xff is not UTF-8",
    ),
    Rule(
        "KV006",
        "document-shape",
        "One YAML document whose top level is a mapping with string keys.",
        "An empty file, a list, a second document after `---` or a complex key is not a record "
        "or a model.",
        "id: kv-efficiency/example",
        "- id: kv-efficiency/example\n# KV006 the top level must be a mapping of keys to values",
    ),
    Rule(
        "KV007",
        "limits",
        "The file is at most 512 KiB and nested at most 32 levels deep.",
        "The validator runs on strangers' pull requests: a huge or deeply nested file must not "
        "cost minutes or memory. Real records are a few KiB and a few levels deep.",
        "results: {hit_rate: 0.935}",
        "a: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n# KV007 nesting deeper than 32 levels",
    ),
    Rule(
        "KV008",
        "non-finite-number",
        "Numbers are finite: no .nan, .inf or numbers of absurd length.",
        "NaN compares false with everything, so it would slip past every range check.",
        "confidence: 0.62",
        "confidence: .nan\n# KV008 .nan is not a finite number",
    ),
    Rule(
        "KV009",
        "file-access",
        "Every file under records/ and models/ is a readable file inside the dataset.",
        "A symlink leading out of the tree would make the validator read (and CI print) files "
        "that are not part of the dataset.",
        "records/kv-efficiency/example.yaml (a regular file)",
        "records/kv-efficiency/example.yaml -> /etc/passwd\n# KV009 symlink leads outside the dataset",
    ),
    Rule(
        "KV101",
        "schema",
        "The file satisfies its JSON Schema (schema/record.schema.json or schema/model.schema.json).",
        "The schema names every field and its type; every error is reported at its line and "
        "column, with a hint for the common slips (a number written with thousands separators "
        "is text in YAML; units are case-sensitive).",
        "bytes_per_token: 65536",
        "bytes_per_token: 65,536\n# KV101 kv_bytes_basis.bytes_per_token: '65,536' is not of type "
        "'integer', 'null' (write 65536 without thousands separators)",
    ),
    Rule(
        "KV102",
        "schema-modeline",
        "The file starts with the yaml-language-server modeline pointing at its schema.",
        "Editors use the modeline to autocomplete and check fields while the contributor types.",
        "# yaml-language-server: $schema=../../schema/record.schema.json",
        "# a record without the modeline\n# KV102 first line must be '# yaml-language-server: $schema=...'",
    ),
    Rule(
        "KV201",
        "id-path",
        "A record's id is kv-efficiency/<slug> for the file records/kv-efficiency/<slug>.yaml; a model's id is its file name.",
        "Ids are how records are linked and cited; a mismatch means two names for one thing.",
        "id: kv-efficiency/example   (in records/kv-efficiency/example.yaml)",
        "id: kv-efficiency/other   (in records/kv-efficiency/example.yaml)\n# KV201 id does not match the path",
    ),
    Rule(
        "KV202",
        "duplicate-id",
        "No two records or models share an id, compared case-insensitively.",
        "Case-insensitive file systems (macOS, Windows) would merge them, and readers cannot "
        "tell them apart.",
        "records/kv-efficiency/a.yaml and records/kv-efficiency/b.yaml",
        "records/kv-efficiency/a.yaml and records/kv-efficiency/A.yaml\n# KV202 same id as ...",
    ),
    Rule(
        "KV203",
        "model-link",
        "`model` names a file models/<model>.yaml that exists: an id, never a path.",
        "Every derived number is recomputed from that file; a missing or renamed model leaves "
        "the record unchecked.",
        "model: qwen3-8-27b",
        "model: ../../etc/passwd\n# KV203 model must be an id ...",
    ),
    Rule(
        "KV204",
        "model-broken",
        "The linked model file passes its own checks.",
        "Arithmetic from a broken geometry would be wrong; the record's arithmetic is skipped "
        "and the model's own problems are reported at the model file.",
        "model: llama-3.1-8b   (a valid model file)",
        "model: broken-model   (its groups do not add up)\n# KV204 models/broken-model.yaml has problems",
    ),
    Rule(
        "KV205",
        "null-reason",
        "Every null has its reason: records list it under not_stated, models under unknown; nothing is listed that is not null.",
        "A null without a reason cannot be told from a forgotten value, and a reader needs to "
        "know what the source did not say.",
        "methodology:\n  engine: {name: vllm, version: null}\nnot_stated:\n  - field: methodology.engine.version\n    reason: The post does not name the version.",
        "methodology:\n  engine: {name: vllm, version: null}\n# KV205 methodology.engine.version is null; list it under not_stated with the reason",
    ),
    Rule(
        "KV206",
        "placeholder",
        "No text is left as a TODO placeholder from kvrecords new.",
        "A scaffold marks every field the contributor must fill or explain; a TODO that reaches "
        "the dataset is a figure or a reason nobody checked.",
        "reason: The post does not publish decode tokens/s.",
        "reason: 'TODO: fill from the source or give the reason it is not stated'\n# KV206 not_stated[3].reason is still a placeholder",
    ),
    Rule(
        "KV301",
        "bytes-per-token",
        "kv_bytes_basis.bytes_per_token (and each alternative's) equals the model geometry's, exactly.",
        "Bytes per token is an integer product of the geometry; any difference is a wrong "
        "dimension (often head_dim derived from hidden_size, or a missed window).",
        "bytes_per_token: 65536",
        "bytes_per_token: 131072\n# KV301 bytes_per_token is 131072; models/qwen3-8-27b gives 65,536 = 16 layers x 4 kv heads x (256 + 256) x 2 B",
    ),
    Rule(
        "KV302",
        "kv-at-context",
        "kv_at_context equals bytes at context_tokens (windows capped at W tokens) at the precision written.",
        "`9.16 GiB` claims [9.155, 9.165) GiB; a GB/GiB mix-up is a 7% error that this catches.",
        "context_tokens: 150000\nkv_at_context: 9.16 GiB",
        "context_tokens: 150000\nkv_at_context: 9.16 GB\n# KV302 kv_at_context is 9.16 GB; models/qwen3-8-27b gives 9,830,400,000 B = 9.83 GB",
    ),
    Rule(
        "KV303",
        "basis-computable",
        "A stated KV figure can be computed from the geometry, and one that can be computed is stated.",
        "A figure that rests on a dimension the model file marks unknown is a guess; a null "
        "where the geometry gives the value hides arithmetic the reader needs.",
        "bytes_per_token: 65536   (the attention geometry is known)",
        "fixed_state: 1 GiB   (the Gated DeltaNet dimensions are unknown)\n# KV303 fixed_state cannot be computed: models/qwen3-8-27b does not publish ...",
    ),
    Rule(
        "KV304",
        "basis-applies",
        "The basis applies to the model: the dtype is known and the model has the layers the basis counts.",
        "all_layers_as_full_attention needs an attention geometry to extend; an MLA-only model "
        "has none.",
        "layers_counted: cache",
        "layers_counted: all_layers_as_full_attention   (model: deepseek-v3)\n# KV304 model deepseek-v3 has no attention layers to extend",
    ),
    Rule(
        "KV305",
        "fixed-state",
        "kv_bytes_basis.fixed_state equals the model's per-sequence state at state_dtype, at the precision written.",
        "Hybrid models trade per-token KV for a fixed state; its size decides how many "
        "sequences fit.",
        "fixed_state: 37.69 MiB   (qwen3-next-80b-a3b, bf16 state)",
        "fixed_state: 75.38 MiB   (bf16 state)\n# KV305 fixed_state is 75.38 MiB; models/qwen3-next-80b-a3b gives 39,518,208 B = 37.69 MiB",
    ),
    Rule(
        "KV401",
        "tokens-not-recomputed",
        "results.tokens_not_recomputed = hit_rate x context_tokens, at the precision written.",
        "The hit rate is measured; the tokens it saves follow from it and must agree.",
        "hit_rate: 0.935\ntokens_not_recomputed: 140250   (context 150,000)",
        "hit_rate: 0.935\ntokens_not_recomputed: 142500\n# KV401 tokens_not_recomputed is 142500; 0.935 x 150,000 = 140,250",
    ),
    Rule(
        "KV402",
        "speedup",
        "results.speedup = cold_ttft_ms / warm_ttft_ms, at the precision written.",
        "A speedup is the headline a reader quotes; it must follow from the two TTFTs.",
        "cold_ttft_ms: 53200\nwarm_ttft_ms: 2300\nspeedup: 23x",
        "cold_ttft_ms: 53200\nwarm_ttft_ms: 2300\nspeedup: 32x\n# KV402 speedup is 32x; 53,200 / 2,300 = 23.1304",
    ),
    Rule(
        "KV403",
        "bytes-not-recomputed",
        "results.bytes_not_recomputed = hit_rate x context_tokens x bytes_per_token, at the precision written.",
        "It is the KV the cache saved from being written again; it uses the basis's bytes per "
        "token as recomputed from the model.",
        "bytes_not_recomputed: 8.56 GiB",
        "bytes_not_recomputed: 8.65 GiB\n# KV403 bytes_not_recomputed is 8.65 GiB; 0.935 x 150,000 x 65,536 B = 8.56 GiB",
    ),
    Rule(
        "KV404",
        "prefill-rate",
        "results.prefill_tokens_per_s_from_ttft = context_tokens / TTFT in seconds (cold TTFT when given, else measured_ttft_ms_at_ctx).",
        "A derived prefill rate must follow from the stated context and TTFT.",
        "context_tokens: 150000\ncold_ttft_ms: 53200\nprefill_tokens_per_s_from_ttft: 2819.5",
        "prefill_tokens_per_s_from_ttft: 3000\n# KV404 prefill_tokens_per_s_from_ttft is 3000; 150,000 / 53.2 s = 2,819.5489",
    ),
    Rule(
        "KV405",
        "range-order",
        "A range's min is not above its max; a derived figure has what it is derived from.",
        "A reversed range is a typo that every consumer would mishandle; a derived figure whose "
        "inputs are null or ranges cannot be checked and must not be stated as one number.",
        "hit_rate: {min: 0.43, max: 0.45}",
        "hit_rate: {min: 0.45, max: 0.43}\n# KV405 range min 0.45 is above max 0.43",
    ),
    Rule(
        "KV501",
        "prose-arithmetic",
        "Every `a x b x c = d unit` claim in prose is right at the precision written.",
        "Prose is what readers quote; a wrong product in the explanation is as harmful as a wrong "
        "field. Claims are parsed with a small grammar, never evaluated as code.",
        "16 layers x 4 kv heads x 256 head_dim x 2 (K+V) x 2 bytes = 65,536 B/token",
        "65,536 x 150,000 = 9.61 GiB\n# KV501 prose claims 65,536 x 150,000 = 9.61 GiB; it is 9.16 GiB",
    ),
    Rule(
        "KV502",
        "prose-basis",
        "A bytes-per-token result in prose (`= N B/token`) equals a bytes_per_token the record states.",
        "Prose that argues from a basis the record does not state escapes the geometry check.",
        "... = 65,536 B/token   (kv_bytes_basis.bytes_per_token: 65536)",
        "2 x 2 = 4 B/token\n# KV502 prose gives 4 B/token; the record states 65,536",
    ),
    Rule(
        "KV601",
        "layer-count",
        "A model's layer groups add up to num_layers.",
        "A missing or double-counted group changes every byte computed from the model.",
        "num_layers: 64\nlayer_groups: [{kind: attention, layers: 16, ...}, {kind: linear_attention, layers: 48, ...}]",
        "num_layers: 64\nlayer_groups: [{kind: attention, layers: 16, ...}]\n# KV601 layer groups add up to 16; num_layers is 64",
    ),
    Rule(
        "KV701",
        "fit",
        "Weights plus KV fit the accelerators: total params x bits per weight / 8 + sequences x "
        "(KV at context + fixed state) <= count x usable memory, unless techniques lists kv_offload.",
        "Arithmetic that agrees with itself can still be impossible: a 70B model in bf16 does not "
        "fit one 80 GB card. Memory is hardware/<id>.yaml's usable_gib (the driver's total; the "
        "nominal size, flagged, on unified-memory parts); sequences is methodology.concurrency, "
        "else 1; the KV is every layer as the model is, at the record's KV dtype. Bits per weight "
        "come from methodology.weights_precision (bf16 16, fp8 8, AWQ/GPTQ int4 4, nvfp4 4.5, "
        "mxfp4 4.25, Q4_K_M 4.5, Q8_0 8.5, ...: the fewest the name allows); when it is null or "
        "not recognised, 4 bits are assumed. A check that rests on an assumption (weights "
        "precision, a parameter count read off the model's name, an unstated KV dtype, nominal "
        "memory, a hardware figure rated below high) is a warning, else an error.",
        "model: llama-3.1-8b\nmethodology:\n  hardware: {accelerator: rtx-4090, count: 1}\n"
        "  weights_precision: bf16\n# 8B x 16 bits / 8 = 14.90 GiB + 0.50 GiB KV (4,096 tokens) "
        "is 64% of 23.99 GiB",
        "model: llama-3.1-70b\nmethodology:\n  hardware: {accelerator: h100-sxm, count: 1}\n"
        "  weights_precision: bf16\n# KV701 weights + KV do not fit: weights 130.39 GiB (70B "
        "total params x 16 bits / 8) + 1.25 GiB KV = 131.64 GiB is 165% of 1 x 79.65 GiB "
        "(hardware/h100-sxm.yaml usable_gib 79.65 GiB); if the cache is offloaded, add "
        "kv_offload to techniques",
    ),
    Rule(
        "KV702",
        "decode-roofline",
        "Decode tokens/s (measured_tps_at_ctx, results.decode_tokens_per_s) are within the "
        "memory-bandwidth roofline: per sequence <= s x count x bandwidth / (active params x "
        "bits / 8 + B x KV per sequence), aggregate <= B times that.",
        "Each decode step reads the active weights once for the whole batch of B sequences and "
        "each sequence's KV at context, so no engine decodes faster than the memory can feed it "
        "(s = 1 + draft tokens under speculative decoding; with an unstated draft length the "
        "check is not run). Bandwidth is the highest figure in hardware/<id>.yaml (decimal "
        "GB/s). results.decode_rate_scope says whether a rate is per sequence or aggregate; "
        "when it is omitted the lenient reading is taken (aggregate when concurrency is above "
        "1), and an unstated concurrency is read as one sequence, which only warns. Ranges are "
        "checked at their low end.",
        "model: llama-3.1-8b   (8B, bf16, 4,096 tokens)\nmethodology: {hardware: {accelerator: "
        "rtx-4090, count: 1}, weights_precision: bf16, concurrency: 1}\nmeasured_tps_at_ctx: 55\n"
        "# 55.0 tok/s is 90% of the 61.0 tok/s roofline",
        "measured_tps_at_ctx: 150   (same record)\n# KV702 decode measured_tps_at_ctx is above the "
        "memory-bandwidth roofline: 150.0 tok/s read as one sequence is 246% of the 61.0 tok/s "
        "roofline = 1 x 1,008 GB/s / (weights 14.90 GiB [8B active params x 16 bits / 8] + "
        "0.50 GiB KV) (hardware/rtx-4090.yaml memory_bandwidth_gb_s 1,008 GB/s)",
    ),
    Rule(
        "KV703",
        "prefill-ceiling",
        "The prefill rate (context / cold TTFT, else / measured_ttft_ms_at_ctx when no prefix "
        "reuse is involved; and results.prefill_tokens_per_s) is within count x peak FLOP/s / "
        "FLOPs per token.",
        "A prompt cannot be processed faster than the chip's dense peak allows. FLOPs per token "
        "= 2 x active params + attention, where attention = 2 x layers x heads x (head_dim + "
        "v_head_dim) x the average context a prompt token attends to (context / 2 for full "
        "attention, W - W^2 / (2 x context) for a window W shorter than the context), i.e. "
        "2 x 2 x layers x heads x head_dim x context / 2 when K and V have the same width. Heads "
        "are the model file's kv heads (a lower bound: query heads are not recorded), MLA counts "
        "one latent head, linear-attention and Mamba layers add nothing. The peak is the most "
        "generous that applies to the weights' precision (FP16-accumulate on GeForce, INT8 for "
        "GGUF, FP4 for nvfp4/mxfp4, every type when the precision is not stated), and a peak "
        "rated below high makes a violation a warning.",
        "context_tokens: 150000\ncold_ttft_ms: 53200   (27B on one rtx-5090)\n# 2,820 tok/s is "
        "9.9% of the 28,448 tok/s ceiling",
        "model: llama-3.1-8b   (bf16 on one a100-80gb-sxm)\ncontext_tokens: 131072\n"
        "cold_ttft_ms: 1000\n# KV703 prefill context / TTFT is faster than the peak FLOP/s "
        "allows: 131,072 tokens / 1 s = 131,072 tok/s is 1033% of the 12,688 tok/s ceiling = 1 x "
        "312 TFLOP/s bf16 (peak_dense_tflops.bf16 312; the most generous for bf16 weights) / "
        "(2 x 8e9 + 2 x 32 layers x 8 heads x (128 + 128) x 131,072/2 = 2.459e+10 FLOP/token)",
    ),
    Rule(
        "KV704",
        "fit-claim",
        "Each kv_bytes_basis.fit_claims entry comes out the way it claims: weights (total params "
        "x bits of its weights_precision / 8) + sequences x the basis's KV at context, against "
        "count x usable memory of its accelerator.",
        "Prose such as 'fits one 32 GB RTX 5090 beside a quantized 27B' is a claim about "
        "hardware that readers act on. A claim whose weights_precision_stated is false rests on "
        "an assumed precision and only warns; the basis is 'main' or an index into "
        "kv_bytes_basis.alternatives.",
        "fit_claims:\n  - {basis: 0, fits: false, accelerator: rtx-5090, count: 1,\n     "
        "weights_precision: int4, weights_precision_stated: false,\n     stated_as: ...36.6 "
        "GiB, which would not.}",
        "fit_claims:\n  - {basis: 0, fits: true, accelerator: rtx-5090, count: 1,\n     "
        "weights_precision: int4, weights_precision_stated: false, ...}\n# KV704 fit claim "
        "does not hold, it does not fit: weights 12.57 GiB (27B total params x 4 bits / 8) + "
        "36.62 GiB KV (alternatives[0]) = 49.19 GiB is 155% of 1 x 31.84 GiB "
        "(hardware/rtx-5090.yaml usable_gib 31.84 GiB) (assumes: parameter count read off the "
        "name ('27B (from the model name)'); weights int4 assumed (the source does not state "
        "them)); a warning, since it rests on those assumptions [warning]",
    ),
    Rule(
        "KV705",
        "hardware-link",
        "Every accelerator a record names (methodology.hardware, observations, fit_claims) is a "
        "file hardware/<id>.yaml that passes its own schema.",
        "The hardware checks divide by the file's memory, bandwidth and peaks; a misspelt or "
        "missing accelerator would silently skip them.",
        "hardware: {accelerator: rtx-5090, count: 1}",
        "hardware: {accelerator: rtx-5009, count: 1}\n# KV705 accelerator 'rtx-5009': "
        "hardware/rtx-5009.yaml does not exist; did you mean rtx-5090?",
    ),
]

RULES: dict[str, Rule] = {rule.code: rule for rule in _RULES}


def markdown() -> str:
    """docs/rules.md: one section per code."""
    lines = [
        "# Check codes",
        "",
        "Generated by `kvrecords rules --markdown` from `validator/kvrecords/rules.py`; do not edit.",
        "Each problem prints as `path:line:column: CODE message`. Codes are stable and never reused.",
        "",
        "| code | name | checks |",
        "|---|---|---|",
    ]
    lines += [f"| [{r.code}](#{r.code.lower()}) | {r.name} | {r.summary} |" for r in RULES.values()]
    for rule in RULES.values():
        lines += [
            "",
            f"## {rule.code}",
            "",
            f"**{rule.name}**: {rule.summary}",
            "",
            f"Why: {rule.why}",
            "",
            "Passes:",
            "",
            "```yaml",
            rule.passing,
            "```",
            "",
            "Fails:",
            "",
            "```yaml",
            rule.failing,
            "```",
        ]
    return "\n".join(lines) + "\n"
