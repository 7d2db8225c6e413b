"""The KV cache as a serving engine holds it, per decoder layer and per kind of attention.

The decode graph takes every layer's cache as `context` tokens of full keys and values (what a
transformers DynamicCache hands the model). A serving engine holds less on two kinds of layer,
which the model's config names:

- a sliding-window layer (`layer_types` "sliding_attention", or `sliding_window` on every layer
  of a config without `layer_types`) attends to the last `window` positions only, and a paged
  serving cache (vLLM, TensorRT-LLM) keeps min(tokens, window) of them. transformers'
  DynamicSlidingWindowLayer keeps window − 1 between steps (the next token is the window's
  last): one position fewer; we count the serving engine's window, and say so;
- a chunked-attention layer ("chunked_attention", `attention_chunk_size`: Llama 4) attends within
  its chunk: at most min(tokens, chunk) positions, the same bound;
- multi-head latent attention (DeepSeek-V2/V3: `kv_lora_rank`) caches the compressed latent
  (kv_lora_rank) and the shared rotary key (qk_rope_head_dim) per token and layer, for all heads
  at once, and expands keys and values from them; transformers' own cache holds the expanded
  keys and values (what the decode graph reads), a serving engine the latent.

Every other layer holds every token, as the graph's cache inputs are: their widths (KV heads ×
head size, keys and values) are read from the graph, not from the config.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from math import prod
from typing import Any

from onnxflops.errors import OnnxFlopsError

# The decode graph's cache inputs, one key and one value per layer (converters.causal_lm).
_CACHE_INPUT = re.compile(r"past_(key|value)_(\d+)")
# Its further inputs per layer (converters.causal_lm): state_{what the cache calls it}_{layer}.
_STATE_INPUT = re.compile(r"state_(.+)_(\d+)")
# Where a cache input keeps its tokens: [batch, kv_heads, tokens, head_dim], and its batch.
_BATCH_AXIS, _TOKEN_AXIS = 0, 2
# Attention kinds whose layers attend to a bounded span, and the config key that bounds it.
_WINDOWED = {"sliding_attention": "sliding_window", "chunked_attention": "attention_chunk_size"}


@dataclass(frozen=True)
class KvForm:
    """How one decoder layer's cache is held: `kind` "full", "sliding", "chunked" or "latent";
    `window`: the most positions it keeps (None: every token); `latent`: elements per token of a
    latent cache (None: the graph's keys and values)."""

    kind: str = "full"
    window: int | None = None
    latent: int | None = None
    note: str = "every token's keys and values"

    def positions(self, tokens: int) -> int:
        """Positions held with `tokens` tokens seen: min(tokens, window), or tokens."""
        return min(tokens, self.window) if self.window else tokens


# The kind of a KvLayer that holds a recurrent state of fixed size, not keys and values.
STATE = "state"


@dataclass
class KvLayer:
    """One layer's cache at `tokens` tokens: the positions it holds, its bytes per sequence and
    position, and its bytes for the whole batch."""

    layer: int
    kind: str
    positions: int
    bytes_per_token: float
    bytes: int
    note: str

    def to_dict(self) -> dict[str, Any]:
        per_token = self.bytes_per_token
        return {"layer": self.layer, "kind": self.kind, "positions": self.positions,
                "bytes_per_token": int(per_token) if per_token == int(per_token) else per_token,
                "bytes": self.bytes, "note": self.note}


def kv_forms(config: Mapping[str, Any] | None, layers: int) -> list[KvForm]:
    """Each of `layers` decoder layers' cache form from a config-like mapping (a transformers
    config's to_dict()); every layer full where the mapping is absent or names no other kind.

    Layer i is windowed where `layer_types[i]` is "sliding_attention" (window `sliding_window`)
    or "chunked_attention" (`attention_chunk_size`); without `layer_types`, every layer is
    sliding where `sliding_window` is a positive int and `use_sliding_window` is not false
    (Mistral). Every layer is latent where `kv_lora_rank` is: kv_lora_rank + qk_rope_head_dim
    elements per token.
    """
    config = config or {}
    types = config.get("layer_types")
    if not isinstance(types, (list, tuple)):
        sliding = _positive(config.get("sliding_window")) and \
            config.get("use_sliding_window") is not False
        types = ["sliding_attention" if sliding else "full_attention"] * layers
    rank, rope = _positive(config.get("kv_lora_rank")), _positive(config.get("qk_rope_head_dim"))
    latent = rank + (rope or 0) if rank else None
    forms = []
    for i in range(layers):
        kind = types[i] if i < len(types) else "full_attention"
        window = _positive(config.get(_WINDOWED[kind])) if kind in _WINDOWED else None
        forms.append(_form(kind, window, latent, rank, rope))
    return forms


def _form(kind: str, window: int | None, latent: int | None, rank: int | None,
          rope: int | None) -> KvForm:
    notes = []
    if latent:
        notes.append(f"latent {rank} + rotary key {rope or 0} elements per token for all heads "
                     "(transformers' cache holds the expanded keys and values)")
    if window and kind == "sliding_attention":
        notes.append(f"window {window}: min(tokens, {window}) positions, as a paged serving "
                     f"cache holds them (transformers' keeps {window} − 1)")
    elif window:
        notes.append(f"chunk {window}: at most min(tokens, {window}) positions, the current "
                     "chunk")
    if latent:
        name = "latent"
    elif window:
        name = "sliding" if kind == "sliding_attention" else "chunked"
    else:
        name = "full"
    return KvForm(name, window, latent, "; ".join(notes) or KvForm.note)


def kv_layers(inputs: Mapping[str, list], config: Mapping[str, Any] | None, bits: int,
              batch: int, tokens: int) -> list[KvLayer]:
    """Each layer's cache at `tokens` tokens, `bits` per element, from the decode graph's cache
    inputs `past_key_i` / `past_value_i` ([batch, kv_heads, tokens, head_dim]) and the layers'
    forms (kv_forms of the model's `config`; every layer full where None):

        bytes = ⌈batch × positions × elements per token × bits / 8⌉,

    positions = form.positions(tokens); elements per token: the latent width, or the key's and
    the value's dims but batch and tokens, summed; plus the layer's further per-token inputs
    `state_…_i` ([batch, tokens, …]: a sparse attention's indexer keys). A layer's inputs
    `state_…_i` of fixed size (a linear-attention or Mamba-like layer's convolution and
    recurrent states, [batch, …] with no tokens axis) are its recurrent state (state_layers),
    not among these."""
    widths: dict[int, int] = {}
    extra: dict[int, int] = {}
    for name, shape in inputs.items():
        match = _CACHE_INPUT.fullmatch(name)
        if match:
            layer = int(match.group(2))
            widths[layer] = widths.get(layer, 0) + _per_token(name, shape)
        state = _STATE_INPUT.fullmatch(name)
        if state and (axis := _grows(shape)):
            layer = int(state.group(2))
            extra[layer] = extra.get(layer, 0) + _per_token(name, shape, axis)
    forms = kv_forms(config, max(widths, default=-1) + 1)
    layers = []
    for layer in sorted(widths):
        form = forms[layer]
        elements = (form.latent or widths[layer]) + extra.get(layer, 0)
        note = form.note + (f"; and {extra[layer]} elements per token of its other per-token "
                            "inputs (a sparse attention's indexer keys)" if layer in extra else "")
        positions = form.positions(tokens)
        layers.append(KvLayer(layer, form.kind, positions, elements * bits / 8,
                              -(-batch * positions * elements * bits // 8), note))
    return layers


def state_layers(inputs: Mapping[str, list], bits: int, batch: int) -> list[KvLayer]:
    """Each layer's recurrent state, `bits` per element, from the decode graph's inputs
    `state_…_i` of fixed size ([batch, …], no tokens axis: a linear-attention, Mamba-like or
    short-convolution layer's convolution and recurrent states), whatever the tokens seen:

        bytes = ⌈batch × Σ_inputs elements per sequence × bits / 8⌉, kind "state"."""
    held: dict[int, dict[str, int]] = {}
    for name, shape in inputs.items():
        state = _STATE_INPUT.fullmatch(name)
        if state and not _grows(shape):
            held.setdefault(int(state.group(2)), {})[state.group(1)] = \
                _per_token(name, shape, None)
    return [KvLayer(layer, STATE, 0, 0, -(-batch * sum(parts.values()) * bits // 8),
                    "recurrent state of fixed size, whatever the tokens: " + ", ".join(
                        f"{part} {count} elements" for part, count in parts.items()))
            for layer, parts in sorted(held.items())]


def _grows(shape: list) -> int | None:
    """The axis of a cache input that grows with the tokens: its first symbolic dim after the
    batch; None where every other dim is a number (a state of fixed size)."""
    return next((axis for axis, d in enumerate(shape)
                 if axis != _BATCH_AXIS and not isinstance(d, int)), None)


def layer_runs(layers: list[int]) -> str:
    """[0, 2, 4] → '0, 2, 4'; a run of more than two → '0–31'; 'N layers' past 6 items."""
    runs: list[list[int]] = []
    for layer in layers:
        if runs and layer == runs[-1][-1] + 1:
            runs[-1].append(layer)
        else:
            runs.append([layer])
    items = [f"{r[0]}–{r[-1]}" if len(r) > 2 else ", ".join(map(str, r)) for r in runs]
    text = ", ".join(items)
    return text if len(items) <= 6 else f"{len(layers)} layers"


def _per_token(name: str, shape: list, tokens_axis: int | None = _TOKEN_AXIS) -> int:
    """Elements per sequence and token of a cache input: its dims but batch and tokens (None:
    a state without a tokens axis)."""
    dims = [d for axis, d in enumerate(shape) if axis not in (_BATCH_AXIS, tokens_axis)]
    if not all(isinstance(d, int) for d in dims):
        raise OnnxFlopsError(f"decode graph input '{name}' {shape}: a cache input is "
                             "[batch, heads, tokens, head size] with heads and head size known")
    return prod(dims)


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None
