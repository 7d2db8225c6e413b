"""Library custom ops and mixture-of-experts layers through the torch converter: exported as nodes
that keep their shapes, costed by rules; eager experts costed by tokens × k over all experts."""

from __future__ import annotations

import math

import numpy as np
import pytest

import onnxflops

torch = pytest.importorskip("torch")
from onnxflops.converters import torch_to_onnx  # noqa: E402
from onnxflops.converters.common import import_transformers  # noqa: E402

ROWS, INNER, OUTER = 3, 4, 6


@torch.library.custom_op("onnxflops_test::scaled_mm", mutates_args=())
def scaled_mm(x: torch.Tensor, w: torch.Tensor, factor: float) -> torch.Tensor:
    return x @ w * factor


@scaled_mm.register_fake
def _(x, w, factor):
    return x.new_empty(x.shape[0], w.shape[1])


_LIBRARY = torch.library.Library("onnxflops_lib", "DEF")  # an op defined without custom_op
_LIBRARY.define("double_mm(Tensor x, Tensor w) -> Tensor")
_LIBRARY.impl("double_mm", lambda x, w: 2 * (x @ w), "CompositeExplicitAutograd")
torch.library.register_fake("onnxflops_lib::double_mm", lambda x, w: x.new_empty(x.shape[0],
                                                                                   w.shape[1]))


class Calls(torch.nn.Module):
    def __init__(self, op):
        super().__init__()
        self.op = op
        self.w = torch.nn.Parameter(torch.randn(INNER, OUTER))

    def forward(self, x):
        return torch.relu(self.op(x, self.w))


def _mm_rule(node):
    """MACs = rows·inner·outer"""
    (rows, inner), outer = node.input(0).dims, node.input(1).dims[1]
    return onnxflops.Cost(macs=rows * inner * outer, dot_products=rows * outer)


def test_a_library_custom_op_exports_as_a_node_that_keeps_its_shape():
    model = torch_to_onnx(Calls(lambda x, w: scaled_mm(x, w, 0.5)), [(ROWS, INNER)])
    [custom] = [n for n in model.graph.node if n.domain == "onnxflops_test"]
    assert custom.op_type == "scaled_mm" and custom.attribute[0].f == 0.5
    report = onnxflops.count(model, rules={("onnxflops_test", "scaled_mm"): _mm_rule})
    assert not report.uncosted
    assert report.total.macs == ROWS * INNER * OUTER  # 3·4·6 = 72
    relu = next(n for n in report.nodes if n.op_type == "Relu")
    assert relu.output_shapes == [[ROWS, OUTER]]  # the shape its fake implementation gave


def test_a_registered_op_exports_as_a_node_or_by_its_translation():
    op = torch.ops.onnxflops_lib.double_mm.default
    with pytest.raises(onnxflops.OnnxFlopsError,
                       match="^PyTorch model 'Calls': no ONNX translation of "
                             "onnxflops_lib.double_mm$"):
        torch_to_onnx(Calls(op), [(ROWS, INNER)])
    onnxflops.register_torch_op(op)
    model = torch_to_onnx(Calls(op), [(ROWS, INNER)])
    assert [n.op_type for n in model.graph.node if n.domain == "onnxflops_lib"] == ["double_mm"]

    from onnxscript import opset18 as onnx_op

    def doubled_product(x, w):
        return onnx_op.Mul(onnx_op.MatMul(x, w), onnx_op.Constant(value_float=2.0))

    onnxflops.register_torch_op("onnxflops_lib::double_mm", doubled_product)
    report = onnxflops.count(Calls(op), [(ROWS, INNER)])
    assert not report.uncosted
    assert report.total.macs == ROWS * INNER * OUTER  # the MatMul: 72
    assert report.total.flops == 2 * 72 + 2 * ROWS * OUTER  # + the doubling, + the Relu: 18 each


