"""KV807 on vLLM's maximum concurrency for window and hybrid models: what the run leaves
unstated is read the way most favourable to the record, and nothing it states is ignored.

The fixture records are tests/cases/KV807/*/max-concurrency-{window,hybrid}; their comments
hold the hand computations these tests rest on.
"""

from __future__ import annotations

from pathlib import Path

from conftest import copy_dataset
from kvrecords.runner.validate import validate

CASES = Path(__file__).parent / "cases" / "KV807"
RECORDS = Path("records/kv-efficiency")


def _kv807(tmp_path: Path, case: str, edit: tuple[str, str] = ("", "")) -> list[str]:
    """The KV807 messages of one fixture record after replacing ``edit[0]`` by ``edit[1]``."""
    return _kv807_edits(tmp_path, case, (edit,) if edit[0] else ())


def _kv807_edits(tmp_path: Path, case: str, edits: tuple[tuple[str, str], ...]) -> list[str]:
    root = copy_dataset(tmp_path / "dataset", with_records=False)
    (source,) = (CASES / case).glob("records/kv-efficiency/*.yaml")
    text = source.read_text(encoding="utf-8")
    for old, new in edits:
        assert old in text
        text = text.replace(old, new)
    (root / RECORDS / source.name).write_text(text, encoding="utf-8")
    return [p.message for p in validate(root).problems if p.code == "KV807"]


def test_a_concurrency_below_every_reading_is_an_error(tmp_path: Path) -> None:
    # 336 to 339 blocks / 204 blocks a request = 1.647 to 1.662 on the 0.11 reading; every
    # later reading only adds state pages or reads 90,048 / 215,040 = 0.42, so 0.30 is below
    # all of them.
    (message,) = _kv807(tmp_path, "pass/max-concurrency-hybrid", ("1.66", "0.30"))
    assert message.startswith("max_concurrency is 0.30; vLLM ")


def test_drafted_tokens_of_unstated_count_leave_the_low_side_open(tmp_path: Path) -> None:
    # From 0.15.0 each drafted token adds a state page per request and layer group, so with
    # speculative decoding of unknown draft count any lower concurrency can be right.
    drafting = "  workload: Engine start-up"
    stated = "  speculative_decoding: {method: mtp}\n  workload: Engine start-up"
    low = _kv807(tmp_path / "a", "pass/max-concurrency-hybrid", ("1.66", "0.30"))
    assert low  # the test above: below every reading
    edits = (("1.66", "0.30"), (drafting, stated))
    root = tmp_path / "b"
    assert _kv807_edits(root, "pass/max-concurrency-hybrid", edits) == []
    # the low side open, the high side still holds: 6.61 is above every reading
    assert _kv807(tmp_path / "c", "fail/max-concurrency-hybrid", (drafting, stated))


def test_the_batch_the_flags_quote_decides_the_window_blocks(tmp_path: Path) -> None:
    # With max_num_batched_tokens 2,048 quoted, a request takes 137 window blocks and the
    # log's 284.25 is the only reading; without it the window group may take 9 to 1,025
    # blocks (330,018 / 2,049 = 161.06 to 330,019 / 1,033 = 319.48), so 248.25 passes.
    assert _kv807(tmp_path / "a", "fail/max-concurrency-window")
    unquoted = ("      - max_num_batched_tokens=2048 (printed)\n", "")
    assert _kv807(tmp_path / "b", "fail/max-concurrency-window", unquoted) == []


def test_whole_blocks_per_request_are_read_for_full_attention_models(tmp_path: Path) -> None:
    # 0.10.0 to 0.20.x: 63,000 blocks of 16 tokens print 'GPU KV cache size: 1,008,000 tokens';
    # a 1,000-token request takes cdiv(1,000, 16) = 63 blocks, so vLLM prints 63,000 / 63 =
    # 1000.00x, not 1,008,000 / 1,000 = 1008.00x. The check allows down to 1,008,000 /
    # 1,024 = 984.38 (N rounded up to the largest block, 256 tokens) and no lower.
    edits = (
        ("value: 93872", "value: 1008000"),
        ("93,872 tokens", "1,008,000 tokens"),
        ("value: 7.53", "value: {}"),
        ("16,384 tokens per request: 7.53x", "1,000 tokens per request: {}x"),
    )

    def messages(figure: str, where: Path) -> list[str]:
        filled = tuple((old, new.format(figure)) for old, new in edits)
        return _kv807_edits(where, "fail/max-concurrency", filled)

    assert messages("1000.00", tmp_path / "a") == []
    (message,) = messages("980.00", tmp_path / "b")
    assert "= 1,008 (down to 984.375 in whole 256-token blocks)" in message
