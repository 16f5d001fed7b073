"""``kvrecords fmt``: canonical form, and the guarantees that it never loses a value or a comment."""

from __future__ import annotations

import io
import itertools
import os
import re
import stat
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURE_DATASET, run_cli
from kvrecords.dataset import atomic
from kvrecords.dataset.document import Document, parse_document
from kvrecords.tools import fmt as formatting
from kvrecords.tools.fmt import (
    FormatRefused,
    UnsafeFormat,
    check_file,
    format_file,
    format_text,
    load_schema,
)

REPO = Path(__file__).resolve().parents[1]
SEED = Path("records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml")
MODEL = Path("models/qwen3-8-27b.yaml")
RECORD_MODELINE = "# yaml-language-server: $schema=../../schema/record.schema.json"


@pytest.fixture
def record_schema() -> dict[str, Any]:
    return load_schema(REPO, "record")


def data_of(text: str) -> Any:
    document = parse_document(text.encode("utf-8"), "<test>")
    assert isinstance(document, Document), document
    return document.data


def comment_texts(text: str) -> Counter[str]:
    """Comments found between tokens (never inside scalars), without the schema modeline."""
    comments = formatting._comments(text)
    return Counter(c.text for c in comments if not c.text.startswith("# yaml-language-server:"))


def dataset_files(root: Path) -> list[Path]:
    return sorted([*root.glob("records/**/*.yaml"), *root.glob("models/*.yaml")])


# ---- the repository's files ---------------------------------------------------------------


def test_seed_is_stable_after_one_run(record_schema: dict[str, Any]) -> None:
    seed = (FIXTURE_DATASET / SEED).read_text(encoding="utf-8")
    once = format_text(seed, "record", record_schema)
    assert format_text(once, "record", record_schema) == once
    assert data_of(once) == data_of(seed)
    assert once.startswith(RECORD_MODELINE + "\n")


def test_every_record_and_model_is_stable_after_one_run(dataset: Path) -> None:
    files = dataset_files(dataset)
    assert len(files) >= 25
    for path in files:
        before = path.read_text(encoding="utf-8")
        format_file(path, dataset)
        after = path.read_text(encoding="utf-8")
        assert data_of(after) == data_of(before), path
        assert comment_texts(after) == comment_texts(before), path
        assert check_file(path, dataset), f"{path} changes on a second run"
        assert not format_file(path, dataset)


def test_formatted_repository_files_still_validate(dataset: Path) -> None:
    from kvrecords.runner.validate import validate

    before = {(p.path, p.code) for p in validate(dataset).problems}
    for path in dataset_files(dataset):
        format_file(path, dataset)
    assert {(p.path, p.code) for p in validate(dataset).problems} == before


# ---- canonical form -------------------------------------------------------------------------


def _shuffled(text: str) -> str:
    """The same record with the keys of every mapping in reverse order (a contributor's draft).

    The names under ``figures`` are the contributor's own (no schema order), so they stay.
    """
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    def reverse(node: Any, parent: Any = None) -> Any:
        if isinstance(node, CommentedMap):
            keys = list(node) if parent == "figures" else reversed(list(node))
            flipped = CommentedMap((key, reverse(node[key], key)) for key in keys)
            if node.fa.flow_style():
                flipped.fa.set_flow_style()
            return flipped
        if isinstance(node, CommentedSeq):
            items = CommentedSeq(reverse(item) for item in node)
            if node.fa.flow_style():
                items.fa.set_flow_style()
            return items
        return node

    yaml = YAML(typ="rt")
    stream = io.StringIO()
    yaml.dump(reverse(yaml.load(text)), stream)
    return stream.getvalue()


def test_shuffled_keys_come_back_in_schema_order(record_schema: dict[str, Any]) -> None:
    seed = (FIXTURE_DATASET / SEED).read_text(encoding="utf-8")
    shuffled = _shuffled(seed)
    assert data_of(shuffled) == data_of(seed)
    assert shuffled.split(":")[0] != "id"  # the last key of the seed comes first now
    assert format_text(shuffled, "record", record_schema) == format_text(
        seed, "record", record_schema
    )


