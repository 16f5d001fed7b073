"""Capture what the pinned llama.cpp prints for the cache of each model in models/ it can express.

For each model a tiny GGUF is written with that model's cache shape (layers, KV heads, head
sizes, window, MLA latent, recurrent state) and the smallest weights the loader takes (hidden
size 64, a 259-token vocabulary); ``startup`` (built by build.sh) loads it and creates a
context, and libllama's start-up lines are kept as tests/fixtures/llamacpp/<model>.log with the
command and the pinned version on top.

Which tensors an architecture needs is learned from the loader itself: a missing tensor is
added, a wrong shape is taken from the loader's "expected" message, and a shape learned for
one layer is given to the other layers of the same kind. No llama.cpp code is carried over.

Usage (gguf-py from the same sdist, numpy, and kvrecords importable):
    PYTHONPATH=$SRC/gguf-py:validator python tools/llamacpp-ground-truth/make_fixtures.py \\
        STARTUP_BINARY [MODEL_ID ...]
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import gguf  # type: ignore[import-not-found]
import numpy as np

from kvrecords.dataset.models import load_model_file
from kvrecords.kv.geometry import (
    Attention,
    GatedDeltaNet,
    Mamba2,
    Model,
    MultiHeadLatent,
)

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "llamacpp"
PIN = "llama-cpp-python 0.3.36, vendor/llama.cpp = ggml-org/llama.cpp@0c1e57098 (2026-10-01)"
HIDDEN = 64
# -c 1000 is not a multiple of 256, so the padding shows
SETTINGS = ("ctx=1000", "parallel=1", "fa=on", "kv_unified=0", "swa_full=0")
# Further runs of a few models: a quantized cache, sequences in streams of their own, state
# snapshots. (file suffix, settings)
VARIANTS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "llama-3.1-8b": (
        ("-q8_0", (*SETTINGS, "ctk=q8_0", "ctv=q8_0")),
        ("-np3", ("ctx=5000", "parallel=3", "fa=on", "kv_unified=0", "swa_full=0")),
        ("-fa-off", ("ctx=1000", "parallel=1", "fa=off", "kv_unified=0", "swa_full=0")),
    ),
    "deepseek-v3": (("-q8_0", (*SETTINGS, "ctk=q8_0", "ctv=q8_0")),),
    "gpt-oss-20b": (
        ("-swa-full", ("ctx=1000", "parallel=1", "fa=on", "kv_unified=0", "swa_full=1")),
        (
            "-ub1024-np2",
            ("ctx=9000", "parallel=2", "ubatch=1024", "fa=on", "kv_unified=0", "swa_full=0"),
        ),
    ),
    "gemma-4-e4b": (
        ("-np4-kvu", ("ctx=5000", "parallel=4", "fa=on", "kv_unified=1", "swa_full=0")),
        ("-fa-off", ("ctx=1000", "parallel=1", "fa=off", "kv_unified=0", "swa_full=0")),
    ),
    "gemma-3-27b": (("-np3", ("ctx=5000", "parallel=3", "fa=on", "kv_unified=0", "swa_full=0")),),
    "qwen3-next-80b-a3b": (
        ("-np2-rs2", ("ctx=5000", "parallel=2", "fa=on", "kv_unified=0", "swa_full=0", "rs_seq=2")),
    ),
    "nemotron-h-8b": (
        ("-np3-rs1", ("ctx=3000", "parallel=3", "fa=on", "kv_unified=1", "swa_full=0", "rs_seq=1")),
    ),
}


class Shape(NamedTuple):
    """How one model is expressed: an architecture, its hyperparameters, the layer kinds."""

    arch: str
    keys: dict[str, Any]
    layer_kind: Callable[[int], str]  # layers of one kind take the same tensors
    note: str
    # optional tensors the graph needs, which the loader does not ask for: (kind, name) -> ne
    extra: dict[tuple[str, str], list[int]] | None = None


def _one(model: Model, kind: type) -> Any:
    groups = [g for g in model.leaf_groups() if isinstance(g, kind) and g.layers]
    return groups


def shape_of(model: Model) -> Shape | str:
    """The architecture that builds this model's cache, or why none here can."""
    leaves = [g for g in model.leaf_groups() if g.layers]
    kinds = {g.kind for g in leaves}
    layers = model.num_layers
    attention = [g for g in leaves if isinstance(g, Attention)]
    if any(None in (g.kv_heads, g.head_dim) for g in attention):
        return "the model file lists the attention head geometry as unknown"
    if kinds == {"attention"} and len(attention) == 1:
        (group,) = attention
        return Shape(
            "llama",
            {
                "attention.head_count": group.kv_heads,
                "attention.head_count_kv": group.kv_heads,
                "attention.key_length": group.head_dim,
                "attention.value_length": group.value_dim,
                "rope.dimension_count": group.head_dim,
            },
            lambda il: "a",
            "expressed as architecture llama (the cache depends only on layers, KV heads and"
            " head sizes)",
        )
    if kinds == {"mla"}:
        (group,) = _one(model, MultiHeadLatent)
        if group.indexer is not None:
            return "a sparse-attention indexer, whose cache the engine model does not cover"
        latent, rope = group.kv_lora_rank, group.qk_rope_head_dim
        return Shape(
            "deepseek2",
            {
                "attention.head_count": 1,
                "attention.head_count_kv": 1,
                "attention.key_length": latent + rope,
                "attention.value_length": latent,
                "attention.key_length_mla": 128 + rope,
                "attention.value_length_mla": 128,
                "attention.kv_lora_rank": latent,
                "attention.q_lora_rank": 0,
                "rope.dimension_count": rope,
                "leading_dense_block_count": layers,
                "expert_feed_forward_length": HIDDEN,
                "expert_shared_count": 1,
            },
            lambda il: "a",
            "expressed as architecture deepseek2 with every layer dense (the MLA cache depends"
            " only on layers, kv_lora_rank and the rope dimension)",
        )
    windowed = [g for g in attention if g.window is not None]
    full = [g for g in attention if g.window is None]
    if kinds == {"attention", "sliding_window"} and len(windowed) == len(full) == 1:
        swa, glob = windowed[0], full[0]
        if (swa.kv_heads, swa.head_dim) != (glob.kv_heads, glob.head_dim):
            return "window and global layers of different head shapes"
        keys = {
            "attention.head_count": swa.kv_heads,
            "attention.head_count_kv": swa.kv_heads,
            "attention.key_length": swa.head_dim,
            "attention.value_length": swa.head_dim,
            "attention.sliding_window": swa.window,
            "rope.dimension_count": swa.head_dim,
        }
        if swa.layers == glob.layers:  # every other layer: gemma2's pattern of 2
            return Shape(
                "gemma2",
                keys,
                lambda il: "a",
                "expressed as architecture gemma2 (window and global layers alternate)",
            )
        if swa.layers + glob.layers == layers and glob.layers == layers // 6:
            return Shape(
                "gemma3",
                keys,
                lambda il: "a",
                "expressed as architecture gemma3 (five window layers to one global)",
            )
        return "a window pattern neither gemma2 (1:1) nor gemma3 (5:1) expresses"
    if kinds == {"attention", "linear_attention"}:
        (glob,) = full
        (gdn,) = _one(model, GatedDeltaNet)
        if None in (gdn.conv_kernel, gdn.key_heads, gdn.value_heads, gdn.key_head_dim):
            return "the model file lists the Gated DeltaNet dimensions as unknown"
        if gdn.key_head_dim != gdn.value_head_dim or layers % glob.layers:
            return "a Gated DeltaNet shape qwen35 does not express"
        interval = layers // glob.layers
        key_dim = gdn.key_heads * gdn.key_head_dim
        value_dim = gdn.value_heads * gdn.value_head_dim
        return Shape(
            "qwen35",
            {
                "attention.head_count": glob.kv_heads,
                "attention.head_count_kv": glob.kv_heads,
                "attention.key_length": glob.head_dim,
                "attention.value_length": glob.head_dim,
                "rope.dimension_count": 64,
                "rope.dimension_sections": [11, 11, 10, 0],
                "full_attention_interval": interval,
                "ssm.conv_kernel": gdn.conv_kernel,
                "ssm.inner_size": gdn.value_heads * gdn.value_head_dim,
                "ssm.state_size": gdn.key_head_dim,
                "ssm.time_step_rank": gdn.value_heads,
                "ssm.group_count": gdn.key_heads,
            },
            lambda il: "attention" if (il + 1) % interval == 0 else "recurrent",
            "expressed as architecture qwen35 (Qwen3.5 dense: the same Gated DeltaNet state and"
            " attention cache as the model's)",
            {  # the fused input projection and its gate (qwen35.cpp marks them optional)
                ("recurrent", "attn_qkv.weight"): [HIDDEN, 2 * key_dim + value_dim],
                ("recurrent", "attn_gate.weight"): [HIDDEN, value_dim],
            },
        )
    if kinds == {"attention", "sliding_window", "shared"} and len(windowed) == len(full) == 1:
        swa, glob = windowed[0], full[0]
        owners = swa.layers + glob.layers
        if swa.kv_heads != glob.kv_heads or owners % glob.layers:
            return "window and global layers with different KV heads, or an uneven pattern"
        period = owners // glob.layers  # the cache-owning layers: a global one every period
        return Shape(
            "gemma4",
            {
                "attention.head_count": glob.kv_heads,
                "attention.head_count_kv": glob.kv_heads,
                "attention.key_length": glob.head_dim,
                "attention.value_length": glob.head_dim,
                "attention.key_length_swa": swa.head_dim,
                "attention.value_length_swa": swa.head_dim,
                "attention.sliding_window": swa.window,
                "attention.sliding_window_pattern": [
                    (il + 1) % period != 0 for il in range(layers)
                ],
                "attention.shared_kv_layers": layers - owners,
                "embedding_length_per_layer_input": 8,
                "rope.dimension_count": glob.head_dim,
                "rope.dimension_count_swa": swa.head_dim,
            },
            lambda il: "swa" if (il + 1) % period else "global",
            "expressed as architecture gemma4 (the last layers reuse the caches of earlier ones;"
            " a global layer every {period})".replace("{period}", str(period)),
        )
    mamba = [g for g in leaves if isinstance(g, Mamba2)]
    if len(mamba) == 1 and len(full) == 1 and not windowed:
        (ssm,) = mamba
        (glob,) = full
        conv_dim = ssm.num_heads * ssm.head_dim + 2 * ssm.n_groups * ssm.d_state
        keys = {
            "attention.head_count": glob.kv_heads,
            "attention.key_length": glob.head_dim,
            "attention.value_length": glob.head_dim,
            "rope.dimension_count": glob.head_dim,
            "ssm.conv_kernel": ssm.conv_kernel,
            "ssm.inner_size": ssm.num_heads * ssm.head_dim,
            "ssm.state_size": ssm.d_state,
            "ssm.time_step_rank": ssm.num_heads,
            "ssm.group_count": ssm.n_groups,
        }
        if kinds == {"attention", "mamba2"} and glob.layers == ssm.layers == layers:
            return Shape(
                "falcon-h1",
                {**keys, "attention.head_count_kv": glob.kv_heads},
                lambda il: "a",
                "expressed as architecture falcon-h1 (attention and Mamba2 in every layer)",
                {("a", "ssm_conv1d.bias"): [conv_dim]},  # optional to the loader
            )
        if kinds == {"attention", "mamba2", "none"}:
            # counts are what the cache depends on: Mamba2 and MLP layers alternate, then the
            # attention layers
            def kind(il: int) -> str:
                if il >= 2 * ssm.layers:
                    return "attention"
                return "recurrent" if il % 2 == 0 else "mlp"

            if 2 * ssm.layers + glob.layers != layers:
                return "Mamba2, MLP and attention counts that do not add up"
            return Shape(
                "nemotron_h",
                {
                    **keys,
                    "attention.head_count_kv": [
                        glob.kv_heads if kind(il) == "attention" else 0 for il in range(layers)
                    ],
                    "feed_forward_length": [
                        HIDDEN if kind(il) == "mlp" else 0 for il in range(layers)
                    ],
                },
                kind,
                "expressed as architecture nemotron_h (the layers in another order; the cache"
                " depends on their counts)",
                {("recurrent", "ssm_conv1d.bias"): [conv_dim]},
            )
    if kinds == {"attention", "mamba1"}:
        # jamba.cpp asserts 2 x n_embd == d_inner: hidden size 4,096, and weights of gigabytes
        return "architecture jamba needs the hidden size d_inner / 2, too large for tiny weights"
    return f"layer kinds {sorted(kinds)} are not expressed by this script"


