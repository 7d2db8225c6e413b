"""Training FLOPs of torch models: the contractions' backward counts equal what
torch.utils.flop_counter.FlopCounterMode counts on loss.backward(). (Kept apart from
test_training.py, whose tests need no framework and run on every Python version.)"""

from __future__ import annotations

import io

import onnx
import pytest

import onnxflops

torch = pytest.importorskip("torch")
nn = torch.nn

from onnxflops.models.resnet50 import Bottleneck, ResNet50
from onnxflops.models.torch_models import transformer_encoder


def torch_flops(module, x) -> tuple[int, int]:
    """FlopCounterMode's forward and loss.backward() counts, attention run as plain matmuls."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    with torch.enable_grad(), sdpa_kernel(SDPBackend.MATH):
        with FlopCounterMode(display=False) as forward:
            loss = module(x).sum()
        with FlopCounterMode(display=False) as backward:
            loss.backward()
    return forward.get_total_flops(), backward.get_total_flops()


def legacy_export(module, x, **kwargs) -> onnx.ModelProto:
    buffer = io.BytesIO()
    torch.onnx.export(module, (x,), buffer, dynamo=False, input_names=["x"], **kwargs)
    return onnx.load_from_string(buffer.getvalue())


class SmallResNet(nn.Module):
    """A ResNet stem, two bottlenecks (one with a strided downsample) and the classifier head."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 7, stride=2, padding=3, bias=False),
                                  nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(3, 2, padding=1))
        self.blocks = nn.Sequential(Bottleneck(16, 8, stride=2), Bottleneck(32, 8))
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))


def _seeded(factory):
    torch.manual_seed(0)
    module = factory().eval()
    with torch.no_grad():  # distinct values: the legacy exporter merges identical initializers
        for p in module.parameters():
            p.normal_()
    return module


@pytest.mark.parametrize("factory, shape, exporter", [
    (SmallResNet, (2, 3, 32, 32), "legacy"),
    (transformer_encoder, (2, 12, 32), "dynamo"),
], ids=["resnet-style cnn", "transformer encoder layer"])
def test_contraction_backward_is_what_flop_counter_mode_counts(factory, shape, exporter):
    module = _seeded(factory)
    x = torch.randn(*shape)
    if exporter == "legacy":
        proto = legacy_export(module, x)
    else:
        proto = torch.onnx.export(module, (x,), dynamo=True, optimize=False,
                                  verbose=False).model_proto
    report = onnxflops.count(proto, training=True)
    forward, backward = torch_flops(module, x)
    assert not report.uncosted
    assert 2 * report.total.macs == forward
    assert 2 * report.total.backward_macs == backward
    assert backward < 2 * forward  # the model's input needs no gradient


def test_seed_004_resnet50_backward_flops():
    """torchvision's ResNet-50 at 1×3×224×224: forward 8,178,368,512 FLOPs of contractions,
    backward 16,120,709,120 (ratio 1.971: the first conv computes no input gradient)."""
    torch.manual_seed(0)
    # Exported small with dynamic spatial dims (fast), counted at 224×224.
    proto = legacy_export(ResNet50().eval(), torch.randn(1, 3, 64, 64), do_constant_folding=False,
                          dynamic_axes={"x": {2: "height", 3: "width"}})
    report = onnxflops.count(proto, inputs={"x": (1, 3, 224, 224)}, training=True)
    assert 2 * report.total.macs == 8_178_368_512
    assert 2 * report.total.backward_macs == 16_120_709_120
    assert report.total.backward_macs / report.total.macs == pytest.approx(1.971, abs=5e-4)
    # The same numbers from FlopCounterMode, on shapes alone (meta tensors: no arithmetic runs).
    with torch.device("meta"):
        assert torch_flops(ResNet50(), torch.randn(1, 3, 224, 224)) == (
            8_178_368_512, 16_120_709_120)
