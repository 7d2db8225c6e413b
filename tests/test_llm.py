"""Serving costs of causal LMs (onnxflops.llm): prefill and decode steps against FlopCounterMode
on the Hugging Face model's own forward passes; the roofline by hand; the command line."""

from __future__ import annotations

import json
import subprocess
import sys

import onnx
import pytest
from onnx import TensorProto, helper

from onnxflops.errors import OnnxFlopsError
from onnxflops.serving import HARDWARE, hardware, llm
from onnxflops.serving.hardware import Hardware
from onnxflops.serving.phases import Phase, Traffic

PROMPT, GENERATE, BATCH = 6, 3, 2


def _transformers():
    pytest.importorskip("torch")
    from onnxflops.converters.common import import_transformers

    try:
        return import_transformers()
    except OnnxFlopsError:
        pytest.skip("transformers is not installed")


def _reference(model, batch: int, prompt: int, generate: int) -> dict:
    """FlopCounterMode / 2 (its FLOPs are 2 per MAC) of the prompt pass and of each generated
    token, run with the cache and MATH attention (which runs every product it counts)."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    ids = torch.randint(0, model.config.vocab_size, (batch, prompt),
                        generator=torch.Generator().manual_seed(0))
    steps = []
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH):
        with FlopCounterMode(display=False) as counter:
            cache = model(input_ids=ids, use_cache=True).past_key_values
        prefill = counter.get_total_flops() // 2
        for _ in range(generate):
            with FlopCounterMode(display=False) as counter:
                cache = model(input_ids=ids[:, :1], past_key_values=cache,
                              use_cache=True).past_key_values
            steps.append(counter.get_total_flops() // 2)
    return {"prefill": prefill, "steps": steps,
            "params": sum(p.numel() for p in model.parameters())}


def _check_against_reference(model, kv_bytes_per_token: int):
    expected = _reference(model, BATCH, PROMPT, GENERATE)
    r = llm(model, prompt=PROMPT, generate=GENERATE, batch=BATCH, hardware="h100")
    assert r.prefill.macs == expected["prefill"]
    assert r.decode_first.macs == expected["steps"][0]
    assert r.decode_last.macs == expected["steps"][-1]
    assert r.decode_total.macs == sum(expected["steps"])
    assert [r.decode_at(PROMPT + i).macs for i in range(GENERATE)] == expected["steps"]
    assert r.params.total == r.params.active == expected["params"]
    assert r.kv_cache_bytes == BATCH * (PROMPT + GENERATE) * kv_bytes_per_token
    return r


def _small_llama(transformers):
    """2 layers of 4 query heads and 2 key/value heads of 16 dims."""
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(
        num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=256, max_position_embeddings=256))


@pytest.mark.slow
def test_grouped_query_llama_matches_flop_counter():
    transformers = _transformers()
    model = _small_llama(transformers)
    # Per token: 2 layers × (key + value) × 2 kv heads × head size 16, in bf16.
    r = _check_against_reference(model, 2 * 2 * 2 * 16 * 2)
    # The step's formula in the context: per layer, 4 heads × 16 for q·kᵀ and again for p·v,
    # over context + 1 keys: 2 × 2 × 64 × (context + 1) MACs grow with the cache.
    step = r.decode_at("context").macs
    assert step.diff(step.free_symbols.pop()) == BATCH * 2 * 2 * 64
    assert r.estimate.bound["decode"] == "memory"
    # Per layer a decode step reads its weights once, in bf16: q and o 64×64, k and v 64×32,
    # gate, up and down 64×128, two norm scales of 64.
    reads = r.decode_reads()
    assert [b for b in reads if b.startswith("layers.")] == ["layers.0", "layers.1"]
    assert reads["layers.1"]["weights"] == 2 * (2 * 64 * 64 + 2 * 64 * 32 + 3 * 64 * 128 + 2 * 64)
    assert reads["layers.1"]["other"] > 2 * BATCH * PROMPT * 2 * 16 * 2  # at least its cache
    assert r.estimate.prefill_s > 0 and r.estimate.decode_s_per_token > 0


@pytest.mark.slow
def test_gpt2_matches_flop_counter():
    transformers = _transformers()
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=256,
                                     n_positions=64, bos_token_id=0, eos_token_id=0)
    # 2 layers × (key + value) × 64 channels per token, in bf16.
    _check_against_reference(transformers.GPT2LMHeadModel(config), 2 * 2 * 64 * 2)


@pytest.mark.slow
def test_mixtral_experts_cost_top_k_per_token():
    """The eager experts (a loop over the experts hit, running each on its tokens) run what
    FlopCounterMode counts: T·k expert products. The graph dispatches the same T·k."""
    transformers = _transformers()
    config = transformers.MixtralConfig(num_hidden_layers=2, hidden_size=32, intermediate_size=64,
                                        num_attention_heads=4, num_key_value_heads=2,
                                        vocab_size=128, num_local_experts=4,
                                        num_experts_per_tok=2, experts_implementation="eager")
    model = transformers.MixtralForCausalLM(config)
    expected = _reference(model, BATCH, PROMPT, GENERATE)
    r = llm(model, prompt=PROMPT, generate=GENERATE, batch=BATCH)
    assert model.config._experts_implementation == "eager"  # the export left it as it was
    assert r.prefill.macs == expected["prefill"]
    assert [r.decode_at(PROMPT + i).macs for i in range(GENERATE)] == expected["steps"]
    # Each expert: gate and up 2·64×32, down 32×64 = 6144 params; 2 layers × 4 experts.
    experts = 2 * 4 * 6144
    assert r.params.total == expected["params"]
    assert r.params.active == expected["params"] - experts + experts * 2 // 4
    # A decode step of 2 sequences reads the experts they touch: 4 · (1 − (1 − 2/4)²) = 3 of
    # 4 per layer, one more than a single sequence's 2: 6144 params, 12288 B in bf16.
    one, two = (r.decode_phase.by_block(batch=b, context=PROMPT) for b in (1, 2))
    assert two["layers.0"]["weights"] - one["layers.0"]["weights"] == 6144 * 2


@pytest.mark.slow
def test_sliding_window_decode_stops_growing_at_the_window():
    """Mistral with a window of 8 over contexts 6 … 9: a step attends to min(context, 7) + 1
    keys, so the steps grow until the cache holds 7 and then stay; one decode graph, traced
    branch-free, holds on both sides (FlopCounterMode of HF's own passes agrees)."""
    transformers = _transformers()
    model = transformers.MistralForCausalLM(transformers.MistralConfig(
        num_hidden_layers=2, hidden_size=64, intermediate_size=128, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=256, max_position_embeddings=256, sliding_window=8))
    expected = _reference(model, 1, 6, 4)
    r = llm(model, prompt=6, generate=4, batch=1)
    steps = [r.decode_at(c).macs for c in range(6, 10)]
    assert r.prefill.macs == expected["prefill"]
    assert steps == expected["steps"]
    assert r.decode_total.macs == sum(expected["steps"])
    # Per extra key: 2 layers × 4 heads × 16 dims × (q·kᵀ + p·v) = 256 MACs; keys 7, 8, 8, 8.
    assert [b - a for a, b in zip(steps, steps[1:])] == [256, 0, 0]


def _tiny_llama(transformers, layers: int):
    config = transformers.LlamaConfig(num_hidden_layers=layers, hidden_size=64,
                                      intermediate_size=128, num_attention_heads=4,
                                      num_key_value_heads=2, vocab_size=256,
                                      max_position_embeddings=256)
    return transformers.LlamaForCausalLM(config)


def _tiny_mixtral(transformers, layers: int):
    config = transformers.MixtralConfig(num_hidden_layers=layers, hidden_size=32,
                                        intermediate_size=64, num_attention_heads=4,
                                        num_key_value_heads=2, vocab_size=128,
                                        num_local_experts=4, num_experts_per_tok=2)
    return transformers.MixtralForCausalLM(config)


@pytest.mark.slow
@pytest.mark.parametrize("build", [_tiny_llama, _tiny_mixtral])
def test_alike_layers_cut_to_one_and_two_extend_to_the_full_export(build):
    """Every number `llm` reports from the model cut to one and two layers (what it does for
    alike layers) is the full export's: the JSON, each layer's reads, the time per op type,
    the decode step's formula."""
    from sympy import expand

    from onnxflops.converters import causal_lm_to_onnx

    model = build(_transformers(), 4)
    cut, full = causal_lm_to_onnx(model, extend_layers=True), causal_lm_to_onnx(model)
    assert cut.one_layer is not None and full.one_layer is None and cut.layers == 4
    kwargs = {"prompt": 2048, "generate": 256, "batch": BATCH, "dtype": "int4"}
    mine, theirs = llm(cut, **kwargs), llm(full, **kwargs)
    assert mine.to_dict() == theirs.to_dict()
    assert mine.decode_reads() == theirs.decode_reads()
    for phase, seconds in theirs.estimate.by_op_type.items():
        assert mine.estimate.by_op_type[phase] == pytest.approx(seconds)
    for key, formula in mine.decode_at("context").to_dict().items():
        assert expand(formula) == expand(theirs.decode_at("context").to_dict()[key])


@pytest.mark.slow
def test_layers_not_alike_are_exported_in_full():
    """Llama's third layer given a wider MLP: the count extended from two layers would miss the
    width; llm exports all three instead, and matches FlopCounterMode."""
    transformers = _transformers()
    model = _tiny_llama(transformers, 3)
    wider = transformers.LlamaConfig(**{**model.config.to_dict(), "intermediate_size": 192})
    model.model.layers[2].mlp = type(model.model.layers[2].mlp)(wider)
    # Per token: 3 layers × (key + value) × 2 kv heads × head size 16, in bf16.
    _check_against_reference(model, 3 * 2 * 2 * 16 * 2)


@pytest.mark.slow
def test_alternating_sliding_window_layers_are_not_alike():
    import torch

    from onnxflops.converters.causal_lm import _alike, _decoder_layers

    transformers = _transformers()

    def alike(layer_types: list[str]) -> bool:
        config = transformers.Qwen2Config(num_hidden_layers=4, hidden_size=32,
                                          intermediate_size=64, num_attention_heads=4,
                                          num_key_value_heads=2, vocab_size=64,
                                          use_sliding_window=True, sliding_window=16,
                                          layer_types=layer_types)
        with torch.device("meta"):
            model = transformers.Qwen2ForCausalLM(config)
        return _alike(model, _decoder_layers(model)[2])

    assert alike(["full_attention"] * 4)
    assert not alike(["sliding_attention", "full_attention"] * 2)


def _matmul_model() -> onnx.ModelProto:
    """x[batch, 64] @ W[64, 32]: 2048·batch MACs, reads 256·batch + 8192 bytes, writes 128·batch."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [64, 32], [0.5] * 64 * 32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "mm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 32])], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_roofline_is_the_slower_of_compute_and_memory_per_node():
    from onnxflops.api import count_with_model

    counted = count_with_model(_matmul_model(), symbolic=True, keep_bound=False)
    # Weights in int8 (a quarter of float32), activations in bf16 (half).
    phase = Phase(counted, ("batch",), Traffic(weight_bits=8, activation_bits=16))
    cost = phase.at(batch=4)
    assert (cost.macs, cost.flops) == (4 * 2048, 4 * 4096)
    assert cost.bytes_read == 8192 // 4 + 4 * 256 // 2
    assert cost.bytes_written == 4 * 128 // 2
    h100 = HARDWARE["h100"]
    moved = cost.bytes_read + cost.bytes_written
    timing = phase.seconds(h100, "bf16", batch=4)
    assert timing.seconds == pytest.approx(max(cost.flops / 989.5e12, moved / 3.35e12))
    assert timing.bound == "memory"
    # At a batch of 10^6 rows the weights are read once for many products: compute-bound.
    big = phase.at(batch=10**6)
    timing = phase.seconds(h100, "bf16", batch=10**6)
    assert timing.seconds == pytest.approx(max(big.flops / 989.5e12,
                                               (big.bytes_read + big.bytes_written) / 3.35e12))


def test_experts_gathered_for_a_product_are_read_once_in_the_weights_dtype():
    """batched_mm dispatch: GatherND takes each (token, expert) pair's weights W[e] (8×16) and a
    batched MatMul applies them. Serving reads those rows once, as weights; the copy the graph
    writes between the two is no traffic."""
    from onnxflops.api import count_with_model

    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 8, 16], [0.5] * 4 * 8 * 16)
    graph = helper.make_graph(
        [helper.make_node("GatherND", ["w", "experts"], ["picked"], name="pick"),
         helper.make_node("MatMul", ["picked", "x"], ["y"], name="apply")], "moe",
        [helper.make_tensor_value_info("experts", TensorProto.INT64, ["pairs", 1]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, ["pairs", 16, 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["pairs", 8, 1])], [w])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    counted = count_with_model(proto, symbolic=True, keep_bound=False)
    phase = Phase(counted, ("pairs",), Traffic(weight_bits=4, activation_bits=16))
    cost = phase.at(pairs=3)
    assert cost.macs == 3 * 8 * 16
    # int4 rows of 3 pairs; bf16 activations: the pairs' inputs; int64 expert indices at their
    # own 8 bytes (a serving dtype is a float's).
    assert cost.bytes_read == 3 * 8 * 16 // 2 + 3 * 16 * 2 + 3 * 8
    assert cost.bytes_written == 3 * 8 * 2
    # 6 pairs over 4 experts read at most the 4 experts' weights.
    assert phase.at(pairs=6).bytes_read == 4 * 8 * 16 // 2 + 6 * 16 * 2 + 6 * 8


def test_an_embedding_lookup_reads_its_rows_not_the_table():
    from onnxflops.api import count_with_model

    table = helper.make_tensor("table", TensorProto.FLOAT, [1000, 8], [0.5] * 8000)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["h"], name="embed"),
         helper.make_node("Relu", ["h"], ["y"], name="act")], "embed",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 1, 8])], [table])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    counted = count_with_model(proto, symbolic=True, keep_bound=False)
    cost = Phase(counted, ("batch",), Traffic(weight_bits=16, activation_bits=16)).at(batch=2)
    # 2 rows of 8 bf16 and 2 int64 ids (8 bytes each); Relu reads the rows.
    assert cost.bytes_read == 2 * 8 * 2 + 2 * 8 + 2 * 8 * 2
    assert cost.bytes_written == 2 * (2 * 8 * 2)


def _stack_model(widths: list[int]) -> onnx.ModelProto:
    """x[batch, 16] → one MatMul per layer (`layers.i`, 16×16 if its width is 16), a cache input
    `past_i` per layer added in, then a head 16×8: a decoder stack in miniature."""
    nodes, inputs, weights, h = [], [], [], "x"
    for i, width in enumerate(widths):
        weights.append(helper.make_tensor(f"w{i}", TensorProto.FLOAT, [16, width],
                                          [0.5] * 16 * width))
        inputs.append(helper.make_tensor_value_info(f"past_{i}", TensorProto.FLOAT,
                                                    ["batch", width]))
        nodes += [helper.make_node("MatMul", [h, f"w{i}"], [f"m{i}"], name=f"/layers.{i}/MatMul"),
                  helper.make_node("Add", [f"m{i}", f"past_{i}"], [f"h{i}"],
                                   name=f"/layers.{i}/Add")]
        h = f"h{i}"
    weights.append(helper.make_tensor("head", TensorProto.FLOAT, [widths[-1], 8],
                                      [0.5] * widths[-1] * 8))
    nodes.append(helper.make_node("MatMul", [h, "head"], ["y"], name="/lm_head/MatMul"))
    graph = helper.make_graph(
        nodes, "stack", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16]),
                         *inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])], weights)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def _stack_phase(widths: list[int]) -> Phase:
    from onnxflops.api import count_with_model

    counted = count_with_model(_stack_model(widths), symbolic=True, keep_bound=False)
    return Phase(counted, ("batch",), Traffic(weight_bits=16, activation_bits=16))


def test_a_phase_cut_to_one_and_two_alike_layers_extends_to_all_of_them():
    full = _stack_phase([16] * 5)
    extended = _stack_phase([16] * 2).extended(_stack_phase([16]), 5)
    for batch in (1, 7):
        assert extended.at(batch=batch) == full.at(batch=batch)
        assert extended.by_block(batch=batch) == full.by_block(batch=batch)
        mine, theirs = (p.seconds(HARDWARE["h100"], "bf16", batch=batch) for p in (extended, full))
        assert mine.seconds == pytest.approx(theirs.seconds)
        assert mine.by_op_type == pytest.approx(theirs.by_op_type)
    assert list(extended.by_block(batch=1)) == ["layers.0", "layers.1", "layers.2", "layers.3",
                                                "layers.4", "lm_head"]
    assert extended.inputs == full.inputs  # the cache inputs of every layer (KV cache bytes)
    # By hand: 5 layers of 16×16 products and 16 additions per row, the 16×8 head.
    assert extended.at(batch=3).macs == 3 * (5 * 256 + 128)


def test_layers_that_are_not_alike_do_not_extend():
    from onnxflops.serving.phases import LayersNotAlike

    # The first layer's product is 16×8 with one layer and 16×16 with two: not part of it.
    with pytest.raises(LayersNotAlike):
        _stack_phase([16, 16]).extended(_stack_phase([8]), 5)


def test_onnxflops_llm_is_the_function_whatever_was_imported():
    import onnxflops
    import onnxflops.html.llm
    import onnxflops.serving

    assert onnxflops.llm is onnxflops.serving.llm
    assert onnxflops.html.llm.llm_html


def test_hardware_table_names_and_errors():
    assert hardware("H100-SXM") is HARDWARE["h100"]
    assert hardware("a100_80gb") is HARDWARE["a100"]
    assert HARDWARE["h200"].bandwidth_bytes_per_s == 4.8e12
    assert HARDWARE["l4"].peak("bf16") == 121e12
    assert HARDWARE["mi300x"].peak("fp8") == 1307.4e12  # not in the table: the fastest float
    with pytest.raises(OnnxFlopsError, match="unknown hardware 'tpu'"):
        hardware("tpu")


def test_a_device_computing_in_one_dtype_labels_its_ceiling_so():
    """The CPU provider computes in float32 whatever the weights: its one ceiling is fp32's, and
    says so for bf16 weights too (it was labelled "bf16")."""
    cpu = Hardware("local CPU (measured)", {"fp32": 1e11}, 2e10, computes_in="fp32")
    assert (cpu.peak("bf16"), cpu.precision("bf16")) == (1e11, "fp32")
    assert (HARDWARE["h100"].peak("bf16"), HARDWARE["h100"].precision("bf16")) == (989.5e12, "bf16")
    assert HARDWARE["mi300x"].precision("fp8") == "bf16"  # the fastest float ceiling it holds


@pytest.mark.parametrize("kwargs, message", [
    ({"prompt": 0}, "prompt must be a positive integer"),
    ({"generate": -1}, "generate must be a positive integer"),
    ({"dtype": "fp8"}, "unknown dtype 'fp8'"),
])
def test_bad_arguments_are_one_line_errors(kwargs, message):
    args = {"prompt": 4, "generate": 2, **kwargs}
    with pytest.raises(OnnxFlopsError, match=message):
        llm("unused.json", **args)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "onnxflops.cli", "llm", *args],
                          capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("content, message", [
    ({"hidden_size": 64}, "a transformers config.json needs a 'model_type'"),
    ({"model_type": "no_such_model"}, "Unrecognized model identifier: no_such_model"),
    ([1, 2], "a transformers config.json needs a 'model_type'"),
])
@pytest.mark.slow  # transformers imports torch
def test_cli_bad_config_is_one_line(tmp_path, content, message):
    _transformers()
    config = tmp_path / "config.json"
    config.write_text(json.dumps(content))
    done = _cli(str(config), "--prompt", "4", "--generate", "2")
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"onnxflops: error: {config}: ") and message in last
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_cli_json_from_a_config_file(tmp_path):
    _transformers()
    (tmp_path / "config.json").write_text(json.dumps({
        "model_type": "llama", "num_hidden_layers": 1, "hidden_size": 32,
        "intermediate_size": 64, "num_attention_heads": 2, "num_key_value_heads": 1,
        "vocab_size": 64, "max_position_embeddings": 64}))
    page = tmp_path / "llm.html"
    done = _cli(str(tmp_path), "--prompt", "8", "--generate", "4", "--hardware", "l4", "--json",
                "--html", str(page))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no transformers deprecation note about the cache arguments
    doc = json.loads(done.stdout)
    assert list(doc) == ["model", "batch", "prompt", "generate", "dtype", "kv_dtype", "params",
                         "prefill", "decode_first", "decode_last", "decode_total",
                         "kv_cache_bytes", "state_bytes", "kv_cache_layers", "hardware",
                         "estimate"]
    assert doc["hardware"] == {"name": "NVIDIA L4", "peak_flops_per_s": 121e12,
                               "precision": "bf16", "bandwidth_bytes_per_s": 300e9}
    assert set(doc["estimate"]) == {"prefill_s", "decode_s_per_token", "tokens_per_s", "bound"}
    # 1 layer × (key + value) × 1 kv head × head size 16 × 12 tokens, bf16.
    assert doc["kv_cache_bytes"] == 2 * 16 * 12 * 2
    assert doc["kv_cache_layers"] == [{"layer": 0, "kind": "full", "positions": 12,
                                       "bytes_per_token": 2 * 16 * 2, "bytes": 2 * 16 * 12 * 2,
                                       "note": "every token's keys and values"}]
    assert set(doc["prefill"]) == {"macs", "flops", "bytes_read", "bytes_written"}
    html = page.read_text()
    assert html.count("<svg") == 3 and "LlamaForCausalLM: serving costs" in html


@pytest.mark.slow
def test_decode_step_against_the_two_n_rule_of_thumb():
    """Kaplan et al.'s forward FLOPs per token, 2·N + 2·n_layer·n_ctx·d_attn (N: non-embedding
    params), plus the de-embedding 2·d_model·n_vocab, against the decode step's count.

    Ours is 2 FLOPs per MAC of what the step multiplies: every weight matrix once (N less the
    norm scales, which multiply elementwise), the head, and at a context of c cached tokens
    q·kᵀ and p·v over c + 1 keys. Their table counts q·kᵀ only, so ours exceeds the rule by the
    p·v term, 2·n_layer·(c + 1)·d_attn, less the norms; the elementwise work (norms, SiLU,
    rotary, softmax) is FLOPs beyond the MACs. This one keeps Llama's proportions small, with
    real weights: d = 128, 8 heads over 2 KV heads (the 7B shape on meta: below)."""
    transformers = _transformers()
    layers, d, ffn, vocab, kv = 2, 128, 256, 512, 32
    config = transformers.LlamaConfig(num_hidden_layers=layers, hidden_size=d,
                                      intermediate_size=ffn, num_attention_heads=8,
                                      num_key_value_heads=2, vocab_size=vocab,
                                      max_position_embeddings=4096, tie_word_embeddings=False)
    r = llm(transformers.LlamaForCausalLM(config), prompt=1024, generate=2, batch=1)
    norms = layers * 2 * d + d
    per_layer = d * d + 2 * d * kv + d * d + 3 * d * ffn
    n = layers * per_layer + norms  # non-embedding: the head is the de-embedding
    for c in (1024, 1025):
        rule = 2 * n + 2 * d * vocab + 2 * layers * (c + 1) * d
        step = r.decode_at(c)
        assert 2 * step.macs == rule + 2 * layers * (c + 1) * d - 2 * norms
        assert step.flops > 2 * step.macs  # and the elementwise work


@pytest.mark.slow
def test_llama2_7b_shaped_decode_step_on_meta_against_the_two_n_rule():
    """Llama-2-7B's shape (d 4096, ffn 11008, 32 heads = 32 KV heads, vocab 32000), built on the
    meta device from its config (no weight bytes), all 32 layers: its layers are alike, so llm
    exports it cut to one and two layers and extends the counts to 32 (what CI can afford).

    A decode step with C cached tokens multiplies, per layer, q, k, v, o (4·d²), the MLP
    (3·d·ffn), and q·kᵀ and p·v over C + 1 keys (2·(C + 1)·d); then the head (d·vocab). Against
    the rule of thumb 2·N + 2·L·C·d·2 (N: non-embedding params, norms included) ours is
    + 2·d·vocab (the head, which N leaves out) + 4·L·d (the new token's own key and value)
    − 2·(2·L·d + d) (the norm scales, which multiply elementwise). For all 32 layers at C = 2048:
    2·N = 12,952,543,232 and the attention term 1,073,741,824; ours is 262,135,808 FLOPs more
    (+2.0 % of 2·N), nearly all of it the head. FlopCounterMode runs the same meta model's
    cached decode step (shapes only) and agrees."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    transformers = _transformers()
    d, ffn, vocab, layers = 4096, 11008, 32000, 32
    config = transformers.LlamaConfig(hidden_size=d, intermediate_size=ffn,
                                      num_hidden_layers=layers, num_attention_heads=32,
                                      num_key_value_heads=32, vocab_size=vocab,
                                      max_position_embeddings=4096, tie_word_embeddings=False)
    r = llm(config, prompt=2048, generate=2, batch=1)
    norms = 2 * layers * d + d
    n = layers * (4 * d * d + 3 * d * ffn) + norms  # non-embedding params
    assert r.params.total == n + 2 * vocab * d  # the framework's own count: embedding and head
    for c in (2048, 2049):
        rule = 2 * n + 2 * layers * c * d * 2
        step = r.decode_at(c)
        assert 2 * step.macs == rule + 2 * d * vocab + 4 * layers * d - 2 * norms
        assert step.flops > 2 * step.macs  # norms, SiLU, rotary, softmax on top
    assert 2 * n == 12_952_543_232
    assert 2 * r.decode_at(2048).macs - (2 * n + 2 * layers * 2048 * d * 2) == 262_135_808
    # KV cache: L × (key + value) × d × tokens, bf16.
    assert r.kv_cache_bytes == layers * 2 * d * 2050 * 2
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(config).eval()
    ids = torch.zeros(1, 2048, dtype=torch.long, device="meta")
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH):
        cache = model(input_ids=ids, use_cache=True).past_key_values
        with FlopCounterMode(display=False) as counter:
            model(input_ids=ids[:, :1], past_key_values=cache, use_cache=True)
    assert r.decode_at(2048).macs == counter.get_total_flops() // 2


