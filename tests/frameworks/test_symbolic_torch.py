"""Symbolic dims on models exported from torch: the totals are formulas in the dynamic dims that
agree with the counts made with those dims bound. (Kept apart from test_symbolic.py, whose tests
need no framework and run on every Python version.)"""

from __future__ import annotations

import io

import onnx
import pytest
import sympy

from helpers import assert_agrees_with_bound_counts

torch = pytest.importorskip("torch")

batch, seq, height, width = sympy.symbols("batch seq height width", integer=True, positive=True)

from onnxflops.models.resnet50 import ResNet50
from onnxflops.models.torch_models import transformer_encoder


@pytest.fixture(scope="module")
def encoder_layer(tmp_path_factory):
    """An encoder layer (width 32, 2 heads, feed-forward 64) with batch and sequence dynamic."""
    torch.manual_seed(0)
    dims = {0: torch.export.Dim("batch"), 1: torch.export.Dim("seq")}
    program = torch.onnx.export(transformer_encoder().eval(), (torch.randn(2, 12, 32),),
                                dynamo=True, optimize=False, verbose=False,
                                dynamic_shapes=(dims,))
    path = tmp_path_factory.mktemp("symbolic") / "encoder_layer.onnx"
    onnx.save(program.model_proto, path)
    return str(path)


def test_transformer_layer_flops_are_a_polynomial_in_batch_and_seq(encoder_layer):
    report = assert_agrees_with_bound_counts(
        encoder_layer, lambda batch, seq: {"x": (batch, seq, 32)},
        [dict(batch=1, seq=1), dict(batch=2, seq=12), dict(batch=3, seq=7),
         dict(batch=5, seq=128)])
    # Per sequence: q·kᵀ and attention·v are seq²·32 MACs each; the projections (4·32²) and the
    # feed-forward (2·32·64) are seq·8,192 MACs.
    assert report.total.macs == 64 * batch * seq**2 + 8_192 * batch * seq
    flops = sympy.Poly(report.total.flops, batch, seq)
    assert flops.degree(seq) == 2 and flops.degree(batch) == 1
    assert report.total.params == 4 * 32 * 32 + 4 * 32 + 2 * 32 * 64 + 64 + 32 + 4 * 32


def test_resnet50_counts_as_a_formula_in_batch_height_and_width():
    torch.manual_seed(0)
    buffer = io.BytesIO()
    torch.onnx.export(ResNet50().eval(), (torch.randn(1, 3, 64, 64),), buffer, dynamo=False,
                      do_constant_folding=False, input_names=["x"],
                      dynamic_axes={"x": {0: "batch", 2: "height", 3: "width"}})
    proto = onnx.load_from_string(buffer.getvalue())
    report = assert_agrees_with_bound_counts(
        proto, lambda batch, height, width: {"x": (batch, 3, height, width)},
        [dict(batch=1, height=224, width=224), dict(batch=2, height=97, width=131)])
    assert 2 * report.total.macs.subs({batch: 1, height: 224, width: 224}) == 8_178_368_512
