"""One trace straight to the ops the ONNX translation takes exports the graph that torch.onnx.export's
two traces (torch.export, then run_decompositions) give, and is what export_dynamo runs."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from torch_custom_op import triple  # noqa: E402
import onnx  # noqa: E402

from onnxflops.converters import from_torch, single_trace  # noqa: E402


class Net(torch.nn.Module):
    """A conv + BatchNorm, an attention, linears and hardswish (CompositeImplicitAutograd ops
    that ONNX translates whole), addcmul (decomposed), a pad, and a library custom op."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(8)
        self.qkv = torch.nn.Linear(8, 24)
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x, scale):
        y = torch.nn.functional.hardswish(self.norm(self.conv(x)))
        tokens = torch.nn.functional.pad(y.flatten(2).transpose(1, 2), (0, 0, 1, 0))
        q, k, v = self.qkv(tokens).reshape(1, -1, 3, 2, 4).permute(2, 0, 3, 1, 4)
        attended = torch.nn.functional.scaled_dot_product_attention(q, k, v)
        pooled = torch.addcmul(attended.mean((1, 2)), scale, scale)
        return self.head(triple(pooled))


def _tied():
    """Two linears sharing one weight: the exporter's retrace gives it one initializer."""
    first, second = torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)
    second.weight = first.weight
    return torch.nn.Sequential(first, torch.nn.ReLU(), second)


class WindowAttention(torch.nn.Module):
    """NesT's windowed attention: 5-D query, key and value (batch 2, heads 3, windows 4, tokens
    5, width 8), a causal mask over each window's tokens, which the ONNX translation of SDPA
    takes on 4-D views only."""

    def forward(self, q, k, v):
        mask = torch.ones(4, 5, 5, dtype=torch.bool).tril()
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class Norms(torch.nn.Module):
    """Batch norms the one trace puts straight on `_native_batch_norm_legit_no_training` (2-D and
    3-D inputs of BatchNorm1d, BatchNorm2d without affine parameters) and one it decomposes as
    torch does: without running statistics it normalizes by the batch's own (training form)."""

    def __init__(self):
        super().__init__()
        self.flat = torch.nn.BatchNorm1d(4)
        self.sequence = torch.nn.BatchNorm1d(4)
        self.plain = torch.nn.BatchNorm2d(4, affine=False)
        self.batch_stats = torch.nn.BatchNorm2d(4, track_running_stats=False)

    def forward(self, image):
        pooled = self.flat(image.mean((2, 3)))
        rows = self.sequence(image.flatten(2))
        return pooled.sum() + rows.sum() + self.batch_stats(self.plain(image))


CASES = {"net": (Net, ((1, 3, 6, 6), (4,)), ["x", "scale"]), "tied": (_tied, ((1, 4),), ["x"]),
         "windows": (WindowAttention, ((2, 3, 4, 5, 8),) * 3, ["q", "k", "v"]),
         "norms": (Norms, ((2, 4, 3, 3),), ["image"])}


def _exported(monkeypatch, case: str, once: bool) -> onnx.ModelProto:
    build, shapes, names = CASES[case]
    if not once:
        monkeypatch.setattr(from_torch, "_traced_once", lambda *args: None)
    torch.manual_seed(0)
    try:
        return from_torch.export_dynamo(build().eval(), tuple(torch.randn(s) for s in shapes),
                                        names, 18, keep_weights=True)
    finally:
        monkeypatch.undo()


def _without_trace_records(proto: onnx.ModelProto) -> bytes:
    """The proto less the input's record of its traced name (the one trace names the placeholder
    as the exporter renames it, so records no rename)."""
    proto = onnx.ModelProto.FromString(proto.SerializeToString())
    for value in proto.graph.input:
        kept = [p for p in value.metadata_props if p.key != "pkg.torch.onnx.original_node_name"]
        del value.metadata_props[:]
        value.metadata_props.extend(kept)
    return proto.SerializeToString()