@pytest.mark.slow
def test_the_served_graphs_record_which_initializers_are_parameters():
    import onnxflops
    from onnxflops.converters.causal_lm import causal_lm_to_onnx
    from onnxflops.load import weight_roles

    transformers = _transformers()
    model = _small_llama(transformers)
    lm = causal_lm_to_onnx(model)
    for graph in (lm.prefill, lm.decode):
        roles = weight_roles(graph)
        assert roles is not None and roles.exhaustive
        assert sorted(name.split(".")[-1] for name in roles.buffers) == ["inv_freq",
                                                                         "original_inv_freq"]
        report = onnxflops.count(graph, symbolic=True)
        assert report.total.params == lm.params == sum(p.numel() for p in model.parameters())
        assert report.total.buffers == 64 // 4 // 2  # the inverse frequency of each pair of dims


# --- serving semantics: the KV cache per layer kind, a windowed decode step, experts per batch ---

def _cache_inputs(layers: int, kv_heads: int = 2, head_size: int = 16) -> dict[str, list]:
    """A decode graph's inputs: the token, and a key and a value per layer."""
    inputs: dict[str, list] = {"input_ids": ["batch", 1]}
    for i in range(layers):
        for part in ("key", "value"):
            inputs[f"past_{part}_{i}"] = ["batch", kv_heads, "context", head_size]
    return inputs


