"""Property tests: the validator never raises, whatever a file holds; the arithmetic's invariants."""

from __future__ import annotations

import io
import json
import re
import tempfile
import time
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from conftest import FIXTURE_DATASET, copy_dataset
from kvrecords.dataset.document import MAX_FILE_BYTES, Document, parse_document
from kvrecords.dataset.models import load_model_file
from kvrecords.kv import prose
from kvrecords.kv.arithmetic import kv_report, parse_element_type
from kvrecords.problems import Problem
from kvrecords.runner.validate import validate

REPO = Path(__file__).resolve().parents[1]
SEED = FIXTURE_DATASET / "records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml"
MODEL_IDS = sorted(p.stem for p in (REPO / "models").glob("*.yaml"))

PROPERTY_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        yield copy_dataset(Path(folder) / "dataset", with_records=False)


def check_file(root: Path, content: bytes) -> list[Problem]:
    path = root / "records/kv-efficiency/generated.yaml"
    path.write_bytes(content)
    problems = validate(root, [path]).problems
    for problem in problems:
        assert problem.code.startswith("KV") and problem.line >= 1 and problem.column >= 1
    return problems


@PROPERTY_SETTINGS
@given(st.binary(max_size=2000))
def test_parse_never_raises_on_bytes(content: bytes) -> None:
    result = parse_document(content, "x.yaml")
    assert isinstance(result, (Document, list))


@PROPERTY_SETTINGS
@given(st.text(max_size=1000))
def test_validate_never_raises_on_text(scratch: Path, text: str) -> None:
    check_file(scratch, text.encode("utf-8", errors="surrogatepass"))


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
)
yaml_data = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=25,
)


def dump(data: Any) -> bytes:
    stream = io.StringIO()
    YAML(typ="safe", pure=True).dump(data, stream)
    return stream.getvalue().encode("utf-8")


@PROPERTY_SETTINGS
@given(yaml_data)
def test_validate_never_raises_on_arbitrary_yaml(scratch: Path, data: Any) -> None:
    check_file(scratch, dump(data))


def _leaf_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [p for key, child in value.items() for p in _leaf_paths(child, (*path, key))] + [
            path
        ]
    if isinstance(value, list):
        return [p for i, child in enumerate(value) for p in _leaf_paths(child, (*path, i))] + [path]
    return [path]


SEED_DATA = YAML(typ="safe", pure=True).load(SEED.read_text())


