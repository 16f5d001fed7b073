"""Model geometry: the layer groups of a model and what each layer caches.

Each group reports, per layer, the elements it caches for every token (with how many cached
vectors those elements form, for per-vector scales) and the elements of its fixed
per-sequence state. A dimension the source does not publish is ``None``; anything computed
from it is ``None`` too, never a guess.
"""

from __future__ import annotations

from fractions import Fraction
from typing import NamedTuple


class TokenElements(NamedTuple):
    """Elements one layer caches per token, and the head vectors they form."""

    elements: int
    vectors: int


def shown(value: int | None) -> str:
    """A dimension in a formula; '?' when the source does not publish it."""
    return "?" if value is None else str(value)


def _product(*factors: int | None) -> int | None:
    result = 1
    for factor in factors:
        if factor is None:
            return None
        result *= factor
    return result


class IndexerKeys(NamedTuple):
    """A sparse-attention indexer's own key cache beside a layer's KV (DeepSeek-V3.2's
    lightning indexer): ``keys_per_token`` vectors of ``head_dim`` per token and layer."""

    head_dim: int | None
    keys_per_token: int | None
    dtype: str | None = (
        None  # how the model stores them whatever the cache's type; None: the basis's
    )

    def token_elements(self) -> TokenElements | None:
        if self.head_dim is None or self.keys_per_token is None:
            return None
        return TokenElements(self.keys_per_token * self.head_dim, self.keys_per_token)

    def token_formula(self) -> str:
        return f"{shown(self.keys_per_token)} indexer key x {shown(self.head_dim)}"


def _with_indexer(main: TokenElements | None, indexer: IndexerKeys | None) -> TokenElements | None:
    """A layer's token elements with its indexer keys added (unknown if either is); keys of a
    dtype of their own are priced apart, so they are not added."""
    if indexer is None or indexer.dtype is not None or main is None:
        return main
    keys = indexer.token_elements()
    if keys is None:
        return None
    return TokenElements(main.elements + keys.elements, main.vectors + keys.vectors)


class Attention(NamedTuple):
    """Full attention (MHA, GQA, MQA), or sliding-window attention when ``window`` is set."""

    layers: int
    kv_heads: int | None
    head_dim: int | None
    v_head_dim: int | None = None  # None: same as head_dim
    window: int | None = None
    indexer: IndexerKeys | None = None

    @property
    def kind(self) -> str:
        return "sliding_window" if self.window is not None else "attention"

    @property
    def value_dim(self) -> int | None:
        return self.head_dim if self.v_head_dim is None else self.v_head_dim

    def main_elements(self) -> TokenElements | None:
        """K and V, without the indexer's keys."""
        if self.kv_heads is None or self.head_dim is None or self.value_dim is None:
            return None
        return TokenElements(self.kv_heads * (self.head_dim + self.value_dim), 2 * self.kv_heads)

    def token_elements(self) -> TokenElements | None:
        return _with_indexer(self.main_elements(), self.indexer)

    def state_elements(self) -> int | None:
        return 0

    def token_formula(self) -> str:
        return (
            f"{shown(self.kv_heads)} kv heads x ({shown(self.head_dim)} + {shown(self.value_dim)})"
        )


class MultiHeadLatent(NamedTuple):
    """MLA (DeepSeek-V2/V3, Kimi K2): one compressed latent plus one shared rope key per token."""

    layers: int
    kv_lora_rank: int | None
    qk_rope_head_dim: int | None
    window: None = None
    indexer: IndexerKeys | None = None

    @property
    def kind(self) -> str:
        return "mla"

    def main_elements(self) -> TokenElements | None:
        """The latent and the rope key, without the indexer's keys."""
        if self.kv_lora_rank is None or self.qk_rope_head_dim is None:
            return None
        return TokenElements(self.kv_lora_rank + self.qk_rope_head_dim, 1)

    def token_elements(self) -> TokenElements | None:
        return _with_indexer(self.main_elements(), self.indexer)

    def state_elements(self) -> int | None:
        return 0

    def token_formula(self) -> str:
        return f"({shown(self.kv_lora_rank)} + {shown(self.qk_rope_head_dim)})"