def test_key_order_follows_the_schema_at_every_level(record_schema: dict[str, Any]) -> None:
    text = (
        "confidence: 0.5\nmodel: m\nid: kv-efficiency/x\nzeta_unknown: 1\nalpha_unknown: 2\n"
        "kv_bytes_basis:\n  explanation: e\n  dtype: bf16\n"
        "  alternatives:\n    - note: n\n      layers_counted: cache\n"
    )
    out = format_text(text, "record", record_schema)
    keys = [line.split(":")[0] for line in out.split("\n")[1:] if line]
    assert keys == [
        "id", "model", "kv_bytes_basis", "  dtype", "  alternatives", "    - layers_counted",
        "      note", "  explanation", "confidence", "zeta_unknown", "alpha_unknown",
    ]  # fmt: skip


def test_layer_groups_follow_their_kinds_definition() -> None:
    schema = load_schema(REPO, "model")
    text = (
        "layer_groups:\n  - window: 4096\n    head_dim: 128\n    kv_heads: 8\n    layers: 32\n"
        "    kind: sliding_window\n  - d_state: 16\n    kind: mamba1\n    layers: 2\nid: m\n"
    )
    out = format_text(text, "model", schema)
    assert out == (
        "# yaml-language-server: $schema=../schema/model.schema.json\nid: m\nlayer_groups:\n"
        "  - kind: sliding_window\n    layers: 32\n    kv_heads: 8\n    head_dim: 128\n"
        "    window: 4096\n  - kind: mamba1\n    layers: 2\n    d_state: 16\n"
    )


def test_modeline_is_added_or_corrected(record_schema: dict[str, Any]) -> None:
    assert format_text("id: x\n", "record", record_schema) == f"{RECORD_MODELINE}\nid: x\n"
    stale = "# yaml-language-server: $schema=../schema/record.schema.json\nid: x\n"
    assert format_text(stale, "record", record_schema) == f"{RECORD_MODELINE}\nid: x\n"


def test_format_file_writes_the_modeline_for_the_files_place(dataset: Path) -> None:
    path = dataset / MODEL
    path.write_text("\n".join(path.read_text().split("\n")[1:]), encoding="utf-8")
    assert format_file(path, dataset)
    assert path.read_text().startswith(
        "# yaml-language-server: $schema=../schema/model.schema.json\n"
    )


def test_numbers_are_written_exactly_as_they_were(record_schema: dict[str, Any]) -> None:
    text = "confidence: 0.70\nx: [1.0e+3, +1, 010, -0, 1.50, .5]\ny: 65536\nz: 12.500\n"
    out = format_text(text, "record", record_schema)
    assert "confidence: 0.70\n" in out
    assert "x: [1.0e+3, +1, 010, -0, 1.50, .5]\n" in out
    assert "y: 65536\n" in out
    assert "z: 12.500\n" in out


def test_flow_mappings_stay_flow_and_nulls_read_null(record_schema: dict[str, Any]) -> None:
    text = (
        "methodology:\n  concurrency: ~\n  weights_precision:\n"
        "runs:\n  - metrics:\n      - value: {max: 0.90, min: 0.70}\n        name: hit_rate\n"
    )
    out = format_text(text, "record", record_schema)
    assert "  weights_precision: null\n  concurrency: null\n" in out
    assert "      - name: hit_rate\n        value: {min: 0.70, max: 0.90}\n" in out


def test_long_strings_fold_at_96_columns_without_changing_the_value(
    record_schema: dict[str, Any],
) -> None:
    words = " ".join(f"word{i}" for i in range(60))
    value = f"{words}  two  spaces stay, {words} #hash x: colon"
    out = format_text(f"notes: '{value}'\n", "record", record_schema)
    assert out.split("\n")[1] == "notes: >-"
    assert max(len(line) for line in out.split("\n")) <= 96
    assert data_of(out)["notes"] == value


def test_strings_folded_elsewhere_are_rewrapped(record_schema: dict[str, Any]) -> None:
    words = " ".join(f"w{i}" for i in range(50))
    narrow = "notes: >-\n" + "".join(f"  {w}\n" for w in words.split(" "))
    out = format_text(narrow, "record", record_schema)
    lines = out.split("\n")[2:-1]
    assert 2 <= len(lines) <= 3
    assert all(len(line) <= 96 for line in lines)
    assert all(
        len(line) + 1 + len(after.split()[0]) > 96 for line, after in itertools.pairwise(lines)
    )
    assert data_of(out)["notes"] == words


def test_multi_paragraph_strings_fold_exactly(record_schema: dict[str, Any]) -> None:
    value = "first paragraph\nsecond one\n\nthird after a blank line"
    out = format_text(
        f'notes: "{value.encode("unicode_escape").decode()}"\n', "record", record_schema
    )
    assert "notes: >-\n" in out
    assert data_of(out)["notes"] == value


