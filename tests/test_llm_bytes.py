"""Serving bytes by dtype (onnxflops.llm): a tensor's served bytes come from its elements and the
serving dtype, whatever dtype the graph holds it in; the weights' dtype is the one the config
names unless told; and two invariants hold on every hardware entry, for prefill and decode:
a decode step reads at least the bytes of the weights it multiplies, and no estimate is faster
than its own bytes over the bandwidth or its FLOPs over the peak."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from hypothesis import given, settings, strategies as st
from onnx import TensorProto, helper

from onnxflops.serving import HARDWARE, llm
from onnxflops.serving.phases import DTYPE_BITS, Phase, Traffic
from onnxflops.serving.serve import compute_dtype, served_dtypes

_GRAPH_FLOATS = {"fp32": (TensorProto.FLOAT, np.float32), "bf16": (TensorProto.BFLOAT16, np.uint16),
                 "fp16": (TensorProto.FLOAT16, np.float16)}
# Relative slack for float sums compared with a bound they equal at best.
_EPS = 1e-9


def _stack(widths: list[int], graph_dtype: str) -> onnx.ModelProto:
    """x[batch, w0] → MatMul by W_i[w_i, w_i+1] then Relu, per layer (`layers.i`), every float
    in `graph_dtype`: a decoder in miniature, as a model built in that dtype exports."""
    elem, np_type = _GRAPH_FLOATS[graph_dtype]
    nodes, weights, h = [], [], "x"
    for i, (rows, cols) in enumerate(zip(widths, widths[1:])):
        raw = np.zeros(rows * cols, np_type).tobytes()
        weights.append(helper.make_tensor(f"w{i}", elem, [rows, cols], raw, raw=True))
        nodes += [helper.make_node("MatMul", [h, f"w{i}"], [f"m{i}"], name=f"/layers.{i}/MatMul"),
                  helper.make_node("Relu", [f"m{i}"], [f"h{i}"], name=f"/layers.{i}/Relu")]
        h = f"h{i}"
    graph = helper.make_graph(nodes, "stack",
                              [helper.make_tensor_value_info("x", elem, ["batch", widths[0]])],
                              [helper.make_tensor_value_info(h, elem, ["batch", widths[-1]])],
                              weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def _phase(widths: list[int], graph_dtype: str, weights: str, activations: str) -> Phase:
    from onnxflops.api import count_with_model

    counted = count_with_model(_stack(widths, graph_dtype), symbolic=True, keep_bound=False)
    return Phase(counted, ("batch",), Traffic(DTYPE_BITS[weights], DTYPE_BITS[activations]))


@pytest.mark.parametrize("graph_dtype", ["fp32", "bf16", "fp16"])
def test_served_bytes_do_not_depend_on_the_dtype_the_graph_holds(graph_dtype):
    """x[3, 64] @ W[64, 32] then Relu, served in bf16: W is 64·32·2 bytes, x 3·64·2, the product
    3·32·2 (written by the MatMul, read and written by the Relu), whether the graph holds them
    in float32, bf16 or fp16. A graph built in bf16 was halved once more (the config's dtype
    applied twice: Llama-3-8B's decode step read 10.75 GB, below its 15.0 GB of weights)."""
    cost = _phase([64, 32], graph_dtype, "bf16", "bf16").at(batch=3)
    assert cost.bytes_read == 64 * 32 * 2 + 3 * 64 * 2 + 3 * 32 * 2
    assert cost.bytes_written == 2 * (3 * 32 * 2)
    fp32 = _phase([64, 32], graph_dtype, "fp32", "fp32").at(batch=3)
    assert fp32.bytes_read == 64 * 32 * 4 + 3 * 64 * 4 + 3 * 32 * 4


@settings(max_examples=20, deadline=None)
@given(widths=st.lists(st.integers(1, 96), min_size=2, max_size=5),
       graph_dtype=st.sampled_from(sorted(_GRAPH_FLOATS)),
       weights=st.sampled_from(sorted(DTYPE_BITS)),
       activations=st.sampled_from(["fp32", "bf16", "fp16"]),
       batch=st.sampled_from([1, 3, 64, 4096, 10**6]))
def test_no_estimate_beats_its_bytes_or_its_flops_on_any_hardware(widths, graph_dtype, weights,
                                                                    activations, batch):
    """On every hardware entry: the phase reads at least its weights' bytes, Σ rows·cols ×
    weight bits / 8 (from the widths alone), and its time is at least its moved bytes over the
    bandwidth and its FLOPs over the peak (2 per MAC, Σ batch·rows·cols, and a Relu per
    output), whatever the graph's and the serving dtypes."""
    phase = _phase(widths, graph_dtype, weights, activations)
    cost = phase.at(batch=batch)
    macs = batch * sum(r * c for r, c in zip(widths, widths[1:]))
    weight_bytes = -(-sum(r * c for r, c in zip(widths, widths[1:])) * DTYPE_BITS[weights] // 8)
    assert cost.macs == macs and cost.flops == 2 * macs + batch * sum(widths[1:])
    moved = phase.moved(batch=batch)
    assert cost.bytes_read >= weight_bytes and moved >= weight_bytes
    for name, hw in HARDWARE.items():
        seconds = float(phase.seconds(hw, compute_dtype(weights), batch=batch).seconds)
        assert seconds >= moved / hw.bandwidth_bytes_per_s * (1 - _EPS), name
        assert seconds >= weight_bytes / hw.bandwidth_bytes_per_s * (1 - _EPS), name
        assert seconds >= cost.flops / hw.peak(compute_dtype(weights)) * (1 - _EPS), name


@pytest.mark.parametrize("given_dtype, named, expected", [
    (None, "bfloat16", ("bf16", "bf16", "the config's bfloat16")),
    (None, "float16", ("fp16", "fp16", "the config's float16")),
    (None, "float32", ("fp32", "fp32", "the config's float32")),
    (None, None, ("bf16", "bf16", "the default: the config names none")),
    (None, "float8_e4m3fn", ("bf16", "bf16", "the default: the config names float8_e4m3fn, "
                                             "not served")),
    ("int4", "float16", ("int4", "bf16", "as given")),
    ("fp32", "bfloat16", ("fp32", "fp32", "as given")),
])
def test_the_weights_dtype_is_the_one_given_else_the_configs_else_bf16(given_dtype, named,
                                                                     expected):
    assert served_dtypes(given_dtype, None, named) == expected
    assert served_dtypes(given_dtype, "fp32", named)[1] == "fp32"


def _tiny_config(transformers, **dtype):
    """3 alike layers (exported cut to one and two): hidden 64, 4 heads of 16 over 2 KV heads,
    intermediate 128, vocab 256, untied head."""
    return transformers.AutoConfig.for_model(
        "llama", num_hidden_layers=3, hidden_size=64, intermediate_size=128,
        num_attention_heads=4, num_key_value_heads=2, vocab_size=256,
        max_position_embeddings=256, tie_word_embeddings=False, **dtype)


def _multiplied_params(transformers, config) -> int:
    """Σ elements of the torch model's Linear weights (q, k, v, o, gate, up, down per layer, and
    the head): what a decode step multiplies, from the module, not from the graph."""
    import torch

    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    return sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))