def _value(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


SEED_PATHS = [p for p in _leaf_paths(SEED_DATA) if p and p[0] != "id"]


@PROPERTY_SETTINGS
@given(st.sampled_from(SEED_PATHS), yaml_data)
def test_validate_never_raises_on_a_mutated_seed(
    scratch: Path, path: tuple[Any, ...], value: Any
) -> None:
    data = YAML(typ="safe", pure=True).load(SEED.read_text())
    data["id"] = "kv-efficiency/generated"
    target = data
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    check_file(
        scratch, b"# yaml-language-server: $schema=../../schema/record.schema.json\n" + dump(data)
    )


# The seed and a record with an alternative that states its own figures
KEY_RECORDS = [
    SEED,
    FIXTURE_DATASET / "records/kv-efficiency/gguf-parser-gpt-oss-20b-swa-kv-estimate.yaml",
]


@pytest.mark.parametrize("record", KEY_RECORDS, ids=lambda path: path.stem)
def test_validate_never_raises_when_a_key_goes_or_a_number_is_zero(
    scratch: Path, record: Path
) -> None:
    # a missing key may stand where code expects one (an alternative without kv_at_context), a
    # zero where code divides (a run's TTFT)
    original = YAML(typ="safe", pure=True).load(record.read_text())
    paths = [p for p in _leaf_paths(original) if p and p != ("id",)]
    for path in paths:
        old = _value(original, path)
        changes = ["remove"] if isinstance(path[-1], str) else []
        if isinstance(old, (int, float)) and not isinstance(old, bool):
            changes.append("zero")
        for change in changes:
            data = YAML(typ="safe", pure=True).load(record.read_text())
            data["id"] = "kv-efficiency/generated"
            parent = _value(data, path[:-1])
            if change == "remove":
                del parent[path[-1]]
            else:
                parent[path[-1]] = 0
            modeline = b"# yaml-language-server: $schema=../../schema/record.schema.json\n"
            check_file(scratch, modeline + dump(data))


ALL_MODELS = {
    model_id: load_model_file(REPO / "models" / f"{model_id}.yaml") for model_id in MODEL_IDS
}
# The invariants concern computable geometry; a model with unpublished dimensions gives None.
MODELS = {
    model_id: model
    for model_id, model in ALL_MODELS.items()
    if kv_report(model, parse_element_type("bf16"), 1).bytes_per_token is not None
}
KNOWN_IDS = sorted(MODELS)
contexts = st.integers(min_value=0, max_value=2_000_000)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(KNOWN_IDS),
    contexts,
    contexts,
    st.sampled_from(["bf16", "fp8", "int2-g32", "nvfp4", "fp8-per-token-head"]),
)
def test_kv_bytes_never_decrease_with_context(
    model_id: str, first: int, second: int, dtype: str
) -> None:
    shorter, longer = sorted((first, second))
    element = parse_element_type(dtype)
    low = kv_report(MODELS[model_id], element, shorter).kv_bytes_at_context
    high = kv_report(MODELS[model_id], element, longer).kv_bytes_at_context
    assert low is not None and high is not None and low <= high


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(KNOWN_IDS), contexts)
def test_a_window_caps_its_layers(model_id: str, context: int) -> None:
    report = kv_report(MODELS[model_id], parse_element_type("bf16"), context)
    for cost in report.groups:
        window = cost.group.window
        assert cost.tokens_held == (context if window is None else min(context, window))
        if window is not None and context >= window:
            assert cost.kv_bytes == (cost.bytes_per_token or 0) * window


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(KNOWN_IDS), contexts)
def test_halving_the_element_halves_the_bytes(model_id: str, context: int) -> None:
    """Everything but the indexer keys a model stores in a type of their own (DeepSeek-V3.2's
    fp8 keys, a fixed cost whatever the basis) halves with the element."""
    model = MODELS[model_id]
    fixed_per_token = Fraction(0)
    fixed_at_context = Fraction(0)
    for group in model.leaf_groups():
        indexer = getattr(group, "indexer", None)
        if indexer is not None and indexer.dtype is not None:
            keys = indexer.token_elements()
            assert keys is not None
            one = group.layers * parse_element_type(indexer.dtype).bytes_for(keys)
            fixed_per_token += one
            held = context if group.window is None else min(context, group.window)
            fixed_at_context += one * held
    for wide, narrow in [("bf16", "fp8"), ("fp8", "fp4"), ("fp32", "bf16")]:
        wide_report = kv_report(model, parse_element_type(wide), context)
        narrow_report = kv_report(model, parse_element_type(narrow), context)
        assert wide_report.bytes_per_token is not None and narrow_report.bytes_per_token is not None
        assert 2 * narrow_report.bytes_per_token - wide_report.bytes_per_token == fixed_per_token
        assert narrow_report.kv_bytes_at_context is not None
        assert wide_report.kv_bytes_at_context is not None
        assert (
            2 * narrow_report.kv_bytes_at_context - wide_report.kv_bytes_at_context
            == fixed_at_context
        )


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(KNOWN_IDS))
def test_counterfactual_is_never_smaller_per_token(model_id: str) -> None:
    model = MODELS[model_id]
    bf16 = parse_element_type("bf16")
    shapes = {
        group.token_formula()
        for group in model.leaf_groups()
        if group.kind in ("attention", "sliding_window")
    }
    if len(shapes) != 1:  # MLA-only models, or attention layers of two shapes (Gemma 4)
        with pytest.raises(ValueError, match=r"no attention layers|no one shape"):
            kv_report(model, bf16, 1, "all_layers_as_full_attention")
        return
    actual = kv_report(model, bf16, 1).bytes_per_token
    everything = kv_report(model, bf16, 1, "all_layers_as_full_attention").bytes_per_token
    assert actual is not None and everything is not None
    assert Fraction(everything) >= Fraction(actual)