@pytest.mark.parametrize("case", list(CASES))
def test_one_trace_exports_the_two_traces_graph(monkeypatch, case):
    assert single_trace.available()
    two = _exported(monkeypatch, case, once=False)
    one = _exported(monkeypatch, case, once=True)
    assert _without_trace_records(one) == _without_trace_records(two)
    if case == "tied":
        assert len(one.graph.initializer) == 3  # the shared weight once, and two biases
        return
    kinds = {n.op_type for n in one.graph.node}
    if case == "windows":  # the attention's two products over each window, on 4-D views
        assert [n.op_type for n in one.graph.node].count("MatMul") == 2
        return
    if case == "norms":
        assert [n.op_type for n in one.graph.node].count("BatchNormalization") == 4
        return
    # ops ONNX translates stay whole (linear, hardswish: CompositeImplicitAutograd ops the
    # trace would decompose if the table did not keep them), the custom op one node of its own
    assert {"Conv", "BatchNormalization", "Gemm", "HardSwish", "Pad", "triple"} <= kinds


def test_the_one_trace_puts_attention_of_another_rank_on_4d_views():
    # its own rule for the op, not the exporter's TorchFunctionMode (entered around the
    # exporters' own traces only, a tenth of a ResNet-50 trace where the model has no such input)
    with from_torch.torchlib_registry_reused():
        registry = from_torch._trace_registry(18, {})
        program = single_trace.traced_once(WindowAttention(), tuple(
            torch.randn(2, 3, 4, 5, 8) for _ in range(3)), None, registry)
    [attention] = [n for n in program.graph.nodes
                   if n.target is torch.ops.aten.scaled_dot_product_attention.default]
    # the 24 windows (2·3·4) one batch dim of one head, the mask expanded over them
    assert [tuple(a.meta["val"].shape) for a in attention.args[:4]] == \
        [(24, 1, 5, 8)] * 3 + [(24, 1, 5, 5)]


def test_the_one_trace_puts_batch_norm_in_inference_on_its_kernel(monkeypatch):
    # its own rule for the op (each of the trace's two passes over the forward calls it), which
    # gives the kernel torch's decompositions reach two dispatches down
    calls = []
    rule = single_trace.batch_norm_in_inference
    monkeypatch.setattr(single_trace, "batch_norm_in_inference",
                        lambda *args: calls.append(args[5]) or rule(*args))
    with from_torch.torchlib_registry_reused():
        registry = from_torch._trace_registry(18, {})
        program = single_trace.traced_once(Norms().eval(), (torch.randn(2, 4, 3, 3),), None,
                                           registry)
    assert calls == [False, False, False, True] * 2  # `training`: no running statistics
    aten = torch.ops.aten
    norms = [n.target for n in program.graph.nodes if "batch_norm" in str(n.target)]
    assert norms == [aten._native_batch_norm_legit_no_training.default] * 3 + \
        [aten._native_batch_norm_legit.no_stats]


def test_batch_norm_in_inference_computes_batch_norm():
    from onnxflops.converters.torch_ops import batch_norm_in_inference

    torch.manual_seed(0)
    x, weight, bias = torch.randn(2, 3, 4), torch.randn(3), torch.randn(3)
    mean, var = torch.randn(3), torch.rand(3) + 0.5
    for training in (False, True):
        expected = torch.nn.functional.batch_norm(x, mean.clone(), var.clone(), weight, bias,
                                                  training, 0.1, 1e-5)
        got = batch_norm_in_inference(x, weight, bias, mean.clone(), var.clone(), training, 0.1,
                                      1e-5, False)
        torch.testing.assert_close(got, expected)
    empty = torch.randn(0, 3, 4)
    assert batch_norm_in_inference(empty, weight, bias, mean, var, False, 0.1, 1e-5,
                                   False).shape == (0, 3, 4)


def test_export_traces_once(monkeypatch):
    from torch.export import ExportedProgram

    retraced = []
    decompose = ExportedProgram.run_decompositions
    monkeypatch.setattr(ExportedProgram, "run_decompositions",
                        lambda self, *a, **k: retraced.append(1) or decompose(self, *a, **k))
    from_torch.export_dynamo(Net().eval(), (torch.randn(1, 3, 6, 6), torch.randn(4)),
                             ["x", "scale"], 18)
    assert retraced == []


def test_a_failed_one_trace_leaves_the_export_to_the_exporter(monkeypatch):
    def refuses(*args):
        raise RuntimeError("no")

    monkeypatch.setattr(single_trace, "traced_once", refuses)
    proto = from_torch.export_dynamo(Net().eval(), (torch.randn(1, 3, 6, 6), torch.randn(4)),
                                     ["x", "scale"], 18)
    assert [i.name for i in proto.graph.input] == ["x", "scale"]
    assert sum(n.op_type == "Conv" for n in proto.graph.node) == 1