def write_gguf(path: Path, arch: str, keys: dict[str, Any], layers: int, tensors: dict) -> None:
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-6)
    writer.add_float32(f"{arch}.attention.layer_norm_epsilon", 1e-6)
    every = {
        "block_count": layers,
        "context_length": 262144,
        "embedding_length": HIDDEN,
        "feed_forward_length": HIDDEN,
        **keys,
    }
    for key, value in every.items():
        if isinstance(value, list):
            writer.add_array(f"{arch}.{key}", value)
        else:
            writer.add_uint32(f"{arch}.{key}", value)
    # a SentencePiece vocabulary: three specials and the 256 byte tokens the loader looks up
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{b:02X}>" for b in range(256))]
    writer.add_tokenizer_model("llama")
    writer.add_token_list(tokens)
    writer.add_token_scores([0.0] * len(tokens))
    writer.add_token_types([2, 3, 3, *([6] * 256)])
    for name, ne in tensors.items():
        writer.add_tensor(name, np.zeros(tuple(reversed(ne)), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


_MISSING = re.compile(r"missing tensor '([^']+)'|tensor '([^']+)' not found")
_WRONG = re.compile(r"tensor '([^']+)' has wrong shape; expected +([0-9, ]+?), got")
_LAYER = re.compile(r"^blk\.([0-9]+)\.")


def capture(startup: str, model: Model, shape: Shape, work: Path, settings: tuple[str, ...]) -> str:
    """Run start-up until the loader takes the file; the log of the run that succeeded."""
    tensors: dict[str, list[int]] = {}
    learned: dict[tuple[str, str], list[int]] = {}  # (layer kind, name without blk.N) -> shape
    path = work / f"{model.id}.gguf"
    for (kind, suffix), ne in (shape.extra or {}).items():
        for il in range(model.num_layers):
            if shape.layer_kind(il) == kind:
                tensors[f"blk.{il}.{suffix}"] = ne

    def others(name: str, ne: list[int]) -> None:
        match = _LAYER.match(name)
        if match is None:
            return
        kind = shape.layer_kind(int(match[1]))
        suffix = name[match.end() :]
        learned[(kind, suffix)] = ne
        for il in range(model.num_layers):
            if shape.layer_kind(il) == kind:
                tensors[f"blk.{il}.{suffix}"] = ne

    for _ in range(400):
        write_gguf(path, shape.arch, shape.keys, model.num_layers, tensors)
        run = subprocess.run([startup, str(path), *settings], capture_output=True, text=True)
        log = run.stderr + run.stdout
        if run.returncode == 0:
            return log
        if (match := _WRONG.search(log)) is not None:
            ne = [int(v) for v in match[2].split(",")]
            tensors[match[1]] = ne
            others(match[1], ne)
        elif (match := _MISSING.search(log)) is not None:
            name = match[1] or match[2]
            layer = _LAYER.match(name)
            guess = [1]
            if layer is not None:
                guess = learned.get((shape.layer_kind(int(layer[1])), name[layer.end() :]), [1])
            tensors[name] = guess
        else:
            kept = Path(tempfile.gettempdir()) / path.name  # kept to debug the start-up
            kept.write_bytes(path.read_bytes())
            tail = "\n".join(log.splitlines()[-12:])
            raise RuntimeError(f"{model.id}: start-up failed (the file: {kept}):\n{tail}")
    raise RuntimeError(f"{model.id}: the loader kept asking for tensors")


_KEEP = re.compile(
    r"llama_context: (n_ctx|n_ctx_seq|n_seq_max|n_batch|n_ubatch|flash_attn|kv_unified|n_rs_seq)"
    r"|startup: context|llama_kv_cache|llama_memory_recurrent|llama_memory_hybrid|print_info: (arch|n_layer|"
    r"n_head_kv|n_embd_head_k|n_embd_head_v|n_swa|n_embd_k_gqa|n_embd_v_gqa|ssm_|n_lora_kv)"
)

_PER_LAYER = re.compile(r"layer +[0-9]+: (dev|skipped|filtered|no reuse|does not have)")


def main(argv: list[str]) -> int:
    startup, wanted = argv[0], argv[1:]
    FIXTURES.mkdir(parents=True, exist_ok=True)
    skipped = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted((REPO / "models").glob("*.yaml")):
            if wanted and path.stem not in wanted:
                continue
            model = load_model_file(path)
            shape = shape_of(model)
            if isinstance(shape, str):
                skipped.append(f"{model.id}: {shape}")
                continue
            for suffix, settings in (("", SETTINGS), *VARIANTS.get(model.id, ())):
                log = capture(startup, model, shape, Path(tmp), settings)
                kept = [
                    line
                    for line in log.splitlines()
                    if _KEEP.search(line) and not _PER_LAYER.search(line)
                ]
                header = [
                    f"# model: {model.id} ({shape.note})",
                    f"# llama.cpp: {PIN}, CPU, built by tools/llamacpp-ground-truth/build.sh",
                    f"# command: startup {model.id}.gguf {' '.join(settings)}",
                    "#   (startup.cpp: llama_model_load_from_file + llama_init_from_model with"
                    " those context settings)",
                ]
                fixture = FIXTURES / f"{model.id}{suffix}.log"
                fixture.write_text("\n".join([*header, *kept]) + "\n")
                print(f"{fixture.name}: {len(kept)} lines", flush=True)
    for line in skipped:
        print(f"not expressed: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