T, K_ROUTED, D, F, LAYERS = 8, 2, 32, 48, 2  # tokens, experts per token, width, expert width


def tiny_mixtral(experts: str):
    transformers = import_transformers()
    config = transformers.MixtralConfig(
        hidden_size=D, intermediate_size=F, num_hidden_layers=LAYERS, num_attention_heads=4,
        num_key_value_heads=2, vocab_size=64, max_position_embeddings=64, num_local_experts=4,
        num_experts_per_tok=K_ROUTED)
    config._attn_implementation = "eager"
    config._experts_implementation = experts
    torch.manual_seed(0)
    return transformers.MixtralForCausalLM(config).eval()


def test_eager_experts_cost_tokens_times_k_over_all_experts():
    from torch.utils.flop_counter import FlopCounterMode

    model = tiny_mixtral("eager")
    ids = torch.ones(1, T, dtype=torch.long)
    with FlopCounterMode(display=False) as oracle, torch.no_grad():
        model(input_ids=ids)
    report = onnxflops.count(model, {"input_ids": ids})
    assert not report.uncosted
    assert report.total.macs == oracle.get_total_flops() // 2
    # per layer: gate and up T·k·D·2F = 16·32·96 = 49,152, down T·k·F·D = 24,576
    assert report.routed_macs == LAYERS * (T * K_ROUTED * D * 2 * F + T * K_ROUTED * F * D)
    assert report.total.params == sum(p.numel() for p in model.parameters())
    assert model.config._experts_implementation == "eager"  # as the user left it


def test_the_oracle_runs_the_experts_of_a_model_held_in_another_eagerly():
    # NeMo SpeechLM holds a Nemotron-H whose own config runs the grouped kernel (0 in
    # FlopCounterMode) under an outer model with no experts: the oracle switched only the outer.
    from onnxflops.survey.oracle import flop_counter_flops

    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.language_model = tiny_mixtral("grouped_mm")

        def forward(self, input_ids):
            return self.language_model(input_ids=input_ids).logits

    ids = torch.ones(1, T, dtype=torch.long)
    outer, eager = Outer().eval(), tiny_mixtral("eager")
    assert flop_counter_flops(outer, (ids,)) == flop_counter_flops(eager, (ids,))
    # routed: per layer T·k·D·2F + T·k·F·D, as counted by hand above
    assert onnxflops.count(outer, {"input_ids": ids}).routed_macs == \
        LAYERS * (T * K_ROUTED * D * 2 * F + T * K_ROUTED * F * D)
    assert outer.language_model.config._experts_implementation == "grouped_mm"  # put back


def test_the_default_grouped_experts_kernel_exports_and_costs_its_groups():
    model = tiny_mixtral("grouped_mm")
    ids = torch.ones(1, T, dtype=torch.long)
    report = onnxflops.count(torch_to_onnx(model, {"input_ids": ids}))
    grouped = [n for n in report.nodes if n.op_type == "grouped_mm_fallback"]
    assert grouped[0].macs == T * K_ROUTED * D * 2 * F  # 49,152: Σ of the experts' GEMMs
    assert grouped[0].detail == {"routed": True}
    assert not report.uncosted
    # FlopCounterMode has no formula for the kernel: the oracle is the eager experts' count
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as eager, torch.no_grad():
        tiny_mixtral("eager")(input_ids=ids)
    assert report.total.macs == eager.get_total_flops() // 2
    assert report.total.params == sum(p.numel() for p in model.parameters())


class _Attention(torch.nn.Module):
    """Attention over inputs of `lead` dims before (tokens 5, width 8); the causal mask, when
    given, broadcasts over all but the last of them."""

    def __init__(self, lead: tuple[int, ...], masked: bool):
        super().__init__()
        self.lead, self.masked = lead, masked

    def forward(self, q, k, v):
        mask = torch.ones(*self.lead[-1:], 5, 5, dtype=torch.bool).tril() if self.masked else None
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


