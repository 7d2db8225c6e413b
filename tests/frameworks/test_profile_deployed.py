"""profile runs the graph torch's own export gives a user, its times joined to the counted graph."""

from __future__ import annotations

import pytest

import onnxflops
from onnxflops.profiling.measure import FOLDED_AT_EXPORT

QUICK = dict(runs=3, warmup=1, profile_runs=2, threads=1, ceilings=False)


def _conv_bn():
    import torch

    class ConvBN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 8, 3, bias=False)
            self.bn = torch.nn.BatchNorm2d(8)
            self.head = torch.nn.Conv2d(8, 4, 1)

        def forward(self, x):
            return self.head(torch.relu(self.bn(self.conv(x))))

    torch.manual_seed(0)
    module = ConvBN().eval()
    with torch.no_grad():  # statistics of a trained model: folding them changes the weights
        module.bn.running_mean.uniform_(-1, 1)
        module.bn.running_var.uniform_(0.5, 2)
    return module


def _executed_ops(profile) -> str:
    return " ".join(n.op_type for n in profile.nodes)


def _every_flop_once(profile) -> float:
    return sum(n.flops for n in profile.nodes) + sum(u.flops for u in profile.unattributed)


def test_a_conv_without_bias_and_batchnorm_runs_folded_as_deployed():
    module = _conv_bn()
    counted = onnxflops.count(module, inputs={"x": (1, 3, 8, 8)})
    prof = onnxflops.profile(module, inputs={"x": (1, 3, 8, 8)}, **QUICK)
    # The deployed graph has the BatchNorm folded into the conv and no zero bias built at run
    # time (Shape → Expand → CastLike → Expand): neither runs.
    assert "BatchNormalization" not in _executed_ops(prof)
    assert "Expand" not in _executed_ops(prof) and "Cast" not in _executed_ops(prof)
    # The counts are the structure graph's, unchanged.
    assert prof.flops == counted.total.flops
    # conv 3→8, 3×3 on 8×8 (6×6 out, no bias) with its ReLU; the 1×1 head with its bias.
    rows = {tuple(n.original_nodes): n for n in prof.nodes}
    conv = next(n for names, n in rows.items() if "node_conv2d" in names)
    assert conv.flops == 2 * 8 * 36 * 27 + 8 * 36
    head = next(n for names, n in rows.items() if "node_conv2d_1" in names)
    assert head.flops == 2 * 4 * 36 * 8 + 4 * 36
    # The BatchNorm's counted work is listed as folded at export, its FLOPs the count's.
    bn = next(e for e in counted.nodes if e.op_type == "BatchNormalization")
    folded = [u for u in prof.unattributed if u.reason == FOLDED_AT_EXPORT and u.flops]
    assert [(u.name, u.flops) for u in folded] == [(bn.name, bn.flops)] and bn.flops > 0
    # Every counted FLOP is on exactly one executed row or listed as folded.
    assert _every_flop_once(prof) == counted.total.flops
    assert any("folded them" in w for w in prof.warnings)


def test_graph_counted_runs_the_counted_graph_as_before():
    module = _conv_bn()
    prof = onnxflops.profile(module, inputs={"x": (1, 3, 8, 8)}, graph="counted", **QUICK)
    assert "BatchNormalization" in _executed_ops(prof) and "Expand" in _executed_ops(prof)
    assert not prof.unattributed
    assert sum(n.flops for n in prof.nodes) == onnxflops.count(
        module, inputs={"x": (1, 3, 8, 8)}).total.flops


def test_the_legacy_exporter_deploys_with_its_default_folding():
    module = _conv_bn()
    prof = onnxflops.profile(module, inputs=((1, 3, 8, 8),), exporter="legacy", **QUICK)
    assert "BatchNormalization" not in _executed_ops(prof)
    assert _every_flop_once(prof) == onnxflops.count(module, inputs=((1, 3, 8, 8),),
                                                     exporter="legacy").total.flops


def test_an_unknown_graph_is_one_clear_line():
    with pytest.raises(onnxflops.OnnxFlopsError, match="unknown graph 'fused'"):
        onnxflops.profile(_conv_bn(), inputs=((1, 3, 8, 8),), graph="fused", **QUICK)


def _bert_tiny():
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=37,
                        max_position_embeddings=128, attn_implementation="eager")
    return BertModel(config).eval()


def test_bert_profiles_from_a_long_tensor_by_name_and_in_order():
    import torch

    bert = _bert_tiny()
    ids = torch.randint(0, 100, (1, 64), dtype=torch.long)
    counted = onnxflops.count(bert, inputs={"input_ids": ids})
    by_name = onnxflops.profile(bert, inputs={"input_ids": ids}, **QUICK)
    in_order = onnxflops.profile(bert, inputs=(ids,), **QUICK)
    for prof in (by_name, in_order):
        assert prof.flops == counted.total.flops
        assert _every_flop_once(prof) == counted.total.flops
        assert prof.latency.median > 0
    # The matmuls (Q, K, V, O and the MLP of 2 layers over 64 tokens at least) all ran.
    dense = 2 * 64 * 2 * (4 * 32 * 32 + 2 * 32 * 37)
    assert sum(e.flops for e in counted.nodes if e.op_type in ("MatMul", "Gemm")) >= dense
    assert not [u for u in by_name.unattributed if u.op_type in ("MatMul", "Gemm")]


def test_where_the_framework_export_fails_the_counted_graph_runs_with_a_warning(monkeypatch):
    from onnxflops.converters import from_torch

    def fails(*args, **kwargs):
        raise onnxflops.OnnxFlopsError("PyTorch model 'ConvBN': the dynamo exporter cannot "
                                       "convert it (no)")

    monkeypatch.setattr(from_torch, "torch_to_deployed_onnx", fails)
    with pytest.warns(UserWarning, match="running the counted graph instead"):
        prof = onnxflops.profile(_conv_bn(), inputs=((1, 3, 8, 8),), **QUICK)
    assert "BatchNormalization" in _executed_ops(prof) and not prof.unattributed


def test_a_complex_stft_istft_separator_profiles_as_deployed(recwarn):
    """torch's own export of a model on complex tensors takes the complex translations the count
    does, and its int32 overlap-add indices are cast as the counted graph's are: onnxruntime runs
    the deployed graph, not the counted one in its place."""
    import torch

    from test_flop_counter_parity import MaskedSpectrogramSeparator

    module, inputs = MaskedSpectrogramSeparator().eval(), {"wave": torch.randn(1, 1024)}
    prof = onnxflops.profile(module, inputs=inputs, **QUICK)
    assert not [w for w in recwarn if "counted graph instead" in str(w.message)]
    # the transforms and the signal's overlap-add run (the window's envelope is folded at export)
    assert {"STFT", "DFT", "ScatterND"} <= set(_executed_ops(prof).replace("+", " ").split())
    assert _every_flop_once(prof) == onnxflops.count(module, inputs).total.flops