class GatedDeltaNet(NamedTuple):
    """Linear attention with a recurrent state (Gated DeltaNet): no per-token cache."""

    layers: int
    conv_kernel: int | None
    key_heads: int | None
    value_heads: int | None
    key_head_dim: int | None
    value_head_dim: int | None
    window: None = None

    @property
    def kind(self) -> str:
        return "linear_attention"

    def token_elements(self) -> TokenElements | None:
        return TokenElements(0, 0)

    def conv_elements(self) -> int | None:
        channels = [
            _product(2, self.key_heads, self.key_head_dim),
            _product(self.value_heads, self.value_head_dim),
        ]
        if self.conv_kernel is None or None in channels:
            return None
        return (self.conv_kernel - 1) * sum(c for c in channels if c is not None)

    def recurrent_elements(self) -> int | None:
        return _product(self.value_heads, self.value_head_dim, self.key_head_dim)

    def state_elements(self) -> int | None:
        conv, recurrent = self.conv_elements(), self.recurrent_elements()
        return None if conv is None or recurrent is None else conv + recurrent

    def state_formula(self) -> str:
        return (
            f"conv ({shown(self.conv_kernel)} - 1) x (2 x {shown(self.key_heads)} x {shown(self.key_head_dim)}"
            f" + {shown(self.value_heads)} x {shown(self.value_head_dim)}) + recurrent {shown(self.value_heads)}"
            f" x {shown(self.value_head_dim)} x {shown(self.key_head_dim)}"
        )


class Mamba1(NamedTuple):
    """Mamba-1 selective SSM: conv state (K-1) x d_inner plus SSM state d_inner x d_state."""

    layers: int
    d_inner: int | None
    d_state: int | None
    conv_kernel: int | None
    window: None = None

    @property
    def kind(self) -> str:
        return "mamba1"

    def token_elements(self) -> TokenElements | None:
        return TokenElements(0, 0)

    def state_elements(self) -> int | None:
        if self.d_inner is None or self.d_state is None or self.conv_kernel is None:
            return None
        return (self.conv_kernel - 1) * self.d_inner + self.d_inner * self.d_state

    def state_formula(self) -> str:
        return (
            f"conv ({shown(self.conv_kernel)} - 1) x {shown(self.d_inner)}"
            f" + ssm {shown(self.d_inner)} x {shown(self.d_state)}"
        )


class Mamba2(NamedTuple):
    """Mamba-2 SSD: conv over x, B and C plus an SSM state of heads x head_dim x d_state."""

    layers: int
    num_heads: int | None
    head_dim: int | None
    n_groups: int | None
    d_state: int | None
    conv_kernel: int | None
    window: None = None

    @property
    def kind(self) -> str:
        return "mamba2"

    def token_elements(self) -> TokenElements | None:
        return TokenElements(0, 0)

    def state_elements(self) -> int | None:
        d_inner = _product(self.num_heads, self.head_dim)
        group_channels = _product(2, self.n_groups, self.d_state)
        ssm = _product(self.num_heads, self.head_dim, self.d_state)
        if d_inner is None or group_channels is None or ssm is None or self.conv_kernel is None:
            return None
        return (self.conv_kernel - 1) * (d_inner + group_channels) + ssm

    def state_formula(self) -> str:
        return (
            f"conv ({shown(self.conv_kernel)} - 1) x ({shown(self.num_heads)} x {shown(self.head_dim)}"
            f" + 2 x {shown(self.n_groups)} x {shown(self.d_state)}) + ssm {shown(self.num_heads)}"
            f" x {shown(self.head_dim)} x {shown(self.d_state)}"
        )


class SharedCache(NamedTuple):
    """Layers that read another layer's cache and store nothing of their own."""

    layers: int
    shares_from: str
    window: None = None

    @property
    def kind(self) -> str:
        return "shared"

    def token_elements(self) -> TokenElements | None:
        return TokenElements(0, 0)

    def state_elements(self) -> int | None:
        return 0