# 5-D: NesT's and Twins' windowed attention (batch 2, heads 3, windows 4); 3-D: timm's SAM ViT
# (batch·heads 6), which the dynamo exporter's translation of SDPA refused ("only 4D query, key,
# and value are supported"); its one trace puts them on 4-D views. The legacy exporter translates
# attention of any rank.
@pytest.mark.parametrize("lead", [(2, 3, 4), (6,)], ids=["5-D", "3-D"])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("exporter", ["dynamo", "legacy"])
def test_attention_of_another_rank_than_4_converts(lead, masked, exporter, recwarn):
    qkv = [torch.randn(*lead, 5, 8) for _ in range(3)]
    model = torch_to_onnx(_Attention(lead, masked), qkv, exporter=exporter)
    assert not [w for w in recwarn if "exporter instead" in str(w.message)]  # no fallback
    report = onnxflops.count(model)
    assert not report.uncosted
    # each of the 24 windows (2·3·4) or 6 batch·heads: QKᵀ 5·5·8 + PV 5·5·8 = 400 MACs
    assert report.total.macs == math.prod(lead) * 400


@pytest.mark.parametrize("mode, options", [("bicubic", {"antialias": True}),
                                           ("bilinear", {"antialias": True}),
                                           ("nearest-exact", {})])
def test_upsampling_modes_the_legacy_exporter_lacked_convert_as_resize(mode, options, recwarn):
    class Upsample(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.interpolate(x, size=(6, 10), mode=mode, **options)

    legacy = torch_to_onnx(Upsample(), [(1, 2, 12, 20)], exporter="legacy")
    assert not [w for w in recwarn if "exporter instead" in str(w.message)]
    [resize] = [n for n in legacy.graph.node if n.op_type == "Resize"]
    dynamo = onnxflops.count(torch_to_onnx(Upsample(), [(1, 2, 12, 20)], exporter="dynamo"))
    counted = onnxflops.count(legacy)
    assert counted.nodes[-1].output_shapes == [[1, 2, 6, 10]]
    assert counted.total.flops == dynamo.total.flops  # the same Resize as the dynamo exporter's


def test_diff_and_cumsum_convert_with_the_legacy_exporter_as_onnxruntime_runs_them():
    # transformers' packed-sequence check runs torch.diff on the position ids of every model that
    # builds a mask; the legacy exporter had no diff ("Exporting the operator 'aten::diff' ... is
    # not supported"), and its cumsum of a bool mask stayed a CumSum of bool, which onnxruntime
    # refuses: Mimi's encoder, which only the legacy exporter traces, was not counted.
    ort = pytest.importorskip("onnxruntime")

    class Diffs(torch.nn.Module):
        def forward(self, x):
            twice = torch.diff(x, n=2, dim=1)  # (2, 5, 3) -> (2, 3, 3)
            once = torch.diff(x, dim=-1, prepend=x[..., :1] - 1, append=x[..., -1:])
            # as transformers counts packed sequences: a running count of a bool mask, in int64
            return once, twice, (once > 0).cumsum(-1), x.cumsum(1, dtype=torch.float64)

    x = torch.randn(2, 5, 3)
    model = torch_to_onnx(Diffs(), [x], exporter="legacy", keep_weights=True)
    session = ort.InferenceSession(model.SerializeToString())
    got = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    for ours, theirs in zip(got, Diffs()(x)):
        assert ours.dtype == theirs.numpy().dtype
        np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-6)
    report = onnxflops.count(model)
    assert [n.op_type for n in report.nodes if n.op_type == "CumSum"] == ["CumSum"] * 2
    assert not report.uncosted