def test_kv_forms_read_the_layer_kinds_from_a_config_mapping():
    from onnxflops.serving.cache import kv_forms

    def kinds(config, layers=4):
        return [(f.kind, f.window, f.latent) for f in kv_forms(config, layers)]

    full = ("full", None, None)
    assert kinds(None) == [full] * 4
    assert kinds({"model_type": "llama"}) == [full] * 4
    # Gemma 2 / gpt-oss: alternating sliding and full layers.
    assert kinds({"layer_types": ["sliding_attention", "full_attention"] * 2,
                  "sliding_window": 8}) == [("sliding", 8, None), full] * 2
    # Mistral: no layer_types, a window on every layer; Qwen2 with the window turned off.
    assert kinds({"sliding_window": 4096}) == [("sliding", 4096, None)] * 4
    assert kinds({"sliding_window": 4096, "use_sliding_window": False}) == [full] * 4
    assert kinds({"sliding_window": None}) == [full] * 4
    # Llama 4: chunked layers, every fourth full.
    assert kinds({"layer_types": ["chunked_attention"] * 3 + ["full_attention"],
                  "attention_chunk_size": 8192}) == [("chunked", 8192, None)] * 3 + [full]
    # DeepSeek-V3: the latent (kv_lora_rank) and the rotary key (qk_rope_head_dim), 512 + 64.
    assert kinds({"kv_lora_rank": 512, "qk_rope_head_dim": 64}, 2) == [("latent", None, 576)] * 2
    # A config listing fewer layer types than the graph has layers: the rest hold every token.
    assert kinds({"layer_types": ["sliding_attention"], "sliding_window": 8}, 2) == \
        [("sliding", 8, None), full]