class BiasedAttention(torch.nn.Module):
    """BEiT's attention: a learned bias as the mask, the heads' output transposed and reshaped.
    The exporter's type-promotion pass reruns the attention on fake tensors, whose output strides
    differ from the trace's, so the view the trace recorded fails there."""

    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(8, 24)
        self.bias = torch.nn.Parameter(torch.zeros(2, 5, 5))

    def forward(self, x):
        batch, tokens, width = x.shape
        q, k, v = self.qkv(x).reshape(batch, tokens, 3, 2, 4).permute(2, 0, 3, 1, 4).unbind(0)
        attended = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=self.bias.unsqueeze(0))
        return attended.transpose(1, 2).reshape(batch, tokens, width)


def test_a_view_of_the_attention_output_exports_with_dynamo():
    import warnings

    import onnxflops

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to the legacy exporter warns
        report = onnxflops.count(BiasedAttention().eval(), inputs=(1, 5, 8))
    # qkv 5·8·24 = 960; QKᵀ and AV 2 heads · 5 · 5 · 4 = 200 each
    assert report.total.macs == 960 + 200 + 200
    assert report.total.params == 8 * 24 + 24 + 2 * 5 * 5


def test_what_an_export_reuses_changes_no_export(monkeypatch):
    """The decomposition tables kept per process, the op signatures kept per export and the
    graph code made when first called give the proto that making each anew gives."""
    import contextlib

    def exported() -> bytes:
        torch.manual_seed(0)
        return from_torch.export_dynamo(Net().eval(), (torch.randn(1, 3, 6, 6), torch.randn(4)),
                                        ["x", "scale"], 18, keep_weights=True).SerializeToString()

    reused = exported()
    assert exported() == reused
    monkeypatch.setattr(single_trace, "op_signatures_reused", contextlib.nullcontext)
    monkeypatch.setattr(single_trace, "graph_code_deferred", contextlib.nullcontext)
    monkeypatch.setattr(single_trace, "_split_tables",
                        single_trace._split_tables.__wrapped__)  # built anew
    assert exported() == reused


def test_decomposition_tables_are_built_again_once_an_op_is_registered():
    from torch.onnx._internal.exporter._registration import ONNXRegistry

    registry = ONNXRegistry.from_torchlib(18)
    composite, rest = single_trace.decomposition_tables(registry)
    built = single_trace._split_tables.cache_info().misses
    again, _ = single_trace.decomposition_tables(registry)
    assert again == composite and again is not composite  # a copy each time
    assert single_trace._split_tables.cache_info().misses == built
    # a composite op registered since: the tables are built anew, and keep it whole
    library = torch.library.Library("onnxflops_trace_test", "DEF")
    library.define("twice(Tensor x) -> Tensor")
    library.impl("twice", lambda x: 2 * x, "CompositeImplicitAutograd")
    try:
        fresh, _ = single_trace.decomposition_tables(registry)
        assert single_trace._split_tables.cache_info().misses == built + 1
        assert torch.ops.onnxflops_trace_test.twice.default in fresh
        assert torch.ops.onnxflops_trace_test.twice.default not in composite
    finally:
        library._destroy()


def test_op_signatures_are_kept_per_schema_for_the_duration():
    import onnx_ir
    from onnx.defs import OpSchema, get_schema

    signature = onnx_ir.schemas.OpSignature
    made = signature.__dict__["from_op_schema"]
    anew = signature.from_op_schema(get_schema("Conv", 18, ""))

    def custom(attribute: str) -> OpSchema:  # two schemas of one name and version
        return OpSchema("op", "onnxflops_test", 1, inputs=[], outputs=[],
                        attributes=[OpSchema.Attribute(attribute, OpSchema.AttrType.INT, "")])

    first, second = custom("a"), custom("b")
    with single_trace.op_signatures_reused():
        kept = signature.from_op_schema(get_schema("Conv", 18, ""))  # a fresh schema object
        assert signature.from_op_schema(get_schema("Conv", 18, "")) is kept
        reductions = [signature.from_op_schema(get_schema("ReduceMean", v, "")) for v in (17, 18)]
        assert [r.since_version for r in reductions] == [13, 18]  # two versions, two signatures
        assert [p.name for p in signature.from_op_schema(first).params] == ["a"]
        assert [p.name for p in signature.from_op_schema(second).params] == ["b"]
        assert signature.from_op_schema(first) is signature.from_op_schema(first)
    assert str(kept) == str(anew)  # the same inputs, attributes and their defaults, types
    assert signature.__dict__["from_op_schema"] is made  # put back
    assert signature.from_op_schema(get_schema("Conv", 18, "")) is not kept