def test_the_invariants_cover_every_kind_of_model() -> None:
    kinds = {group.kind for model in MODELS.values() for group in model.leaf_groups()}
    assert kinds >= {
        "attention",
        "sliding_window",
        "mla",
        "linear_attention",
        "mamba1",
        "mamba2",
        "shared",
        "none",
    }


RECORD_SCHEMA = __import__("json").loads((REPO / "schema/record.schema.json").read_text())
prose_text = st.text(
    st.characters(blacklist_categories=["Cs", "Cc"], blacklist_characters="\ufeff"), max_size=300
)


@settings(max_examples=120, deadline=None)
@given(
    st.sampled_from([p for p in SEED_PATHS if isinstance(_value(SEED_DATA, p), str)]),
    prose_text,
    st.text("abc xyz#:", min_size=1, max_size=20).filter(lambda c: c.strip()),
)
def test_fmt_round_trips_a_record(path: tuple[Any, ...], text: str, comment: str) -> None:
    from kvrecords.tools.fmt import format_text

    data = YAML(typ="safe", pure=True).load(SEED.read_text())
    target = data
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = text
    source = dump(data).decode("utf-8")
    # comments on their own lines at the top and at the end
    source = f"# {comment}\n{source}# {comment}\n"
    before = parse_document(source.encode(), "x.yaml")
    # the generating dumper writes a few YAML corners libyaml does not read; those are not records
    assume(isinstance(before, Document))
    assert isinstance(before, Document)
    once = format_text(source, "record", RECORD_SCHEMA)
    after = parse_document(once.encode(), "x.yaml")
    assert isinstance(after, Document)
    assert after.data == before.data
    assert once.count(f"# {comment.rstrip()}") >= 2  # trailing spaces of a comment are dropped
    assert format_text(once, "record", RECORD_SCHEMA) == once


# ---- dependency mode: a changed model or hardware file re-checks every record naming it -------

SEED_ID = "kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090"
MODEL_ID = "qwen3-8-27b"
HARDWARE_ID = "rtx-5090"


def _spellings(key: str, value: str, pad: str) -> list[str]:
    """Ways to write ``key: value`` in a block mapping indented by ``pad``; all read the same."""
    escaped_first = f"\\x{ord(value[0]):02x}{value[1:]}"
    return [
        f"{pad}{key}: {value}",
        f'{pad}"{key}": {value}',
        f"{pad}'{key}': \"{value}\"",
        f"{pad}{key}:\n{pad}  {value}",
        f"{pad}{key}:  # the {key}\n{pad}  {value}",
        f'{pad}{key}: "{value[:3]}\\\n{pad}  {value[3:]}"',  # an escaped line break
        f'{pad}{key}: "{escaped_first}"',
        f'{pad}{key}: "\\u{ord(value[0]):04x}{value[1:]}"',
        f"{pad}? {key}\n{pad}: {value}",
        f"{pad}{key}: >-\n{pad}  {value}",
        f"{pad}{key}: |-\n{pad}  {value}",
        f'{pad}"\\x{ord(key[0]):02x}{key[1:]}": {value}',
        f"{pad}{key}:\t{value}",
        f"{pad}{key}: {value}  # {value}",
    ]


SPELLINGS = len(_spellings("model", MODEL_ID, ""))
SEED_TEXT = SEED.read_text(encoding="utf-8")
_ACCELERATOR_LINE = re.compile(rf"^( *)accelerator: {HARDWARE_ID}$", re.MULTILINE)