def test_a_string_folding_would_change_stays_as_it_is(record_schema: dict[str, Any]) -> None:
    value = "   leading spaces " + "x " * 60 + "and a trailing space "
    text = f'notes: "{value}"\n'
    out = format_text(text, "record", record_schema)
    assert out == f"{RECORD_MODELINE}\n{text}"


def test_short_strings_plain_when_they_read_back_else_quoted(record_schema: dict[str, Any]) -> None:
    text = (
        "a: 'plain words'\nb: '010'\nc: 'null'\nd: \"no\"\ne: 'true'\nf: 'key: value'\n"
        "g: \"it's\"\nh: '2026-09-02'\ni: 2026-09-02\nj: ''\n"
    )
    out = format_text(text, "record", record_schema)
    assert out.split("\n")[1:-1] == [
        "a: plain words", "b: '010'", "c: 'null'", "d: 'no'", "e: 'true'", "f: 'key: value'",
        "g: it's", "h: '2026-09-02'", "i: 2026-09-02", "j: ''",
    ]  # fmt: skip
    assert data_of(out) == data_of(text)


# Plain, these are booleans, numbers, nulls or dates to YAML 1.1 readers (PyYAML and many others;
# y and n in the 1.1 type repository though not in PyYAML) while YAML 1.2 reads some as text.
YAML11_NOT_TEXT = [
    "no", "No", "NO", "on", "On", "ON", "off", "Off", "yes", "Yes", "y", "Y", "n", "N",
    "12:30", "1:2:3", "190:20:30.15", "-12:30", "0x1A", "0o17", "0b101", "017", "1_000",
    "+1_000", ".5", "+.5", "1.", "-1.5e+3", "~", "null", "=", "<<", "2026-09-02",
    "2001-12-14t21:59:43.10-05:00", ".inf", "-.Inf", ".NaN", "true", "False",
]  # fmt: skip


def _yaml11(text: str) -> Any:
    import yaml

    return yaml.safe_load(text)


@pytest.mark.parametrize("value", YAML11_NOT_TEXT)
def test_strings_yaml_1_1_reads_as_other_types_stay_quoted(
    record_schema: dict[str, Any], value: str
) -> None:
    out = format_text(f"title: '{value}'\nnotes: [a, '{value}']\n", "record", record_schema)
    assert f"title: '{value}'\n" in out
    assert f"notes: [a, '{value}']\n" in out
    assert data_of(out) == {"title": value, "notes": ["a", value]}
    assert _yaml11(out) == {"title": value, "notes": ["a", value]}


yaml_corner_text = st.text(alphabet="0123456789abefnoxyNOY.:_-+~<=! ", min_size=1, max_size=10)


@settings(max_examples=300, deadline=None)
@given(yaml_corner_text)
def test_a_quoted_string_reads_back_the_same_in_yaml_1_1_and_1_2(value: str) -> None:
    schema = load_schema(REPO, "record")
    source = "title: " + "'" + value.replace("'", "''") + "'\n"
    out = format_text(source, "record", schema)
    assert data_of(out)["title"] == value
    assert _yaml11(out)["title"] == value
    if value in ("y", "Y", "n", "N"):
        assert f"title: '{value}'\n" in out


@pytest.mark.parametrize("number", ["0x223DA", "0o17", "0xff"])
def test_hexadecimal_and_octal_numbers_are_refused(
    record_schema: dict[str, Any], number: str
) -> None:
    with pytest.raises(FormatRefused) as refused:
        text = f"runs:\n  - derived:\n      tokens_not_recomputed: {number}\n"
        format_text(text, "record", record_schema)
    (problem,) = refused.value.problems
    assert (problem.code, problem.line, problem.column) == ("KV008", 3, 30)
    assert "write it in decimal" in problem.message


# ---- characters and whitespace that readers disagree on -------------------------------------

LINE_BREAK_LIKE = {"\u2028": "U+2028", "\u2029": "U+2029", "\x85": "U+0085"}