def test_a_warmed_process_builds_no_tables_for_its_exports():
    """The survey's template warms the registry and the tables; the rows it forks export with
    them as they are."""
    single_trace._split_tables.cache_clear()  # as a fresh process
    from_torch.warm_torchlib_registry()
    built = single_trace._split_tables.cache_info().misses
    assert built == 1
    from_torch.export_dynamo(Net().eval(), (torch.randn(1, 3, 6, 6), torch.randn(4)),
                             ["x", "scale"], 18)
    assert single_trace._split_tables.cache_info().misses == built


def test_the_trace_handler_passes_a_tensors_own_reads_through(monkeypatch):
    from torch._export.non_strict_utils import _NonStrictTorchFunctionHandler as Handler

    handled = []
    monkeypatch.setattr(Handler, "_override",
                        lambda self, func, args, kwargs: handled.append(func) or (func, args,
                                                                                   kwargs))
    handler, x = Handler(), torch.arange(6.0).reshape(2, 3)
    reads = [(torch._C.TensorBase.shape.__get__, (x,)), (torch.Tensor.stride, (x,)),
             (torch.Tensor.size, (x, 1))]
    rewritten = [(torch.Tensor.__getitem__, (x, 1)), (torch.tensor, ([1, 2],))]
    with single_trace._tensor_reads_passed_through():
        results = [handler.__torch_function__(f, (torch.Tensor,), args) for f, args in reads]
        assert handled == []
        assert results == [(2, 3), (3, 1), 3]
        for func, args in rewritten:  # what the handler may rewrite still reaches it
            handler.__torch_function__(func, (torch.Tensor,), args)
        assert handled == [torch.Tensor.__getitem__, torch.tensor]
    handler.__torch_function__(torch.Tensor.stride, (torch.Tensor,), (x,))
    assert handled[-1] is torch.Tensor.stride  # put back


def test_the_trace_records_no_torch_function_per_node(monkeypatch):
    import functools

    import torch.export._trace as trace

    switches = []
    export = trace.aot_export_joint_with_descriptors

    @functools.wraps(export)
    def recorded(*args, **kwargs):
        switches.append(kwargs.get("_disable_torch_fn_metadata_mode"))
        return export(*args, **kwargs)

    monkeypatch.setattr(trace, "aot_export_joint_with_descriptors", recorded)
    with from_torch.torchlib_registry_reused():
        single_trace.traced_once(Net().eval(), (torch.randn(1, 3, 6, 6), torch.randn(4)), None,
                                 from_torch._trace_registry(18, {}))
    assert switches == [True]
    assert trace.aot_export_joint_with_descriptors is recorded  # put back


class AliasOps(torch.nn.Module):
    """PE Audio-Video's masked group norm: a sum over an integer mask divided by torch.divide, and
    the other aliases of elementwise ops (multiply, subtract, greater, ...) on a float and an
    integer tensor, which torch promotes."""

    def forward(self, x, mask):
        mean = torch.divide((x * mask).sum(), mask.sum())
        shifted = torch.subtract(torch.multiply(x, mask), mean)
        return torch.where(torch.greater(shifted, mask) & torch.less_equal(mask, shifted),
                           shifted, torch.divide(shifted, mask.sum(), rounding_mode="floor"))


def test_alias_ops_of_two_dtypes_are_promoted_as_the_ops_they_alias():
    import onnxflops

    x, mask = torch.randn(2, 6), torch.ones(2, 6, dtype=torch.int64)
    report = onnxflops.count(AliasOps().eval(), inputs={"x": x, "mask": mask})
    assert not report.uncosted
    # onnxruntime runs it (each Div, Mul, Sub, Greater and LessOrEqual of one dtype)
    import onnxruntime

    proto = from_torch.export_dynamo(AliasOps().eval(), (x, mask), ["x", "mask"], 18)
    session = onnxruntime.InferenceSession(proto.SerializeToString())
    (got,) = session.run(None, {"x": x.numpy(), "mask": mask.numpy()})
    torch.testing.assert_close(torch.from_numpy(got), AliasOps()(x, mask))