def test_kv_cache_bytes_per_layer_kind_by_hand():
    from onnxflops.serving.cache import kv_layers

    inputs = _cache_inputs(2)  # 2 KV heads of 16 per layer
    # Per token and layer, bf16: (key + value) × 2 heads × 16 = 64 elements = 128 B.
    # Batch 3 at 10 tokens: the sliding layer (window 4) holds 4 positions, 3 × 4 × 128 = 1536 B;
    # the full one 10, 3 × 10 × 128 = 3840 B.
    gemma = {"layer_types": ["sliding_attention", "full_attention"], "sliding_window": 4}
    layers = kv_layers(inputs, gemma, 16, batch=3, tokens=10)
    assert [(x.layer, x.kind, x.positions, x.bytes_per_token, x.bytes) for x in layers] == \
        [(0, "sliding", 4, 128, 1536), (1, "full", 10, 128, 3840)]
    assert "min(tokens, 4) positions" in layers[0].note and "4 − 1" in layers[0].note
    # Below the window a sliding layer holds every token: 3 × 3 × 128 at 3 tokens.
    assert kv_layers(inputs, gemma, 16, batch=3, tokens=3)[0].bytes == 1152
    # Latent attention: kv_lora_rank 32 + qk_rope_head_dim 8 = 40 elements per token, 80 B in
    # bf16, whatever the graph's expanded keys and values: 3 × 10 × 80 = 2400 B per layer.
    latent = kv_layers(inputs, {"kv_lora_rank": 32, "qk_rope_head_dim": 8}, 16, 3, 10)
    assert [(x.kind, x.bytes_per_token, x.bytes) for x in latent] == [("latent", 80, 2400)] * 2
    assert latent[0].note == "latent 32 + rotary key 8 elements per token for all heads " \
                             "(transformers' cache holds the expanded keys and values)"
    # No config: every layer as the graph holds it; int4 halves a byte: 64 × 4 / 8 = 32 B.
    plain = kv_layers(inputs, None, 4, batch=1, tokens=5)
    assert [(x.kind, x.bytes_per_token, x.bytes) for x in plain] == [("full", 32, 160)] * 2