@pytest.mark.parametrize("character", sorted(LINE_BREAK_LIKE))
@pytest.mark.parametrize(
    ("template", "where"),
    [
        ("id: x\nflags: [--a, 'b{c}c']\n", (2, 16)),  # a flow sequence
        ("id: x\nflags:\n  - --a\n  - 'b{c}c'\n", (4, 7)),  # a block sequence
        ("id: x\nnotes: a{c}b\n", (2, 9)),  # a plain scalar
        ("id: x\n# a comment{c}model: hidden\n", (2, 12)),  # a key hidden behind a comment
        ("id: x\nnotes: >-\n  folded{c}text\n", (3, 9)),  # a block scalar
    ],
)
def test_line_break_like_characters_are_refused_at_their_place(
    record_schema: dict[str, Any], character: str, template: str, where: tuple[int, int]
) -> None:
    with pytest.raises(FormatRefused) as refused:
        format_text(template.replace("{c}", character), "record", record_schema)
    (problem,) = refused.value.problems
    assert (problem.code, (problem.line, problem.column)) == ("KV005", where)
    assert problem.message.startswith(LINE_BREAK_LIKE[character])


def test_fmt_check_of_a_dataset_with_a_line_separator_exits_1_with_its_place(
    dataset: Path,
) -> None:
    path = dataset / SEED
    text = path.read_text(encoding="utf-8")
    flags = "    flags:\n      - --enable-prefix-caching\n      - --enable-prompt-tokens-details\n"
    assert flags in text
    path.write_text(text.replace(flags, "    flags: [--enable-prefix-caching, 'a\u2028b']\n"))
    before = path.read_bytes()
    for args in (["fmt", "--check"], ["fmt"], ["fmt", str(SEED)]):
        result = run_cli(*args, cwd=dataset)
        assert result.returncode == 1, result.stdout + result.stderr
        assert "Traceback" not in result.stdout + result.stderr
        assert re.search(
            rf"^{re.escape(SEED.as_posix())}:\d+:\d+: KV005 U\+2028 ", result.stdout, re.M
        )
        assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("escape", "character"), [("\\L", "\u2028"), ("\\P", "\u2029"), ("\\N", "\x85")]
)
def test_escaped_line_break_like_characters_stay_escaped(
    record_schema: dict[str, Any], escape: str, character: str
) -> None:
    text = f'title: "a{escape}b"\nnotes: [x, "c{escape}d"]\n'
    out = format_text(text, "record", record_schema)
    assert character not in out
    assert data_of(out) == {"title": f"a{character}b", "notes": ["x", f"c{character}d"]}
    assert _yaml11(out) == data_of(out)
    assert format_text(out, "record", record_schema) == out


def test_an_escaped_invisible_character_is_not_written_raw(record_schema: dict[str, Any]) -> None:
    # ruamel writes U+202E (right-to-left override) raw even in double quotes
    with pytest.raises(UnsafeFormat, match="U\\+202E"):
        format_text('title: "a\\u202eb"\n', "record", record_schema)


def test_tabs_between_tokens_become_spaces_and_tabs_in_comments_and_text_stay(
    record_schema: dict[str, Any],
) -> None:
    text = (
        "confidence:\t0.62\t# a\ttab\nnotes: |\t# header\n  x\ty\n"
        "title: 'a\tb'\ntechniques: [a,\tb]\n"
    )
    out = format_text(text, "record", record_schema)
    assert "confidence: 0.62  # a\ttab\n" in out
    assert "techniques: [a, b]\n" in out
    assert data_of(out) == data_of(text)
    assert format_text(out, "record", record_schema) == out


def test_fmt_check_on_a_tab_after_a_colon_names_the_file(dataset: Path) -> None:
    path = dataset / SEED
    path.write_text(path.read_text(encoding="utf-8").replace("confidence: ", "confidence:\t"))
    before = path.read_bytes()
    result = run_cli("fmt", "--check", cwd=dataset)
    assert result.returncode == 1
    assert f"would reformat {SEED.as_posix()}: line " in result.stdout
    assert "'confidence:\\t0.62' becomes 'confidence: 0.62'" in result.stdout  # what is wrong
    assert "1 would be reformatted" in result.stdout
    assert path.read_bytes() == before
    assert run_cli("fmt", cwd=dataset).returncode == 0
    assert "\t" not in path.read_text(encoding="utf-8")
    assert run_cli("fmt", "--check", cwd=dataset).returncode == 0