class NoCache(NamedTuple):
    """Layers with no token mixer (MLP-only blocks): nothing cached."""

    layers: int
    window: None = None

    @property
    def kind(self) -> str:
        return "none"

    def token_elements(self) -> TokenElements | None:
        return TokenElements(0, 0)

    def state_elements(self) -> int | None:
        return 0


LeafGroup = Attention | MultiHeadLatent | GatedDeltaNet | Mamba1 | Mamba2 | SharedCache | NoCache
StateGroup = GatedDeltaNet | Mamba1 | Mamba2  # a fixed per-sequence state, no tokens


def indexer_of(group: LeafGroup) -> IndexerKeys | None:
    """The sparse-attention indexer keys a layer group caches beside its KV, if any."""
    return group.indexer if isinstance(group, Attention | MultiHeadLatent) else None


class Parallel(NamedTuple):
    """Layers that run several mixers side by side (Falcon-H1: attention and Mamba-2 in each)."""

    layers: int
    mixers: tuple[LeafGroup, ...]

    @property
    def kind(self) -> str:
        return "parallel"


LayerGroup = LeafGroup | Parallel


class ParameterCount(NamedTuple):
    """Parameter counts in billions as the model file states them (None: not stated)."""

    total_billions: Fraction | None
    active_billions: Fraction | None
    stated_as: str
    from_name: bool = False  # read off the model's name (27B), not published as a count


class Model:
    """A model's cache geometry. ``dtype`` is the weights' dtype, the default for state.

    A plain class, compared by identity: ``kv_report`` caches on the model object, and the
    layer groups are tuples, which compare equal across kinds that have equal numbers.
    """

    __slots__ = (
        "dtype",
        "groups",
        "hidden_size",
        "id",
        "max_context_tokens",
        "name",
        "num_layers",
        "parameters",
        "published_precisions",
        "query_heads",
        "tie_word_embeddings",
        "unknown",
        "vocab_size",
    )

    def __init__(
        self,
        id: str,
        name: str,
        num_layers: int,
        groups: tuple[LayerGroup, ...],
        dtype: str | None = None,
        unknown: tuple[str, ...] = (),
        parameters: ParameterCount | None = None,  # for the hardware checks; None: not stated
        max_context_tokens: int | None = None,  # None: not stated
        query_heads: int | None = None,  # num_attention_heads; None: not stated
        hidden_size: int | None = None,  # None: not stated
        # the weights' precisions of the checkpoints its publisher released; None: not listed
        published_precisions: tuple[str, ...] | None = None,
        vocab_size: int | None = None,  # None: not read
        tie_word_embeddings: bool | None = None,  # None: not read
    ) -> None:
        self.id = id
        self.name = name
        self.num_layers = num_layers
        self.groups = groups
        self.dtype = dtype
        self.unknown = unknown
        self.parameters = parameters
        self.max_context_tokens = max_context_tokens
        self.query_heads = query_heads
        self.hidden_size = hidden_size
        self.published_precisions = published_precisions
        self.vocab_size = vocab_size
        self.tie_word_embeddings = tie_word_embeddings

    def __repr__(self) -> str:
        return f"Model({self.id!r}, {len(self.groups)} layer groups)"

    def leaf_groups(self) -> tuple[LeafGroup, ...]:
        """Every cache-holding unit; a parallel group's mixers each span its layers."""
        leaves: list[LeafGroup] = []
        for group in self.groups:
            leaves.extend(group.mixers if isinstance(group, Parallel) else (group,))
        return tuple(leaves)

    def layer_count_of_groups(self) -> int:
        return sum(group.layers for group in self.groups)

    def cache_shape(self) -> tuple[str, ...]:
        """What decides the cache's bytes: every leaf group's kind and dimensions, in a fixed
        order (not where its layers stand). Two models of one shape cache the same bytes at
        every context, KV dtype and state dtype (Llama 3.1 70B and 3.3 70B)."""
        return tuple(sorted(repr(group) for group in self.leaf_groups()))