def test_recurrent_states_and_indexer_keys_by_hand():
    from onnxflops.serving.cache import kv_layers, state_layers

    # Qwen3.5-like: layer 0 linear attention (a convolution state of 288 × 4 and a recurrent
    # state of 4 heads × 24 × 24), layer 1 full attention (1 KV head of 24: 48 elements).
    inputs = {"past_key_1": ["batch", 1, "context", 24], "past_value_1": ["batch", 1, "context", 24],
              "state_conv_states_0_0": ["batch", 288, 4],
              "state_recurrent_states_0_0": ["batch", 4, 24, 24]}
    config = {"layer_types": ["linear_attention", "full_attention"]}
    # bf16, batch 2, 72 tokens: layer 1 holds 2 × 72 × 48 × 2 B = 13,824 B; layer 0 none
    assert [(x.layer, x.kind, x.bytes) for x in kv_layers(inputs, config, 16, 2, 72)] == \
        [(1, "full", 13824)]
    # layer 0's state, whatever the tokens: 2 × (1152 + 2304) × 2 B = 13,824 B
    states = state_layers(inputs, 16, batch=2)
    assert [(x.layer, x.kind, x.positions, x.bytes) for x in states] == [(0, "state", 0, 13824)]
    assert "conv_states_0 1152 elements, recurrent_states_0 2304 elements" in states[0].note
    # DeepSeek-V3.2: an indexer key of 24 per token beside the latent (32 + 8): 64 elements,
    # 1 × 10 × 64 × 2 B = 1280 B; it has a tokens axis, so it is no state
    indexed = {**_cache_inputs(1), "state_indexer_keys_0": ["batch", "context", 24]}
    layers = kv_layers(indexed, {"kv_lora_rank": 32, "qk_rope_head_dim": 8}, 16, 1, 10)
    assert [(x.kind, x.bytes_per_token, x.bytes) for x in layers] == [("latent", 128, 1280)]
    assert state_layers(indexed, 16, 1) == []


def test_the_config_comes_from_the_record_or_the_model_given():
    from types import SimpleNamespace

    from onnxflops.serving.serve import _config_mapping

    gemma = {"layer_types": ["sliding_attention"], "sliding_window": 4}

    class Config:  # a transformers config: to_dict() and a model_type
        model_type = "gemma2"

        def to_dict(self):
            return gemma

    assert _config_mapping(gemma, "unused") is gemma  # CausalLM.config, where it carries one
    assert _config_mapping(None, SimpleNamespace(config=Config())) == gemma  # a model
    assert _config_mapping(None, Config()) == gemma  # a config
    assert _config_mapping(None, "pkg.module:factory") is None  # loaded by the converter


def test_active_params_are_k_of_e_routed_experts_and_every_shared_param():
    from onnxflops.serving.serve import active_params

    # DeepSeek-like: 1000 params outside the routed experts (attention, a dense first layer,
    # a shared expert), 8 routed experts of 100, top-2: 1000 + 2 × 100.
    assert active_params(1800, 800, 8, 2) == 1200
    assert active_params(1800, 0, 0, 0) == 1800  # a dense model


def test_a_cache_input_of_unknown_width_is_one_line():
    from onnxflops.serving.cache import kv_layers

    with pytest.raises(OnnxFlopsError, match="decode graph input 'past_key_0'"):
        kv_layers({"past_key_0": ["batch", "heads", "context", 16]}, None, 16, 1, 4)


def test_sum_steps_of_a_piecewise_step_by_hand():
    import sympy

    from onnxflops.serving.phases import sum_steps

    c = sympy.Symbol("c", integer=True, positive=True)

    def by_step(formula, first, last):
        return sum(int(sympy.ceiling(formula.subs(c, v))) for v in range(first, last + 1))

    # Σ_{c=3..9} 4·min(c, 5) + 7: 4·(3 + 4 + 5) + 4·5·4 + 7·7 = 48 + 80 + 49.
    assert sum_steps(4 * sympy.Min(c, 5) + 7, c, 3, 9) == 177
    # A window reached before, inside and after the range, a crossing between integers
    # (2c = 11 at 5.5), nested and maximal forms, fractional bytes (int4) and a quadratic.
    formulas = [4 * sympy.Min(c, 5) + 7, sympy.Min(2 * c, 11), sympy.Max(sympy.Min(c, 8), 3) * c,
                sympy.Rational(1, 2) * c + sympy.Rational(1, 3) * sympy.Min(c, 5),
                c * (c + 1) / 2 + sympy.Max(c - 4, 0), sympy.floor(c / 3) + c, 12,
                sympy.Min(sympy.Float(0.5) * c, 3) + 1]
    for formula in formulas:
        for first, last in ((1, 3), (3, 9), (5, 5), (6, 20), (1, 40)):
            assert sum_steps(formula, c, first, last) == by_step(sympy.sympify(formula), first,
                                                                 last), (formula, first, last)


