"""Llama-shaped decoders from transformers' LlamaConfig, built on the meta device: no weight bytes.

`llama_on_meta("llama3-8b")` is the module as people instantiate an LLM they cannot hold in memory;
`analytic_macs` / `analytic_params` are its numbers derived by hand, the oracle the counts are
checked against (HF's forward cannot run on meta tensors, so no counter can run it). The factories
`llama3_8b` and `llama2_70b` return it exported at 512 tokens, for the command line:

    onnxflops count onnxflops.models.llama:llama3_8b
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from onnxflops.converters.common import import_transformers

TOKENS = 512


@dataclass(frozen=True)
class LlamaShape:
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int
    rope_theta: float
    max_positions: int


PRESETS = {
    "llama3-8b": LlamaShape(4096, 14336, 32, 32, 8, 128256, 500000.0, 8192),
    "llama2-70b": LlamaShape(8192, 28672, 80, 64, 8, 32000, 10000.0, 4096),
    "tiny": LlamaShape(64, 160, 2, 4, 2, 96, 10000.0, 256),  # for tests
}


def llama_config(preset: str = "llama3-8b", layers: int | None = None):
    """The transformers LlamaConfig of a preset, without the KV cache (a forward pass is counted)."""
    shape = PRESETS[preset]
    return import_transformers().LlamaConfig(
        hidden_size=shape.hidden, intermediate_size=shape.intermediate,
        num_hidden_layers=shape.layers if layers is None else layers,
        num_attention_heads=shape.heads, num_key_value_heads=shape.kv_heads,
        vocab_size=shape.vocab, rope_theta=shape.rope_theta,
        max_position_embeddings=shape.max_positions, use_cache=False)


def llama_on_meta(preset: str = "llama3-8b", layers: int | None = None) -> torch.nn.Module:
    """LlamaForCausalLM with every parameter on the meta device."""
    config = llama_config(preset, layers)
    with torch.device("meta"):
        return import_transformers().LlamaForCausalLM(config).eval()


def token_ids(tokens: int = TOKENS) -> torch.Tensor:
    """A batch of one sequence of `tokens` token ids, on the meta device."""
    return torch.zeros(1, tokens, dtype=torch.long, device="meta")


def analytic_macs(preset: str, layers: int | None = None, tokens: int = TOKENS) -> int:
    """Σ layers [T·d·(2d + 2·kv_dim) projections + 3·T·d·ffn MLP + 2·T²·d attention] + T·d·vocab."""
    s = PRESETS[preset]
    n = s.layers if layers is None else layers
    d, kv_dim, t = s.hidden, s.hidden // s.heads * s.kv_heads, tokens
    per_layer = t * d * (2 * d + 2 * kv_dim) + 3 * t * d * s.intermediate + 2 * t * t * d
    return n * per_layer + t * d * s.vocab


def analytic_params(preset: str, layers: int | None = None) -> int:
    """2·vocab·d (embedding, untied head) + Σ layers [2d² + 2·d·kv_dim + 3·d·ffn + 2d] + d."""
    s = PRESETS[preset]
    n = s.layers if layers is None else layers
    d, kv_dim = s.hidden, s.hidden // s.heads * s.kv_heads
    per_layer = 2 * d * d + 2 * d * kv_dim + 3 * d * s.intermediate + 2 * d
    return 2 * s.vocab * d + n * per_layer + d


def rotary_buffer_elements(preset: str) -> int:
    """inv_freq, the rotary embedding's buffer: head_dim / 2 elements, fed to a MatMul."""
    s = PRESETS[preset]
    return s.hidden // s.heads // 2


def exported(preset: str, layers: int | None = None,
             tokens: int = TOKENS) -> torch.export.ExportedProgram:
    """The meta-device model captured by torch.export with its example input: converts as is."""
    return torch.export.export(llama_on_meta(preset, layers), (token_ids(tokens),))


def llama3_8b() -> torch.export.ExportedProgram:
    return exported("llama3-8b")


def llama2_70b() -> torch.export.ExportedProgram:
    return exported("llama2-70b")


def tiny() -> torch.export.ExportedProgram:
    """Two small layers at 32 tokens: the meta-device path at test cost."""
    return exported("tiny", tokens=32)