def test_yaml_ruamel_cannot_read_is_reported_at_its_place(
    record_schema: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # were tabs left in, ruamel would refuse the file: the message says where and why. The
    # string '1_000' (a number to ruamel) is what makes fmt ask for ruamel's own tree.
    monkeypatch.setattr(formatting, "_untabbed", lambda text: text)
    text = "id: x\nconfidence:\t0.62\nnotes: 1_000\n"
    with pytest.raises(UnsafeFormat) as refused:
        format_text(text, "record", record_schema, display_path="r.yaml")
    message = str(refused.value)
    assert message.startswith("r.yaml:2:12: ruamel.yaml, which fmt writes with, cannot read")
    assert "\n" not in message and "nothing written" in message


@pytest.mark.parametrize(
    "text",
    [
        "notes: 1_000\n",  # a number to ruamel, text to the safe reader: written as ruamel does
        "notes: >-\n  a folded string,\n\n  then a   second paragraph kept as it is\n",
        "'id': x\n",  # a quoted key
        "published: 2026-09-02\nflags: [--a, 'b c', \"d\"]\nnotes: |\n  one\n  two\n",
    ],
)
def test_the_tree_from_events_formats_as_ruamels_own_tree(
    record_schema: dict[str, Any], monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    fast = format_text(text, "record", record_schema)
    monkeypatch.setattr(formatting, "_tree_from_events", lambda text: None)
    assert fast == format_text(text, "record", record_schema)


def test_the_tree_from_events_formats_every_test_dataset_file_as_ruamels_own_tree(
    fixture_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = sorted((fixture_root / "records").rglob("*.yaml"))
    files += sorted((fixture_root / "models").glob("*.yaml"))
    fast = [formatting._format_path(path, fixture_root)[1] for path in files]
    monkeypatch.setattr(formatting, "_tree_from_events", lambda text: None)
    assert [formatting._format_path(path, fixture_root)[1] for path in files] == fast


# ---- comments -------------------------------------------------------------------------------

COMMENTED = """\
# yaml-language-server: $schema=../../schema/record.schema.json
# header: a draft record
model: qwen3-8-27b  # the seed's model
id: kv-efficiency/draft
kv_bytes_basis:
  # the element type is assumed
  dtype_stated: false
  dtype: bf16  # not stated by the post
  explanation: >-  # checked prose
    Short.
  alternatives:
    - note: every layer  # counterfactual
      # the basis to compare with
      layers_counted: all_layers_as_full_attention
runs:
  - metrics:
      - value: {min: 0.43, max: 0.45}  # steady state
        # the name first
        name: hit_rate
    id: warm
# trailing note
"""


def test_every_comment_is_kept_beside_its_key(record_schema: dict[str, Any]) -> None:
    out = format_text(COMMENTED, "record", record_schema)
    assert comment_texts(out) == comment_texts(COMMENTED)
    assert data_of(out) == data_of(COMMENTED)
    assert (
        out
        == """\
# yaml-language-server: $schema=../../schema/record.schema.json
# header: a draft record
id: kv-efficiency/draft
model: qwen3-8-27b  # the seed's model
kv_bytes_basis:
  dtype: bf16  # not stated by the post
  # the element type is assumed
  dtype_stated: false
  alternatives:
    # the basis to compare with
    - layers_counted: all_layers_as_full_attention
      note: every layer  # counterfactual
  explanation: Short.  # checked prose
runs:
  - id: warm
    metrics:
      # the name first
      - name: hit_rate
        value: {min: 0.43, max: 0.45}  # steady state
# trailing note
"""
    )


def test_formatting_is_idempotent(record_schema: dict[str, Any]) -> None:
    once = format_text(COMMENTED, "record", record_schema)
    assert format_text(once, "record", record_schema) == once
    shuffled = format_text(_shuffled((FIXTURE_DATASET / SEED).read_text()), "record", record_schema)
    assert format_text(shuffled, "record", record_schema) == shuffled


def test_hash_signs_inside_strings_are_not_comments(record_schema: dict[str, Any]) -> None:
    text = "notes: >-\n  PR\n  #754 and a # in prose\nid: 'a #b'\n"
    out = format_text(text, "record", record_schema)
    assert comment_texts(out) == Counter()
    assert data_of(out) == data_of(text)


# ---- guards ---------------------------------------------------------------------------------


def test_a_change_of_data_is_refused(
    record_schema: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    original = formatting._Builder.scalar

    def corrupt(self: Any, node: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
        return "fp16" if value == "bf16" else original(self, node, value, *args, **kwargs)

    monkeypatch.setattr(formatting._Builder, "scalar", corrupt)
    with pytest.raises(UnsafeFormat, match="change the data"):
        format_text((FIXTURE_DATASET / SEED).read_text(), "record", record_schema)


def test_a_rewritten_number_is_refused(
    record_schema: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    original = formatting._Builder.scalar

    def rerender(self: Any, node: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(value, float):
            return formatting._Number(repr(value))  # 0.70 would come out as 0.7
        return original(self, node, value, *args, **kwargs)

    monkeypatch.setattr(formatting._Builder, "scalar", rerender)
    with pytest.raises(UnsafeFormat, match="rewrite a number"):
        format_text("confidence: 0.70\n", "record", record_schema)


def test_a_lost_comment_is_refused(dataset: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = dataset / SEED
    path.write_text(COMMENTED, encoding="utf-8")
    before = path.read_bytes()
    monkeypatch.setattr(formatting, "_anchor", lambda comments, document: [])
    with pytest.raises(UnsafeFormat, match="lose comments"):
        format_file(path, dataset)
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("id: a\nid: b\n", "KV002"),
        ("a: &x 1\nb: *x\n", "KV003"),
        ("a: !!python/object:os.system x\n", "KV004"),
        ("a: 'unclosed\n", "KV001"),
        ("a: .nan\n", "KV008"),
    ],
)
def test_files_the_reader_refuses_are_not_formatted(dataset: Path, text: str, code: str) -> None:
    path = dataset / SEED
    path.write_text(text, encoding="utf-8")
    with pytest.raises(FormatRefused) as refused:
        format_file(path, dataset)
    assert [p.code for p in refused.value.problems] == [code]
    assert refused.value.problems[0].path == SEED.as_posix()
    assert path.read_text(encoding="utf-8") == text
    with pytest.raises(FormatRefused):
        check_file(path, dataset)


def test_symlinks_and_files_outside_the_dataset_are_refused(dataset: Path, tmp_path: Path) -> None:
    link = dataset / "records/kv-efficiency/link.yaml"
    link.symlink_to(dataset / SEED)
    with pytest.raises(FormatRefused, match="symlink"):
        format_file(link, dataset)
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text("id: x\n")
    with pytest.raises(ValueError, match="not a record, model or hardware file"):
        format_file(outside, dataset)


# ---- files on disk --------------------------------------------------------------------------


def test_check_file_on_an_unformatted_file_touches_nothing(dataset: Path) -> None:
    path = dataset / SEED
    path.write_text(_shuffled(path.read_text()), encoding="utf-8")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    before = path.read_bytes()
    listing = sorted(p.name for p in path.parent.iterdir())
    assert check_file(path, dataset) is False
    assert path.read_bytes() == before
    assert path.stat().st_mtime_ns == 1_000_000_000
    assert sorted(p.name for p in path.parent.iterdir()) == listing


def test_format_file_reports_a_change_once_and_keeps_permissions(dataset: Path) -> None:
    path = dataset / SEED
    path.write_text(_shuffled(path.read_text()), encoding="utf-8")
    path.chmod(0o640)
    assert format_file(path, dataset) is True
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert format_file(path, dataset) is False
    assert check_file(path, dataset) is True


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_a_failed_write_leaves_the_original_intact(
    dataset: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    path = dataset / SEED
    path.write_text(_shuffled(path.read_text()), encoding="utf-8")
    before = path.read_bytes()

    def fail(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, failing, fail)
    with pytest.raises(OSError, match="No space left"):
        format_file(path, dataset)
    assert path.read_bytes() == before
    assert _leftovers(path.parent) == []


def test_write_atomically_replaces_the_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text("old\n")
    path.chmod(0o600)
    atomic.write_atomically(path, "new\n")
    assert path.read_text() == "new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert _leftovers(tmp_path) == []


def test_create_new_never_overwrites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "new.yaml"
    atomic.create_new(path, "first\n")
    assert path.read_text() == "first\n"
    with pytest.raises(FileExistsError):
        atomic.create_new(path, "second\n")
    # A file that appears between the check and the link is not overwritten either.
    monkeypatch.setattr(os.path, "lexists", lambda p: False)
    with pytest.raises(FileExistsError):
        atomic.create_new(path, "third\n")
    assert path.read_text() == "first\n"
    assert _leftovers(tmp_path) == []


def test_no_line_of_a_formatted_seed_has_trailing_space(record_schema: dict[str, Any]) -> None:
    out = format_text((FIXTURE_DATASET / SEED).read_text(), "record", record_schema)
    assert not [line for line in out.split("\n") if re.search(r"\s$", line)]
