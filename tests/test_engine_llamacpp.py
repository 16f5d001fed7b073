"""The llama.cpp engine model against current builds: the recurrent-state line, the pinned
build's own start-up logs (tests/fixtures/llamacpp, from tools/llamacpp-ground-truth), and
which eras agree with a printed figure.

Each expected figure is a line llama.cpp printed, quoted from the public source named beside
it or captured by running the pinned build, with the hand computation in the comment.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO
from kvrecords.dataset.models import load_model_file
from kvrecords.kv.engines import EngineError, engine_report, llamacpp
from kvrecords.kv.geometry import Attention, GatedDeltaNet, Model
from kvrecords.tools.engine_logs import read_log, read_log_file

MIB = 1 << 20
FIXTURES = REPO / "tests" / "fixtures" / "llamacpp"


def model(model_id: str) -> Model:
    return load_model_file(REPO / "models" / f"{model_id}.yaml")


# Qwen3.6-27B's cache as the figures below fix it: 64 layers, every 4th full attention (16 x 4
# KV heads x 256), 48 Gated DeltaNet layers with 16 key heads and 48 value heads of 128 and a
# conv kernel of 4.
QWEN36_27B = Model(
    "qwen3.6-27b-shape",
    "64 layers: 16 attention (4 x 256) + 48 Gated DeltaNet (16 key, 48 value heads of 128)",
    64,
    (Attention(16, 4, 256), GatedDeltaNet(48, 4, 16, 48, 128, 128)),
)

# Qwen3.5-9B: 32 layers, 8 full attention (4 KV heads x 256), 24 Gated DeltaNet layers with
# 16 key and 32 value heads of 128, conv kernel 4, as the printed figures below fix it (no
# config.json was read).
QWEN35_9B = Model(
    "qwen3.5-9b-shape",
    "32 layers: 8 attention (4 x 256) + 24 Gated DeltaNet (16 key, 32 value heads of 128)",
    32,
    (Attention(8, 4, 256), GatedDeltaNet(24, 4, 16, 32, 128, 128)),
)


def line_named(report_lines: tuple[str, ...], prefix: str) -> str:
    (line,) = [line for line in report_lines if line.startswith(prefix)]
    return line


# --- the recurrent-state line ------------------------------------------------------------


def test_recurrent_line_before_rs_seq_pr_22673() -> None:
    # https://github.com/ggml-org/llama.cpp/pull/22673 (comment of 2026-05-07, "current
    # master (e358d75a)", Qwen3.6-27B):
    #   llama_memory_recurrent: size =  149.62 MiB (     1 cells,  64 layers,  1 seqs),
    #   R (f32):    5.62 MiB, S (f32):  144.00 MiB
    # By hand, f32, one cell: R 48 x (4 - 1) x (48 x 128 + 2 x 16 x 128) x 4 B = 5,898,240 B
    # = 5.625 MiB (printed 5.62, ties to even); S 48 x 128 x 48 x 128 x 4 B = 150,994,944 B =
    # 144 MiB; together 156,893,184 B = 149.625 MiB, printed 149.62.
    report = engine_report(QWEN36_27B, "llamacpp", 4096, version="2026-01-v-less")
    assert line_named(report.printed, "llama_memory_recurrent") == (
        "llama_memory_recurrent: size =  149.62 MiB (     1 cells,  64 layers,  1 seqs),"
        " R (f32):    5.62 MiB, S (f32):  144.00 MiB"
    )
    assert sum(p.bytes or 0 for p in report.cache_parts("recurrent_state")) == 156_893_184


def test_recurrent_line_of_build_7404_qwen3_next() -> None:
    # https://github.com/pestopoppa/epyc-inference-research/blob/65366ad3e5eef7f127e9fb6cdc10ec051676dbe4/benchmarks/results/runs/20251217_104145/thinking/Qwen3-Next-80B-A3B-Thinking_baseline_t1_q1_algorithm.txt
    # (build 7404 (52392291b), -c 4096, one sequence):
    #   llama_kv_cache: size =   96.00 MiB (  4096 cells,  12 layers,  1/1 seqs), K (f16):
    #   48.00 MiB, V (f16):   48.00 MiB
    #   llama_memory_recurrent: size =   75.38 MiB (     1 cells,  48 layers,  1 seqs), R (f32):
    #   3.38 MiB, S (f32):   72.00 MiB
    # By hand (models/qwen3-next-80b-a3b): R 36 x 3 x (32 x 128 + 2 x 16 x 128) x 4 B =
    # 3,538,944 B = 3.375 MiB (printed 3.38); S 36 x 128 x 4096 x 4 B = 72 MiB; together
    # 75.375 MiB; KV 12 x 4096 x 2 x 256 x 2 B x 2 = 96 MiB.
    report = engine_report(model("qwen3-next-80b-a3b"), "llamacpp", 4096, version="2025-11-pad-256")
    assert list(report.printed) == [
        "llama_kv_cache: size =   96.00 MiB (  4096 cells,  12 layers,  1/1 seqs),"
        " K (f16):   48.00 MiB, V (f16):   48.00 MiB",
        "llama_memory_recurrent: size =   75.38 MiB (     1 cells,  48 layers,  1 seqs),"
        " R (f32):    3.38 MiB, S (f32):   72.00 MiB",
    ]


def test_recurrent_line_with_rs_seq_qwen35_9b_b9849() -> None:
    # A public start-up log of Qwen3.5-9B (UD-Q4_K_XL) on llama-server build 9849 (799fcc04a),
    # -c 8192 -np 1 (public GitHub code found by its log line):
    #   llama_memory_recurrent: size =   50.25 MiB (     1 cells,  32 layers,  1 seqs  0 rs_seq),
    #   R (f32):    2.25 MiB, S (f32):   48.00 MiB
    # and "Vulkan0 KV buffer size = 256.00 MiB". By hand: R 24 x 3 x (32 x 128 + 2 x 16 x 128)
    # x 4 B = 2,359,296 B = 2.25 MiB; S 24 x 128 x 4096 x 4 B = 50,331,648 B = 48 MiB; the
    # layer count is every layer of the model (32); KV 8 x 8192 x 4 x 256 x 2 B x 2 = 256 MiB.
    report = engine_report(QWEN35_9B, "llamacpp", 8192, version="2026-05-rs-seq")
    assert line_named(report.printed, "llama_memory_recurrent") == (
        "llama_memory_recurrent: size =   50.25 MiB (     1 cells,  32 layers,  1 seqs  0 rs_seq),"
        " R (f32):    2.25 MiB, S (f32):   48.00 MiB"
    )
    assert sum(p.bytes or 0 for p in report.cache_parts("full_attention")) == 256 * MIB


# Qwen3.5-0.8B: 24 layers, 6 full attention (2 KV heads x 256), 18 Gated DeltaNet layers with
# 16 key and 16 value heads of 128, conv kernel 4, as the printed figures below fix it (no
# config.json was read).
QWEN35_0_8B = Model(
    "qwen3.5-0.8b-shape",
    "24 layers: 6 attention (2 x 256) + 18 Gated DeltaNet (16 key, 16 value heads of 128)",
    24,
    (Attention(6, 2, 256), GatedDeltaNet(18, 4, 16, 16, 128, 128)),
)


@pytest.mark.parametrize(
    ("cache_type", "kv_line"),
    [
        ("f16", "size =  384.00 MiB ( 32768 cells,   6 layers,  1/1 seqs), K (f16):  192.00 MiB"),
        ("q8_0", "size =  204.00 MiB ( 32768 cells,   6 layers,  1/1 seqs), K (q8_0):  102.00 MiB"),
        ("q4_0", "size =  108.00 MiB ( 32768 cells,   6 layers,  1/1 seqs), K (q4_0):   54.00 MiB"),
    ],
)
def test_hybrid_lines_qwen35_0_8b_b10488(cache_type: str, kv_line: str) -> None:
    # A public KV-quantization write-up ("Bonus C2 - KV cache quantization", Qwen3.5-0.8B
    # Q4_K_M, llama.cpp b10488, --ctx-size 32768 --parallel 1 -fa on) quotes, for f16, q8_0
    # and q4_0, "llama_kv_cache: <kv_line>, ..." and each time "llama_memory_recurrent: size =
    #   19.27 MiB (     1 cells,  24 layers,  1 seqs  0 rs_seq), R (f32):    1.27 MiB, S (f32):
    #   18.00 MiB". By hand: KV 6 x 32768 x 2 x 256 x 2 B x 2 = 384 MiB in f16, x 17/32 = 204
    # in q8_0, x 9/32 = 108 in q4_0; R 18 x 3 x (16 x 128 + 2 x 16 x 128) x 4 B = 1,327,104 B
    # = 1.27 MiB; S 18 x 128 x 2048 x 4 B = 18 MiB; 20,201,472 B = 19.27 MiB.
    report = engine_report(
        QWEN35_0_8B,
        "llamacpp",
        32768,
        version="2026-05-rs-seq",
        flash_attn="on",
        cache_type_k=cache_type,
        cache_type_v=cache_type,
    )
    assert kv_line in line_named(report.printed, "llama_kv_cache")
    assert line_named(report.printed, "llama_memory_recurrent") == (
        "llama_memory_recurrent: size =   19.27 MiB (     1 cells,  24 layers,  1 seqs  0 rs_seq),"
        " R (f32):    1.27 MiB, S (f32):   18.00 MiB"
    )


def test_recurrent_snapshots_multiply_the_state_rows() -> None:
    # llama-memory-recurrent.cpp (0c1e57098) line 98: each layer's R and S have
    # mem_size x (1 + n_rs_seq) rows. Qwen3.5-9B with 6 snapshots: 7 x 2.25 = 15.75 MiB of R
    # and 7 x 48 = 336 MiB of S, 351.75 MiB, the figures a public MTP run (-np 1, "6 rs_seq")
    # printed: "size =  351.75 MiB (     1 cells,  33 layers,  1 seqs  6 rs_seq), R (f32):
    # 15.75 MiB, S (f32):  336.00 MiB" (its 33 layers count the draft layer as well).
    report = engine_report(QWEN35_9B, "llamacpp", 8192, version="2026-05-rs-seq", rs_seq=6)
    line = line_named(report.printed, "llama_memory_recurrent")
    assert "size =  351.75 MiB" in line
    assert line.endswith("1 seqs  6 rs_seq), R (f32):   15.75 MiB, S (f32):  336.00 MiB")


def test_current_builds_print_a_p_figure() -> None:
    # llama-memory-recurrent.cpp (0c1e57098) lines 133-137 append ", P (f32): %7.2f MiB", the
    # per-layer-embedding conv rows, which no model in models/ has: 0.00.
    report = engine_report(QWEN35_9B, "llamacpp", 8192)
    assert line_named(report.printed, "llama_memory_recurrent").endswith(
        "R (f32):    2.25 MiB, S (f32):   48.00 MiB, P (f32):    0.00 MiB"
    )


def test_rs_seq_before_it_existed_is_refused() -> None:
    with pytest.raises(EngineError, match="PR #22673"):
        engine_report(QWEN35_9B, "llamacpp", 8192, version="2026-01-v-less", rs_seq=2)


# --- reading the recurrent line from a log -----------------------------------------------


def test_log_reader_reads_each_recurrent_line_format() -> None:
    log = "\n".join(
        [
            # PR #22673's comment, master e358d75a (before rs_seq)
            "[41858] llama_memory_recurrent: size =  149.62 MiB (     1 cells,  64 layers,"
            "  1 seqs), R (f32):    5.62 MiB, S (f32):  144.00 MiB",
            # the Qwen3.5-9B log of build 9849 above
            "0.16.900.636 I llama_memory_recurrent:    Vulkan0 RS buffer size =    50.25 MiB",
            "0.16.900.645 I llama_memory_recurrent: size =   50.25 MiB (     1 cells,  32 layers,"
            "  1 seqs  0 rs_seq), R (f32):    2.25 MiB, S (f32):   48.00 MiB",
            # a public LFM2.5-2.6B start-up log (a llama.cpp fork, 2026-09-28) with the P figure
            "I llama_memory_recurrent: size =    0.34 MiB (     1 cells,  30 layers,  1 seqs"
            "  0 rs_seq), R (f32):    0.34 MiB, S (f32):    0.00 MiB, P (f32):    0.00 MiB",
        ]
    )
    old, buffer, rs_seq, with_p = (dict(figure.fields) for figure in read_log(log).figures)
    assert old["size"] == "149.62 MiB" and "rs_seq" not in old and old["s"] == "144.00 MiB"
    assert buffer == {
        "buffer": "Vulkan0",
        "buffer_size": "50.25 MiB",
        "memory": "recurrent_state",
    }
    assert rs_seq["rs_seq"] == "0" and rs_seq["layers"] == "32" and rs_seq["r"] == "2.25 MiB"
    assert with_p["p"] == "0.00 MiB" and with_p["type_p"] == "f32" and with_p["size"] == "0.34 MiB"


def test_log_reader_reads_the_models_own_line() -> None:
    # What the model prints, the log reader reads back, field for field.
    report = engine_report(QWEN35_9B, "llamacpp", 8192, rs_seq=3)
    (figure,) = [
        f for f in read_log("\n".join(report.printed)).figures if f.source.endswith("recurrent")
    ]
    fields = dict(figure.fields)
    assert (fields["rs_seq"], fields["p"], fields["s"]) == ("3", "0.00 MiB", "192.00 MiB")


# --- the pinned build's own logs ---------------------------------------------------------

_SIZE_LINE = re.compile(r"(llama_kv_cache|llama_memory_recurrent): size = .*")
_BYTES = re.compile(r"startup: context memory buffers = ([0-9]+) bytes")


def _fixture(path: Path) -> tuple[str, dict[str, str], list[str], int]:
    text = path.read_text()
    model_id = re.search(r"^# model: (\S+)", text, re.M)
    command = re.search(r"^# command: startup \S+ (.*)$", text, re.M)
    exact = _BYTES.search(text)
    assert model_id and command and exact, f"{path.name} lacks its header or byte count"
    settings = dict(word.split("=") for word in command[1].split())
    lines = [m[0].strip() for m in _SIZE_LINE.finditer(text)]
    return model_id[1], settings, lines, int(exact[1])


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.log")), ids=lambda p: p.stem)
def test_pinned_build_start_up(path: Path) -> None:
    # Each fixture is the start-up of the build llama-cpp-python 0.3.36 pins
    # (ggml-org/llama.cpp@0c1e57098), run by tools/llamacpp-ground-truth on a tiny GGUF with
    # the model's cache shape. Its era's accounting must give every printed size line exactly
    # and the exact bytes of the context's memory buffers.
    model_id, settings, lines, exact = _fixture(path)
    report = engine_report(
        model(model_id),
        "llamacpp",
        int(settings["ctx"]),
        version=llamacpp.PINNED_BUILD[1],
        parallel=int(settings["parallel"]),
        ubatch=int(settings.get("ubatch", "512")),
        flash_attn=settings["fa"],
        kv_unified=settings["kv_unified"] == "1",
        swa_full=settings["swa_full"] == "1",
        rs_seq=int(settings.get("rs_seq", "0")),
        cache_type_k=settings.get("ctk", "f16"),
        cache_type_v=settings.get("ctv", "f16"),
    )
    assert lines, f"{path.name} has no size line"
    assert list(report.printed) == lines
    assert report.engine_kv_bytes == exact


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.log")), ids=lambda p: p.stem)
def test_kv_from_log_reads_the_pinned_build(path: Path) -> None:
    # kvrecords kv --from-log finds every size line of a real start-up, with its cells
    _, _, lines, _ = _fixture(path)
    sizes = [f for f in read_log_file(path).figures if dict(f.fields).get("cells")]
    sizes = [f for f in sizes if "size" in dict(f.fields)]
    assert [f.quoted for f in sizes] == lines


def test_the_fixtures_cover_each_kind_of_cache() -> None:
    # dense GQA, MLA, sliding windows (both iSWA patterns) and the recurrent state
    names = {path.stem for path in FIXTURES.glob("*.log")}
    assert {"llama-3.1-8b", "deepseek-v3", "gemma-2-9b", "qwen3-next-80b-a3b"} <= names


def test_the_pinned_build_maps_to_the_latest_era() -> None:
    assert llamacpp.PINNED_BUILD == ("0c1e57098", llamacpp.LATEST)
    report = engine_report(model("qwen3-8b"), "llamacpp", 2560, version="latest")
    assert report.version == "2026-10-p-row"


def test_a_transposed_v_is_as_wide_as_the_models_widest() -> None:
    # llama-kv-cache.cpp (0c1e57098) line 210: without flash attention every layer's V row is
    # hparams.n_embd_v_gqa_max(), the widest of the whole model, in the window cache too.
    # gemma-4-e4b, -c 1000 (1,024 cells), -fa off: the window layers' V rows are 2 x 512, not
    # 2 x 256: V 20 x 1024 x 1024 x 2 B = 40 MiB beside K 20 x 1024 x 512 x 2 B = 20 MiB, as
    # the pinned build printed (tests/fixtures/llamacpp/gemma-4-e4b-fa-off.log):
    #   llama_kv_cache: size =   60.00 MiB (  1024 cells,  20 layers,  1/1 seqs), K (f16):
    #   20.00 MiB, V (f16):   40.00 MiB
    report = engine_report(model("gemma-4-e4b"), "llamacpp", 1000, flash_attn="off")
    assert report.printed[1] == (
        "llama_kv_cache: size =   60.00 MiB (  1024 cells,  20 layers,  1/1 seqs),"
        " K (f16):   20.00 MiB, V (f16):   40.00 MiB"
    )


def test_mla_refuses_different_k_and_v_types() -> None:
    # The pinned build, asked for -ctk q8_0 with an f16 V on deepseek-v3 (make_fixtures.py):
    #   llama_init_from_model: model does not support different K (q8_0) and V (f16) cache types
    with pytest.raises(EngineError, match="different K and V cache types"):
        engine_report(model("deepseek-v3"), "llamacpp", 1000, cache_type_k="q8_0")


# --- which eras agree with a printed figure ----------------------------------------------

Q8_FA = llamacpp.LlamaCppOptions(cache_type_k="q8_0", cache_type_v="q8_0", flash_attn="on")


def test_an_mla_figure_names_the_eras_it_fits_pr_259() -> None:
    # deepseek-v3, 32,768 cells, q8_0 (34 B per 32 values): K 61 x 32768 x 576 x 34/32 B =
    # 1,223,294,976 B = 1166.625 MiB, printed 1166.62 (ik_llama.cpp PR #259 prints that K-only
    # figure); V 61 x 32768 x 512 x 34/32 B = 1,087,373,312 B = 1037 MiB. K only: the eras
    # since PR #19067; K and V (2203.625, printed 2203.62): the latent eras before it.
    v_less = llamacpp.agreeing_eras(model("deepseek-v3"), 32768, "1166.62 MiB", Q8_FA)
    assert v_less == ("2026-01-v-less", "2026-05-rs-seq", "2026-10-p-row")
    with_v = llamacpp.agreeing_eras(model("deepseek-v3"), 32768, "2203.62 MiB", Q8_FA)
    assert with_v == (
        "2025-04-mla",
        "2025-05-swa",
        "2025-07-streams",
        "2025-10-no-pad",
        "2025-11-pad-256",
    )


def test_a_figure_no_era_gives_names_none() -> None:
    # 1166.63 is not what llama.cpp prints for 1166.625 MiB (it rounds the float to even)
    assert llamacpp.agreeing_eras(model("deepseek-v3"), 32768, "1166.63 MiB", Q8_FA) == ()


def test_eras_for_one_printed_cache_and_exact_bytes() -> None:
    # The recurrent line of PR #22673's comment (149.62 MiB, 156,893,184 B, computed in
    # test_recurrent_line_before_rs_seq_pr_22673) is the same in every era: without snapshots
    # the state has not changed. Exact bytes must be equal, not merely round alike.
    on = llamacpp.LlamaCppOptions(flash_attn="on")
    eras = llamacpp.agreeing_eras(QWEN36_27B, 4096, "149.62 MiB", on, cache="recurrent_state")
    assert eras == tuple(llamacpp.ERAS)
    exact = llamacpp.agreeing_eras(QWEN36_27B, 4096, 156_893_184, on, cache="recurrent_state")
    assert exact == eras
    assert llamacpp.agreeing_eras(QWEN36_27B, 4096, 156_893_185, on, "recurrent_state") == ()


def test_a_cache_an_era_does_not_build_does_not_agree() -> None:
    # gemma-3-27b has a separate window cache only since PR #13194 (2025-05-swa)
    on = llamacpp.LlamaCppOptions(flash_attn="on")
    eras = llamacpp.agreeing_eras(model("gemma-3-27b"), 4096, 0, on, cache="sliding_window")
    assert eras == ()
    with pytest.raises(EngineError, match="not a size"):
        llamacpp.agreeing_eras(model("gemma-3-27b"), 4096, "lots", on)