@pytest.fixture(scope="module")
def tiny_llama():
    """transformers and the tiny config's graphs, exported once: a config is exported in
    float32 whatever dtype it names (load_causal_lm), so that the graphs of the configs below
    are these; they differ only in the dtype they name, which the export reads (named_dtype)."""
    from onnxflops.converters import causal_lm_to_onnx
    from onnxflops.converters.common import import_transformers

    transformers = import_transformers()
    return transformers, causal_lm_to_onnx(_tiny_config(transformers), extend_layers=True)


@pytest.mark.slow
@pytest.mark.parametrize("dtype_field, named", [({"torch_dtype": "bfloat16"}, "bf16"),
                                                ({"dtype": "float16"}, "fp16"), ({}, "bf16")])
def test_a_config_naming_its_dtype_reads_its_weights_in_it_on_every_hardware(dtype_field, named,
                                                                             tiny_llama):
    """A Llama config naming bf16 (`torch_dtype`, as config.json files do), fp16 (`dtype`) or
    nothing: the weights are served in the dtype it names (bf16 where none), each layer reads
    its weights' bytes, 36,992 params (q, o 64·64, k, v 64·32, gate, up, down 64·128, two norms
    of 64) × 2 bytes, and the decode step at least its multiplied weights' bytes. For every
    served dtype and every hardware entry, prefill and decode: no estimate beats its moved bytes
    over the bandwidth, its weights over the bandwidth, nor its FLOPs over the peak."""
    import dataclasses

    from onnxflops.converters.causal_lm import named_dtype

    transformers, exported = tiny_llama
    config = _tiny_config(transformers, **dtype_field)
    multiplied = _multiplied_params(transformers, config)
    assert multiplied == 3 * (2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 128) + 64 * 256
    # The field the config names is the dtype its export serves (None: the bf16 default).
    assert named_dtype(config) == next(iter(dtype_field.values()), None)
    lm = dataclasses.replace(exported, dtype=named_dtype(config))
    prompt, generate = 8, 3
    r = llm(lm, prompt=prompt, generate=generate)
    assert (r.dtype, r.kv_dtype) == (named, named)
    assert r.decode_reads()["layers.0"]["weights"] == 36_992 * 2
    # Every served dtype over the config naming none; the one it names over the others.
    for dtype in (None,) if dtype_field else (None, *DTYPE_BITS):
        r = llm(lm, prompt=prompt, generate=generate, dtype=dtype)
        weight_bytes = -(-multiplied * DTYPE_BITS[r.dtype] // 8)
        contexts = range(prompt, prompt + generate)
        assert all(r.decode_at(c).bytes_read >= weight_bytes for c in contexts)
        for name, hw in HARDWARE.items():
            compute = compute_dtype(r.dtype)
            peak, bandwidth = hw.peak(compute), hw.bandwidth_bytes_per_s
            prefill = float(r.prefill_phase.seconds(hw, compute, batch=1, prompt=prompt).seconds)
            moved = r.prefill_phase.moved(batch=1, prompt=prompt)
            assert prefill >= max(moved / bandwidth, weight_bytes / bandwidth,
                                  r.prefill.flops / peak) * (1 - _EPS), (dtype, name)
            for c in contexts:
                step = float(r.decode_phase.seconds(hw, compute, batch=1, context=c).seconds)
                moved = r.decode_phase.moved(batch=1, context=c)
                assert step >= max(moved / bandwidth, weight_bytes / bandwidth,
                                   r.decode_at(c).flops / peak) * (1 - _EPS), (dtype, name, c)


@pytest.mark.slow
def test_llama3_8b_at_bf16_by_hand(tmp_path):
    """Llama-3-8B's config.json as released names "torch_dtype": "bfloat16" (hidden 4096, 32
    layers, 32 heads of 128 over 8 KV heads, intermediate 14336, vocab 128256, untied head),
    built on meta; a decode step at context 2048, batch 1. By hand, in bf16 (2 bytes):

    per layer, multiplied: q, o 4096·4096 = 16,777,216 each; k, v 4096·1024 = 4,194,304 each;
    gate, up, down 4096·14336 = 58,720,256 each: 218,103,808 params; and two norm scales of
    4096: 218,112,000 params read, 436,224,000 bytes (it printed "218.11 MB": the params, the
    bf16 halved a second time). Head 128256·4096 = 525,336,576 params, 1,050,673,152 bytes.
    Multiplied weights of a step: 32·218,103,808 + 525,336,576 = 7,504,658,432 params,
    15,009,316,864 bytes. KV cache per token: 32 layers × (key + value) × 8 heads × 128 × 2 B
    = 131,072 bytes; at 2048 tokens 268,435,456 bytes. The bandwidth limit of a step on H100
    SXM (3.35 TB/s): (15,009,316,864 + 268,435,456) / 3.35e12 = 4.561 ms, 219 tokens/s; the
    estimate was 3.06 ms (327 tokens/s). The graph's step moves more (unfused copies of the
    cache: README), so its estimate is above the limit, and below twice it."""
    (tmp_path / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
        "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192,
        "rope_theta": 500000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": False,
        "hidden_act": "silu", "torch_dtype": "bfloat16"}))
    r = llm(str(tmp_path), prompt=2048, generate=1, hardware="h100")
    assert (r.dtype, r.kv_dtype, r.dtype_from) == ("bf16", "bf16", "the config's bfloat16")
    assert r.params.total == 8_030_261_248  # 32·218,112,000 + 2·525,336,576 + 4096
    reads = r.decode_reads(2048)
    assert reads["layers.0"]["weights"] == 436_224_000
    assert reads["lm_head"]["weights"] == 1_050_673_152
    assert sum(b["weights"] for b in reads.values()) >= 15_009_316_864
    assert r.kv_cache_bytes == 131_072 * 2049  # prompt + generate tokens at the end
    step = r.decode_first
    assert step.bytes_read >= 15_009_316_864 + 268_435_456
    limit = (15_009_316_864 + 268_435_456) / 3.35e12
    assert limit == pytest.approx(4.5605e-3, rel=1e-4)
    assert limit <= r.estimate.decode_s_per_token < 2 * limit
    assert r.estimate.tokens_per_s <= 1 / limit
    assert "436.22 MB of weights (bf16)" in r.to_table()