def _attention_model(layers: int = 2) -> onnx.ModelProto:
    """A decode step in miniature: per layer (`layers.i`), q[batch, 2, 1, 8] against the cached
    keys and values [batch, 2, context, 8]: q·kᵀ and p·v, 2 × 2 × 8 × context MACs per row."""
    nodes, inputs = [], [helper.make_tensor_value_info("q", TensorProto.FLOAT, ["batch", 2, 1, 8])]
    for i in range(layers):
        for part in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(f"past_{part}_{i}", TensorProto.FLOAT,
                                                        ["batch", 2, "context", 8]))
        nodes += [helper.make_node("Transpose", [f"past_key_{i}"], [f"kt{i}"], perm=[0, 1, 3, 2],
                                   name=f"/layers.{i}/T"),
                  helper.make_node("MatMul", ["q", f"kt{i}"], [f"s{i}"], name=f"/layers.{i}/qk"),
                  helper.make_node("MatMul", [f"s{i}", f"past_value_{i}"], [f"o{i}"],
                                   name=f"/layers.{i}/pv")]
    graph = helper.make_graph(nodes, "attention", inputs, [
        helper.make_tensor_value_info(f"o{i}", TensorProto.FLOAT, ["batch", 2, 1, 8])
        for i in range(layers)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def _windowed_phase(window: int) -> Phase:
    """The attention of _attention_model with layer 0 a sliding window: its nodes attend to
    min(context, window) positions, as a windowed export counts them."""
    import sympy

    from onnxflops.api import count_with_model

    counted = count_with_model(_attention_model(), symbolic=True, keep_bound=False)
    phase = Phase(counted, ("batch", "context"), Traffic(weight_bits=16, activation_bits=16))
    context = phase.symbols[1]
    phase.rows = [(row[0], *(sympy.sympify(x).subs(context, sympy.Min(context, window))
                             for x in row[1:])) if block == "layers.0" else row
                  for (block, _), row in zip(phase.weight_reads, phase.rows)]
    phase.totals = [sympy.Add(*(r[k] for r in phase.rows)) for k in (1, 2, 3, 4)]
    return phase


def _hand_report(phase: Phase, prompt: int, generate: int, batch: int, kv_layers: list):
    from onnxflops.serving import Estimate, LlmReport, Params

    cost = phase.at(batch=batch, context=prompt)
    return LlmReport("Hand", batch, prompt, generate, "bf16", "bf16", Params(10, 10), cost, cost,
                     cost, phase.summed("context", prompt, prompt + generate - 1, batch=batch),
                     HARDWARE["h100"],
                     Estimate(1e-3, 1e-4, 1e4, {"prefill": "memory", "decode": "memory"},
                              {"prefill": {"MatMul": 1e-3}, "decode": {"MatMul": 1e-4}}),
                     phase, phase, kv_layers)


def test_a_windowed_decode_step_stops_growing_at_the_window():
    """Layer 0 attends to min(c, 4) cached positions, layer 1 to all c: a step at context c is
    2 (batch) × 32 × (min(c, 4) + c) MACs (q·kᵀ and p·v: 2 heads × 8 × positions each)."""
    from onnxflops.serving.cache import kv_layers

    phase = _windowed_phase(window=4)
    config = {"layer_types": ["sliding_attention", "full_attention"], "sliding_window": 4}
    r = _hand_report(phase, prompt=2, generate=6, batch=2,
                     kv_layers=kv_layers(_cache_inputs(2, 2, 8), config, 16, 2, 8))
    assert r.decode_at(3).macs == 64 * (3 + 3)
    assert r.decode_at(7).macs == 64 * (4 + 7)
    assert r.decode_at(1000).macs - r.decode_at(999).macs == 64  # layer 1 only
    step = r.decode_at("context").macs
    assert step.has(__import__("sympy").Min)
    # Σ over contexts 2 … 7: min(c, 4) sums to 2 + 3 + 4 + 4 + 4 + 4 = 21, c to 27.
    assert r.decode_total.macs == 64 * (21 + 27)
    assert r.decode_total == phase.summed("context", 2, 7, batch=2)
    for key in ("flops", "bytes_read", "bytes_written"):
        assert getattr(r.decode_total, key) == sum(getattr(r.decode_at(c), key)
                                                   for c in range(2, 8))
    # The roofline evaluates the windowed formulas over an array of contexts.
    timing = phase.seconds(HARDWARE["h100"], "bf16", batch=2, context=__import__("numpy").arange(1, 9))
    assert timing.seconds.shape == (8,)


def test_kv_and_state_bytes_are_the_sums_of_their_layers():
    from onnxflops.serving.cache import kv_layers, state_layers

    # batch 2 at 8 tokens: a full layer of 2 heads × 8 × (key + value) × 2 B = 64 B per token,
    # 2 × 8 × 64 = 1024 B; layer 0's state of 4 × 6 elements, 2 × 24 × 2 B = 96 B
    inputs = {"past_key_1": ["batch", 2, "context", 8], "past_value_1": ["batch", 2, "context", 8],
              "state_conv_states_0_0": ["batch", 4, 6]}
    config = {"layer_types": ["linear_attention", "full_attention"]}
    cache = kv_layers(inputs, config, 16, 2, 8) + state_layers(inputs, 16, 2)
    r = _hand_report(_windowed_phase(4), prompt=2, generate=6, batch=2, kv_layers=cache)
    assert (r.kv_cache_bytes, r.state_bytes) == (1024, 96)
    assert r.kv_cache_by_layer() == {1: 1024}
    doc = json.loads(r.to_json())
    assert (doc["kv_cache_bytes"], doc["state_bytes"]) == (1024, 96)


def test_the_kv_cache_per_layer_kind_in_the_json_the_table_and_the_page():
    from onnxflops.html.llm import llm_html
    from onnxflops.serving.cache import kv_layers, layer_runs

    config = {"layer_types": ["sliding_attention", "full_attention"], "sliding_window": 4}
    # 2 heads × 8 × (key + value) = 32 elements, 64 B per token; batch 2 at 8 tokens:
    # the sliding layer 2 × 4 × 64 = 512 B, the full one 2 × 8 × 64 = 1024 B.
    r = _hand_report(_windowed_phase(4), prompt=2, generate=6, batch=2,
                     kv_layers=kv_layers(_cache_inputs(2, 2, 8), config, 16, 2, 8))
    doc = json.loads(r.to_json())
    assert doc["kv_cache_bytes"] == 512 + 1024
    assert [{k: x[k] for k in ("layer", "kind", "positions", "bytes_per_token", "bytes")}
            for x in doc["kv_cache_layers"]] == [
        {"layer": 0, "kind": "sliding", "positions": 4, "bytes_per_token": 64, "bytes": 512},
        {"layer": 1, "kind": "full", "positions": 8, "bytes_per_token": 64, "bytes": 1024}]
    table = r.to_table()
    assert "\nsliding   0               4                  64B     512B\n" in table
    assert "\nfull      1               8                  64B  1.02 KB\n" in table
    assert "\n  sliding: window 4: min(tokens, 4) positions, as a paged serving cache holds them " \
           "(transformers' keeps 4 − 1)\n" in table
    assert [row["kind"] for row in r.rows(by="kv")] == ["sliding", "full"]
    assert layer_runs([0, 2, 3, 4, 5, 7, 8]) == "0, 2–5, 7, 8"
    assert layer_runs(list(range(0, 20, 2))) == "10 layers"
    page = llm_html(r).replace("<wbr>", "")
    assert "<td class=\"text\">sliding</td><td class=\"text\">0</td><td>4</td><td>64 B</td>" \
           "<td>512 B</td><td class=\"text\">window 4: min(tokens, 4) positions" in page



def test_the_kv_tables_per_token_figure_is_said_to_be_per_layer():
    from onnxflops.html.llm import llm_html
    from onnxflops.serving.cache import kv_layers

    # Two full layers of 2 heads × 8 × (key + value) = 32 elements, 64 B per token each; batch
    # 2 at 8 tokens: 2 × 8 × 64 = 1,024 B each, 2,048 B both. One row: 64 B is per layer.
    r = _hand_report(_windowed_phase(4), prompt=2, generate=6, batch=2,
                     kv_layers=kv_layers(_cache_inputs(2, 2, 8), None, 16, 2, 8))
    table = r.to_table().splitlines()
    header = next(line for line in table if line.lstrip().startswith("KV cache"))
    assert header.split() == ["KV", "cache", "layers", "positions", "per", "token", "per",
                              "layer", "bytes"]
    assert table[table.index(header) + 1].split() == ["full", "0,", "1", "8", "64B", "2.05", "KB"]
    assert "<th>bytes per token per layer</th>" in llm_html(r)

def _expert_model() -> onnx.ModelProto:
    """batched_mm dispatch of 8 experts, top-2: each of `tokens` tokens gathers its 2 experts'
    weights W[e] (8×16) and biases b[e] (8), the weights laid out anew (a Transpose, as an
    exported indexing is) for the product, the biases added."""
    w = helper.make_tensor("w", TensorProto.FLOAT, [8, 8, 16], [0.5] * 8 * 8 * 16)
    b = helper.make_tensor("b", TensorProto.FLOAT, [8, 8], [0.5] * 8 * 8)
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [2])
    graph = helper.make_graph(
        [helper.make_node("Gather", ["w", "experts"], ["picked"], name="/layers.0/pick"),
         helper.make_node("Transpose", ["picked"], ["laid"], perm=[0, 1, 3, 2],
                          name="/layers.0/lay"),
         helper.make_node("MatMul", ["x", "laid"], ["y"], name="/layers.0/apply"),
         helper.make_node("Gather", ["b", "experts"], ["bias"], name="/layers.0/pick_bias"),
         helper.make_node("Unsqueeze", ["bias", "axes"], ["bias4"], name="/layers.0/unsqueeze"),
         helper.make_node("Add", ["y", "bias4"], ["out"], name="/layers.0/add")], "moe",
        [helper.make_tensor_value_info("experts", TensorProto.INT64, ["tokens", 2]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, ["tokens", 2, 1, 16])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["tokens", 2, 1, 8])],
        [w, b, axes])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_a_batch_reads_the_distinct_experts_it_touches():
    """B tokens, each routed to 2 of 8 experts: E·(1 − (1 − k/E)^B) experts' weights are read,
    each 8×16 + 8 = 136 params, 272 B in bf16."""
    from onnxflops.api import count_with_model

    counted = count_with_model(_expert_model(), symbolic=True, keep_bound=False)
    phase = Phase(counted, ("tokens",), Traffic(weight_bits=16, activation_bits=16),
                  experts_per_token=2)

    def weights(tokens: int) -> int:
        return phase.by_block(tokens=tokens)["layers.0"]["weights"]

    assert weights(1) == 2 * 272  # one token: its 2 experts
    # 4 tokens: 8 · (1 − (3/4)^4) = 8 · 175/256 = 5.46875 experts, 1487.5 B: not 8 and not 4·2.
    assert weights(4) == 1488
    assert weights(64) == 8 * 272  # 8 · (1 − (3/4)^64) rounds up to every expert
    # Without top-k: the rows the batch gathers, at most the table (4 tokens: all 8 experts).
    plain = Phase(counted, ("tokens",), Traffic(weight_bits=16, activation_bits=16))
    assert plain.by_block(tokens=4)["layers.0"]["weights"] == 8 * 272
    # The gathered copy the Transpose lays out is no traffic: the product reads the weights.
    lay = [row for node, row in zip(counted.report.nodes, phase.rows) if node.op_type ==
           "Transpose"]
    assert [(read, written) for *_, read, written in lay] == [(0, 0)]