def test_a_squeeze_of_a_dim_not_of_size_one_is_the_tensor_itself():
    # torch's x.squeeze(2) leaves x of (1, 4, 16) as it is; the exporter's Squeeze of axis 2
    # was refused by ONNX and onnxruntime alike, and the model with it (NeMo's RNN-T joint).
    ort = pytest.importorskip("onnxruntime")

    class Joint(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.head = torch.nn.Linear(8, 16)

        def forward(self, x):
            return self.head(x).squeeze(2).squeeze(0)  # the first a no-op, the second not

    model = torch_to_onnx(Joint(), [(1, 4, 8)])
    assert [n.op_type for n in model.graph.node if n.op_type in ("Squeeze", "Identity")] == \
        ["Identity", "Squeeze"]
    ort.InferenceSession(model.SerializeToString())  # loads
    report = onnxflops.count(model)
    assert report.nodes[-1].output_shapes == [[4, 16]]
    assert report.total.macs == 4 * 8 * 16


class _Gated(torch.nn.Module):
    """A second product only where a weight's value says so: Python control flow on a tensor's
    value, which a trace records as the one path it took (LongCat-Flash's loop over the experts a
    batch is routed to, identity experts costing nothing)."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4, bias=False)
        self.gate = torch.nn.Parameter(torch.tensor(7.0))

    def forward(self, x):
        h = self.lin(x)
        if self.gate.item() == 7.0:  # true for its own weights, false for the stand-ins
            h = self.lin(h)
        return h


def test_a_legacy_trace_that_follows_the_models_data_says_so():
    from onnxflops.errors import DataPathWarning

    with pytest.warns(DataPathWarning, match="the graphs differ, first at op 2 .one trace has 2 ops, the other 4."):
        model = torch_to_onnx(_Gated(), [torch.randn(1, 4)], exporter="legacy")
    # the stand-ins' path: one 1×4 @ 4×4 product (16 MACs), not the model's own two (32)
    assert onnxflops.count(model).total.macs == 16


def test_a_legacy_trace_of_one_path_for_all_data_is_not_flagged(recwarn):
    from onnxflops.errors import DataPathWarning

    torch_to_onnx(torch.nn.Linear(4, 4), [torch.randn(1, 4)], exporter="legacy")
    assert not [w for w in recwarn if issubclass(w.category, DataPathWarning)]


def test_noise_drawn_with_a_generator_argument_exports():
    # UnivNet draws its noise with torch.randn(shape, generator=generator): the exporter had no
    # translation of randn.generator ("No ONNX function found"), so the model was not counted.
    ort = pytest.importorskip("onnxruntime")

    class Noisy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 4)

        def forward(self, x, generator=None):
            return self.lin(x + torch.randn(x.shape, generator=generator))

    model = torch_to_onnx(Noisy(), [(2, 8)])
    assert "RandomNormalLike" in [n.op_type for n in model.graph.node]
    ort.InferenceSession(model.SerializeToString())
    assert onnxflops.count(model).total.macs == 2 * 8 * 4


def test_what_neither_exporter_converts_converts_with_the_registrys_decompositions(recwarn):
    # HunYuan-MoE counts the tokens each expert gets with torch.histc over the data's own range
    # (min = max = 0): torchlib refuses that, the legacy exporter has no histc, so the model was
    # not counted. transformers' ONNX export patches histc as a scatter-add of ones.
    pytest.importorskip("transformers.exporters.utils")

    class ExpertLoad(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.router = torch.nn.Linear(8, 4)

        def forward(self, x):
            logits = self.router(x)
            return logits * torch.histc(logits.argmax(-1).float(), bins=4)

    model = torch_to_onnx(ExpertLoad(), [(3, 8)])
    [fallback] = [str(w.message) for w in recwarn if "exporter instead" in str(w.message)]
    assert "aten_histc with min == max" in fallback
    assert fallback.endswith("converted with the patched dynamo exporter instead")
    assert "ScatterElements" in [n.op_type for n in model.graph.node]
    assert onnxflops.count(model).total.macs == 3 * 8 * 4  # the router once; histc no product
    assert torch.histc is not None and "patch" not in torch.histc.__qualname__  # restored
