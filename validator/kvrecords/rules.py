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