def test_a_decode_graph_left_with_its_own_batch_symbol_names_it_batch():
    from onnxflops.converters.causal_lm import _batch_named

    # Mamba's step takes no keys: the exporter left the batch as s12, in expressions too
    graph = helper.make_graph(
        [helper.make_node("Identity", ["input_ids"], ["y"])], "step",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["s12", 1]),
         helper.make_tensor_value_info("state_conv_states_0_0", TensorProto.FLOAT,
                                       ["s12", 192, 4])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, ["s12", 1])],
        value_info=[helper.make_tensor_value_info("z", TensorProto.FLOAT, ["2*s12", "s120"])])
    model = helper.make_model(graph)
    _batch_named(model)

    def dims(vi):
        return [d.dim_param or d.dim_value for d in vi.type.tensor_type.shape.dim]

    step = model.graph
    assert [dims(vi) for vi in (*step.input, *step.output, *step.value_info)] == [
        ["batch", 1], ["batch", 192, 4], ["batch", 1], ["2*batch", "s120"]]


def test_a_prefill_traced_on_a_short_prompt_branch_is_traced_again_past_it():
    # LFM3 pads a prompt shorter than its convolution's 7 taps: traced at 5 tokens, the exporter
    # records that the graph holds for prompts of 0 to 6 (batch 1 to 65536). Served at 64, it is
    # traced again at 6 + 1 = 7; served at 4, or where the prompt is unbounded, it is not.
    from onnxflops.converters.causal_lm import _prompt_past_short_branch

    def prefill(ranges: str) -> onnx.ModelProto:
        graph = helper.make_graph([], "prefill", [], [])
        graph.metadata_props.add(key="pkg.torch.export.ExportedProgram.range_constraints",
                                 value=ranges)
        return helper.make_model(graph)

    short = prefill("{s72: VR[1, 65536], s70: VR[0, 6]}")
    assert _prompt_past_short_branch(short, 64) == 7
    assert _prompt_past_short_branch(short, 4) is None
    assert _prompt_past_short_branch(short, None) is None
    assert _prompt_past_short_branch(prefill("{s72: VR[1, 65536], s70: VR[7, 16777216]}"),
                                     64) is None
    assert _prompt_past_short_branch(prefill("{s70: VR[2, int_oo]}"), 64) is None
    assert _prompt_past_short_branch(helper.make_model(helper.make_graph([], "g", [], [])),
                                     64) is None


