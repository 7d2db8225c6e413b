"""What a process reuses between torch exports changes no export: the torchlib registry built once
gives the graph byte for byte that the exporter's own registry gives, custom translations too."""

from __future__ import annotations

import contextlib
import functools

import pytest

torch = pytest.importorskip("torch")
from torch_custom_op import NAMESPACE, triple  # noqa: E402
from torch.onnx._internal.exporter._registration import ONNXRegistry  # noqa: E402

from onnxflops.converters import from_torch  # noqa: E402


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.norm = torch.nn.BatchNorm2d(4)
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x):
        y = torch.relu(self.norm(self.conv(x))).mean((2, 3))
        return self.head(triple(y))


def _exported(reuse: bool) -> bytes:
    reused = from_torch.torchlib_registry_reused() if reuse else contextlib.nullcontext()
    original = from_torch.torchlib_registry_reused
    from_torch.torchlib_registry_reused = lambda: reused  # export_dynamo enters it
    try:
        proto = from_torch.export_dynamo(Net().eval(), (torch.randn(1, 3, 8, 8),), ["x"], 18,
                                         keep_weights=True)
    finally:
        from_torch.torchlib_registry_reused = original
    return proto.SerializeToString()


def test_a_reused_registry_exports_what_a_fresh_one_does(monkeypatch):
    torch.manual_seed(0)
    fresh = _exported(reuse=False)
    builds = []
    built = ONNXRegistry.__dict__["from_torchlib"].__func__

    def counted(cls, build, opset, torchvision_ops):
        builds.append(opset)
        return built(cls, opset)

    cached = functools.cache(counted)
    monkeypatch.setattr(from_torch, "_torchlib_registry", cached)
    for _ in range(2):
        torch.manual_seed(0)
        assert _exported(reuse=True) == fresh
    assert builds == [18]  # the second export copied the first's registry
    # the custom translation the first export added is not left in the registry it copied
    pristine = cached(ONNXRegistry, built, 18, from_torch._torchvision_ops_loaded())
    assert not [k for k in pristine.functions if NAMESPACE in str(k)]
    assert ONNXRegistry.__dict__["from_torchlib"].__func__ is built  # put back after each export


def test_signatures_inferred_on_use_are_the_ones_inferred_when_made():
    built = ONNXRegistry.__dict__["from_torchlib"].__func__
    eager = built(ONNXRegistry, 18)
    with from_torch._signatures_inferred_on_use():
        deferred = built(ONNXRegistry, 18)
    metas = [meta for metas in deferred.functions.values() for meta in metas]
    pending = sum(bool(meta.__dict__.get("_pending")) for meta in metas)
    assert pending > len(metas) // 2  # none inferred yet: an export infers only what it reads

    def entries(registry):
        return {target: [(m.onnx_function, m.fx_target, m.is_complex, m.opset_introduced,
                          m.is_custom, m.signature) for m in metas]
                for target, metas in registry.functions.items()}

    # every torchlib function infers (none would have been left out), to the same signature
    assert entries(deferred) == entries(eager)
    # (an entry made to skip inference, such as a no_compile torchlib op, has none to infer)
    assert not any(meta.__dict__.get("_pending") and not meta.skip_signature_inference
                   for meta in metas)


def test_a_traced_translation_s_domain_is_its_opset_s():
    """The registry build reads each traced torchlib function's domain off its opset, not off
    the signature parsed from its source: the two agree on every function."""
    from onnxscript._internal.values import TracedOnnxFunction
    from onnxscript.function_libs.torch_lib import registration

    traced = [f for entry in registration.default_registry.values()
              for f in (*entry.overloads, *entry.complex) if isinstance(f, TracedOnnxFunction)]
    assert len(traced) > 300
    assert [f.function_ir.domain for f in traced] == [f.opset.domain for f in traced]
    with from_torch._traced_domains_from_opset():
        assert [f.function_ir.domain for f in traced] == [f.opset.domain for f in traced]
        assert not hasattr(traced[0].function_ir, "graph")  # the cheap record
    assert hasattr(traced[0].function_ir, "graph")  # put back


def test_a_registry_built_with_domains_from_opsets_is_the_one_built_parsing():
    built = ONNXRegistry.__dict__["from_torchlib"].__func__
    parsing = built(ONNXRegistry, 18)
    with from_torch._traced_domains_from_opset():
        cheap = built(ONNXRegistry, 18)
    assert {t: [(m.onnx_function, m.signature) for m in metas]
            for t, metas in cheap.functions.items()} == {
        t: [(m.onnx_function, m.signature) for m in metas] for t, metas in parsing.functions.items()}


class _Mixed(torch.nn.Module):
    def forward(self, x):
        return (x.half() * 2).float() + torch.arange(4)  # casts, and an int64 tensor promoted


@pytest.mark.parametrize("module, skipped", [(Net(), True), (_Mixed(), False)])
def test_type_promotion_is_skipped_only_where_the_graph_has_one_dtype(module, skipped):
    """The exporter's type-promotion pass, which runs the graph again on fake tensors, is skipped
    where every tensor is of one dtype (it would cast nothing): the same ONNX, byte for byte."""
    from onnxflops.converters import single_trace

    checked = single_trace._one_tensor_dtype
    seen = []

    def exported(skip_allowed: bool) -> bytes:
        single_trace._one_tensor_dtype = (lambda g: seen.append(checked(g)) or seen[-1]) \
            if skip_allowed else (lambda g: False)
        try:
            torch.manual_seed(0)
            return from_torch.export_dynamo(module.eval(), (torch.randn(1, 3, 8, 8) if skipped
                                                            else torch.randn(2, 4),), ["x"], 18,
                                            keep_weights=True).SerializeToString()
        finally:
            single_trace._one_tensor_dtype = checked

    assert exported(True) == exported(False)
    assert seen == [skipped]
