"""Real library models count exactly, called the way their users call them.

Each model of `onnxflops.models.zoo` (HF transformers, timm, keras-hub, Keras Applications, torchvision; tiny
configs, random init, nothing downloaded) is counted from its own framework and checked against
that framework: MACs = FlopCounterMode / 2 with attention on the math backend, params = its own
parameter count, and no node uncosted. A keras-hub model and its HF twin agree on MACs and params.
"""

from __future__ import annotations

import functools
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
pytest.importorskip("torch")
from onnxflops.models.zoo import ZOO, oracle, zoo_model  # noqa: E402

import onnxflops  # noqa: E402

pytestmark = pytest.mark.slow
_LIBRARIES = {"hf": "transformers", "timm": "timm", "keras_hub": "keras_hub",
              "torchvision": "torchvision", "keras": "keras"}


@functools.cache
def counted(name: str) -> tuple[onnxflops.Report, int | None, int]:
    """The strict count of a zoo model, and what its framework says (MACs, params)."""
    model = zoo_model(name)
    library = next(lib for prefix, lib in _LIBRARIES.items() if name.startswith(prefix + "_"))
    pytest.importorskip(library)
    built, inputs = model.build(), model.inputs()
    want_macs, want_params = oracle(model, built, inputs)
    return onnxflops.count(built, inputs or None, strict=True), want_macs, want_params


@pytest.mark.parametrize("name", [m.name for m in ZOO if m.framework == "torch"])
def test_a_torch_model_counts_what_flop_counter_mode_counts(name):
    report, macs, params = counted(name)
    assert report.total.macs == macs
    assert report.total.params == params


@pytest.mark.parametrize("name", [m.name for m in ZOO if m.framework == "keras"])
def test_a_keras_model_counts_its_params_and_its_torch_twins_macs(name):
    report, _, params = counted(name)
    assert report.total.params == params
    twin, _, twin_params = counted(zoo_model(name).twin)
    assert report.total.macs == twin.total.macs
    assert report.total.params == twin_params


@pytest.mark.parametrize("name", ["keras_hub_gpt2", "keras_hub_llama"])
def test_keras_hub_and_hf_do_the_same_flops_where_the_math_is_the_same(name):
    """Keras masks scores with tf.where (lowered to arithmetic; canonical: one add per score, as
    HF's mask add); torch's ONNX translation of HF's attention guards each probability against
    NaN, the exporter's guard, read as the softmax (canonical). HF Llama computes its rotary tables from the inv_freq buffer on each forward (foldable work):
    16 positions × 8 frequencies, then cos and sin of the 16×16 table, each times the attention
    scaling; the Keras conversion has them folded to constants by TensorFlow's Grappler."""
    report = counted(name)[0]
    twin = counted(zoo_model(name).twin)[0]
    rotary = 16 * 8 + 4 * 16 * 16 if name == "keras_hub_llama" else 0
    assert twin.foldable.flops == rotary
    assert "IsNaN" not in twin.by_op_type()
    assert report.total.flops == twin.total.flops - rotary


@pytest.mark.parametrize("name, exporter, fold", [
    ("timm_swin", "dynamo", False), ("hf_llama", "dynamo", False), ("hf_llama", "dynamo", True),
    ("hf_t5", "legacy", False)])
def test_a_plain_torch_export_counts_the_frameworks_params(name, exporter, fold, tmp_path):
    """torch.onnx.export called by the user writes no record of which initializers are
    parameters: the graph tells Swin's shifted-window masks, Llama's rotary inverse frequencies
    (or, constants folded, its cos and sin tables) and T5's zero position bias from weights."""
    import torch

    model = zoo_model(name)
    built, inputs = model.build().eval(), model.inputs()
    _, params = oracle(model, built, inputs)
    with torch.no_grad():  # the legacy exporter merges weights that are equal, as fresh norms are
        for p in built.parameters():
            p.normal_()
    names = list(inputs)

    class Positional(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = built

        def forward(self, *args):
            out = self.inner(**dict(zip(names, args)))
            return out if isinstance(out, torch.Tensor) else out.last_hidden_state

    path = tmp_path / f"{name}.onnx"
    options = dict(optimize=fold) if exporter == "dynamo" else dict(do_constant_folding=fold)
    torch.onnx.export(Positional(), tuple(inputs.values()), str(path), input_names=names,
                      dynamo=exporter == "dynamo", **options)
    report = onnxflops.count(path, strict=True)
    assert report.total.params == params
    assert report.total.buffers > 0  # the masks, the frequencies, the bias: buffers, not params