def _linked_record(slug: str, model: str, hardware: str, spelling: int) -> str:
    """The seed under ``slug``, naming ``model`` and ``hardware`` in spelling ``spelling``."""
    text = SEED_TEXT.replace(SEED_ID, f"kv-efficiency/{slug}")
    if spelling == SPELLINGS:  # the whole record as JSON, which is YAML in flow style
        document = parse_document(text.encode(), slug)
        assert isinstance(document, Document)
        data = dict(document.data, model=model)
        text = json.dumps(data, indent=None).replace(f'"{HARDWARE_ID}"', f'"{hardware}"')
        return f"# yaml-language-server: $schema=../../schema/record.schema.json\n{text}\n"
    assert f"\nmodel: {MODEL_ID}\n" in text
    text = text.replace(
        f"\nmodel: {MODEL_ID}\n", "\n" + _spellings("model", model, "")[spelling] + "\n"
    )
    return _ACCELERATOR_LINE.sub(
        lambda m: _spellings("accelerator", hardware, m.group(1))[spelling],
        text,
    )


# Each change with whether the full run then fails a record built on the seed.
MODEL_CHANGES = [
    ("kv_heads: 4", "kv_heads: 8", True),
    ("kv_heads: 4", "kv_heads: 1", True),
    ("head_dim: 256", "head_dim: 128", True),
    ("num_layers: 64", "num_layers: 65", True),  # groups no longer add up: the model is broken
    ("kv_heads: 4", "kv_heads: 0", True),  # fails the model schema
]
HARDWARE_CHANGES = [
    ("usable_gib: 31.84", "usable_gib: 12", True),
    ("nominal_gib: 32", "nominal_gib: 8\n  bogus: 1", True),  # fails the hardware schema
    # the seed states no decode rate, so nothing rests on the bandwidth
    ("memory_bandwidth_gb_s: 1792", "memory_bandwidth_gb_s: 1", False),
]


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["model", "hardware"]),
    st.integers(min_value=0, max_value=len(HARDWARE_CHANGES) - 1),
    st.integers(min_value=0, max_value=len(MODEL_CHANGES) - 1),
    st.lists(
        st.tuples(st.booleans(), st.integers(min_value=0, max_value=SPELLINGS)),
        min_size=1,
        max_size=4,
    ),
)
def test_a_changed_model_or_hardware_file_rechecks_every_record_naming_it(
    target: str, hardware_change: int, model_change: int, records: list[tuple[bool, int]]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = copy_dataset(Path(folder) / "dataset", with_records=False)
        dependents = set()
        for index, (links, spelling) in enumerate(records):
            slug = f"record-{index}"
            model, hardware = MODEL_ID, HARDWARE_ID
            if not links and target == "model":
                model = "llama-3.1-8b"
            if not links and target == "hardware":
                hardware = "rtx-4090"
            text = _linked_record(slug, model, hardware, spelling)
            # every spelling reads as the canonical one does
            canonical = _linked_record(slug, model, hardware, 0)
            read, expected = (parse_document(t.encode(), slug) for t in (text, canonical))
            assert isinstance(read, Document) and isinstance(expected, Document)
            assert read.data == expected.data, spelling
            display = f"records/kv-efficiency/{slug}.yaml"
            (root / display).write_text(text, encoding="utf-8")
            if links:
                dependents.add(display)
        if target == "model":
            changed = root / "models" / f"{MODEL_ID}.yaml"
            old, new, breaks = MODEL_CHANGES[model_change]
        else:
            changed = root / "hardware" / f"{HARDWARE_ID}.yaml"
            old, new, breaks = HARDWARE_CHANGES[hardware_change]
        before = changed.read_text(encoding="utf-8")
        assert old in before
        changed.write_text(before.replace(old, new, 1), encoding="utf-8")

        full = validate(root).problems
        one_file = validate(root, [changed]).problems
        for display in dependents:
            assert [p for p in one_file if p.path == display] == [
                p for p in full if p.path == display
            ], display
        changed_display = changed.relative_to(root).as_posix()
        assert [p for p in one_file if p.path == changed_display] == [
            p for p in full if p.path == changed_display
        ]
        # records that do not name the changed file are left out of a one-file run
        assert {p.path for p in one_file} <= dependents | {changed_display}
        # a breaking change shows: the full run fails the dependents (or the changed file itself)
        if breaks and dependents:
            assert any(p.path in dependents | {changed_display} for p in full)


# Pieces of prose that once made the claim scan quadratic (a chain with no result, repeated
# percentages, quotients and parenthesised sums), and pieces of every token the scan knows.
ADVERSARIAL_PROSE = [
    "= ",
    "1 x ",
    "1% x ",
    "1 / ",
    "(1 + ",
    "(",
    ")",
    "2^",
    "9e99 x ",
    "1,000",
    "1\u2009000 ",
    ",",
    " ",
    "\n",
    "-",
    "43-45 ",
    " - ",
    "(a ",
    "(K+V) ",
    "x",
    "x 2 = 4 ",
    "= 1 ",
    "150k ",
    "2 GiB ",
    "B/token ",
    "bytes per token ",
    "which is ",
    "is about ",
    "~",
    "layers ",
    "93.5% of ",
    "4x ",
    "1 000 ",
    "1'000 ",
    "1,5 ",
    " times ",
    " by ",
    "from ",
    " to ",
    " ~ ",
    "-1 ",
    " x 10^9 B ",
    "gibibytes ",
    " % of ",
]


class _WorkCounter:
    """Counts what the prose scan does: tokens found, numbers read, items evaluated."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.tokens = self.numbers = self.items = 0
        token_re, read_number, evaluate = prose._TOKEN_RE, prose._number, prose._evaluate

        class Tokens:
            @staticmethod
            def finditer(text: str, *span: int) -> Iterator[re.Match[str]]:
                for token in token_re.finditer(text, *span):
                    self.tokens += 1
                    yield token

        def number(*args: Any, **kwargs: Any) -> Any:
            self.numbers += 1
            return read_number(*args, **kwargs)

        def evaluated(items: list[Any]) -> Any:
            self.items += len(items)
            return evaluate(items)

        monkeypatch.setattr(prose, "_TOKEN_RE", Tokens)
        monkeypatch.setattr(prose, "_number", number)
        monkeypatch.setattr(prose, "_evaluate", evaluated)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(ADVERSARIAL_PROSE), min_size=1, max_size=40),
    st.integers(min_value=1, max_value=400),
)
def test_the_prose_scan_does_work_linear_in_the_text(pieces: list[str], repeats: int) -> None:
    text = "".join(pieces) * repeats
    with pytest.MonkeyPatch.context() as monkeypatch:
        work = _WorkCounter(monkeypatch)
        scanned = prose.scan(text)
    assert work.tokens <= len(text)
    # each token is read and evaluated in at most two expressions: as a result, then as the
    # first number of the next
    assert work.numbers <= 2 * work.tokens + 1
    assert work.items <= 2 * work.tokens + 1
    assert len(scanned.claims) + len(scanned.unreadable) <= work.tokens


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([*ADVERSARIAL_PROSE, ". ", ".\n", "3. ", "= 9.16. "]), max_size=30))
def test_scanning_sentence_by_sentence_finds_what_one_pass_over_the_text_finds(
    pieces: list[str],
) -> None:
    text = "".join(pieces)
    whole = prose._Scan(text, None)
    if prose._may_hold_arithmetic(text):
        whole.run(0, len(text))
    scanned = prose.scan(text)
    assert scanned.claims == whole.claims
    assert scanned.unreadable == whole.unreadable
    tokens = list(prose._TOKEN_RE.finditer(text))
    assert scanned.per_token == prose._per_token(text, tokens)


@settings(max_examples=8, deadline=None)
@given(st.lists(st.sampled_from(ADVERSARIAL_PROSE), min_size=1, max_size=12))
def test_the_prose_scan_of_text_up_to_the_size_cap_takes_seconds_not_minutes(
    pieces: list[str],
) -> None:
    unit = "".join(pieces)
    text = (unit * (MAX_FILE_BYTES // len(unit) + 1))[:MAX_FILE_BYTES]
    started = time.process_time()
    prose.scan(text, limit=1000)
    # about a second on the 2-core reference machine; a quadratic scan took over 15 minutes
    assert time.process_time() - started < 20