def _token_table(forward):
    """A module of one embedding table whose forward is `forward(table, input_ids)`, token ids of
    2 × 5, and the dynamic shapes the converter gives a prefill (batch and prompt)."""
    torch = pytest.importorskip("torch")

    class Table(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.table = torch.nn.Embedding(11, 3)

        def forward(self, input_ids):
            return forward(self.table, input_ids)

    shapes = {"input_ids": {0: torch.export.Dim("batch", min=1, max=1 << 16),
                            1: torch.export.Dim("prompt", min=1, max=1 << 24)}}
    return Table(), torch.zeros(2, 5, dtype=torch.long), shapes


@pytest.mark.slow  # imports torch
def test_a_prefill_whose_trace_pins_the_prompt_stops_before_tracing_it_again(monkeypatch):
    # A Python loop over the prompt (as Qwen3.5's chunked linear attention loops over chunks)
    # makes the trace's guards pin the prompt to the example's 5 tokens. Served at a prompt of
    # its own, the prefill is exported at that prompt: the capture stops at the first trace's
    # suggested fix, not tracing the pinned graph that is thrown away (in Qwen3.5, 144 → 102 s
    # a count). Not served at one, the pin is taken, as the exporter takes it: two traces.
    from onnxflops.converters import causal_lm

    def looped(table, input_ids):
        total = table(input_ids[:, 0])
        for i in range(1, input_ids.shape[1]):
            total = total + table(input_ids[:, i])
        return total

    module, ids, shapes = _token_table(looped)
    captures = []
    capture = causal_lm.captured_program
    monkeypatch.setattr(causal_lm, "captured_program",
                        lambda *a: captures.append(a) or capture(*a))
    with pytest.raises(causal_lm._PromptPinned):
        causal_lm._captured(module, (ids,), shapes, True)
    assert len(captures) == 1
    captures.clear()
    program = causal_lm._captured(module, (ids,), shapes, False)
    assert len(captures) == 2
    assert causal_lm._pinned(shapes, captures[1][2]) == {"prompt"}
    [prompt_ids] = [n.meta["val"] for n in program.graph.nodes if n.op == "placeholder"
                    and n.name == "input_ids"]
    assert prompt_ids.shape[1] == 5  # fixed, not a symbol


@pytest.mark.slow  # imports torch
def test_a_torch_laid_out_otherwise_leaves_the_capture_to_its_exporter(monkeypatch):
    # Without the exporter's own capture flags to hand, the converter captures nothing itself
    # (never with other flags than the exporter's): None, and the exporter traces the module.
    pytest.importorskip("torch")
    from torch.onnx._internal.exporter import _capture_strategies

    from onnxflops.converters import causal_lm

    module, ids, shapes = _token_table(lambda table, input_ids: table(input_ids))
    assert causal_lm._captured(module, (ids,), shapes, True) is not None
    monkeypatch.delattr(_capture_strategies, "_patch_dynamic_shape_rnn_decompositions")
    assert causal_lm._captured(module, (ids,), shapes, True) is None


@pytest.mark.slow  # imports torch
def test_a_graph_whose_own_checks_fail_at_the_sizes_served_is_not_counted_there():
    # The exporter's trace defers a guard it cannot state as a range to a check in the graph
    # (DeepSeek-V4's compressor, traced at 5 tokens, held for prompts of 4 to 7 only, and its
    # count at 64 was short). Here the check holds for prompts of 4k + 1: at 9, not at 64.
    from onnxflops.converters import causal_lm

    def checked(table, input_ids):
        import torch

        torch._check(input_ids.shape[1] // 4 * 4 == input_ids.shape[1] - 1)
        return table(input_ids)

    module, ids, shapes = _token_table(checked)
    program = causal_lm._captured(module, (ids,), shapes, False)
    assert causal_lm._failing_checks(program, {"prompt": 64}) == \
        ["Eq(4*((prompt//4)) + 1, prompt)"]
    assert causal_lm._failing_checks(program, {"prompt": 9}) == []
    assert causal_lm._failing_checks(program, {}) == []
    # a prefill is then exported at the prompt served; another graph is refused, saying why
    with pytest.raises(causal_lm._PromptPinned):
        causal_lm._export(module, (ids,), shapes, "m", True, {"prompt": 64})
    with pytest.raises(OnnxFlopsError, match=r"^causal LM 'm': its Table graph holds only where "
                       r"Eq\(4\*\(\(prompt//4\)\) \+ 1, prompt\), a check its trace put in, "
                       r"which fails at prompt = 64; it is not served$"):
        causal_lm._export(module, (ids,), shapes, "m", False, {"prompt": 64})


def test_a_decode_step_whose_trace_fixed_the_cache_length_is_found():
    # ProphetNet's decode step exported with its keys and values of 7 positions, not `context`:
    # counted as a formula it read 7 positions at every step (decode MACs flat, the oracle's
    # growing 1,152 a step). Its cache length is read off the first past input; None where
    # symbolic, and for a state of fixed size (rank 3, no tokens axis).
    from onnxflops.converters.causal_lm import _fixed_context

    def decode(*inputs) -> onnx.ModelProto:
        return helper.make_model(helper.make_graph(
            [], "decode", [helper.make_tensor_value_info(n, TensorProto.FLOAT, d)
                           for n, d in inputs], []))

    ids = ("input_ids", ["batch", 1])
    assert _fixed_context(decode(ids, ("past_0_0", ["batch", 4, 7, 24]))) == 7
    assert _fixed_context(decode(ids, ("past_0_0", ["batch", 4, "context", 24]))) is None
    assert _fixed_context(decode(ids, ("states_0_conv", ["batch", 4, 7]))) is None


@pytest.mark.slow  # imports torch
def test_the_tokens_a_decode_step_gives_logits_for_are_read_off_one_run():
    # CPM-Ant slices the cached prefix off the sequence it is fed: fed one token after a cache
    # of 7, its logits are for 1 − 7 → 0 tokens, so it is not served; a step that fails gives
    # None (the export says why).
    torch = pytest.importorskip("torch")
    from onnxflops.converters.causal_lm import _tokens_decoded

    def step(cached):
        return lambda ids, past: torch.zeros(ids.shape[0], max(ids.shape[1] - cached, 0), 10)

    ids = torch.zeros(2, 1, dtype=torch.long)
    assert _tokens_decoded(step(0), (ids, [])) == 1
    assert _tokens_decoded(step(7), (ids, [])) == 0

    def fails(ids, past):
        raise RuntimeError("no")

    assert _tokens_decoded(fails, (ids, [])) is None


@pytest.mark.slow  # imports torch (transformers' cache layers)
def test_a_cache_layer_of_an_mlp_layer_holds_nothing_and_the_cache_is_served():
    # Nemotron-H's cache lists every layer, [mamba, moe, attention, mlp]: its MoE and MLP layers
    # are transformers' DummyLayer (no keys, no states). Keys are taken from layer 2 only; a
    # layer of no known kind still makes the cache one that is not served
    pytest.importorskip("transformers")
    from types import SimpleNamespace

    from transformers.cache_utils import DummyLayer

    from onnxflops.converters.causal_lm import _self_attention_past

    attention = SimpleNamespace(keys="k", values="v")
    cache = SimpleNamespace(layers=[DummyLayer(), attention, DummyLayer()])
    assert _self_attention_past(cache) == ([None, ("k", "v"), None], False)
    unknown = SimpleNamespace(layers=[SimpleNamespace(), attention])
    assert _self_attention_past(unknown) == (None, False)

