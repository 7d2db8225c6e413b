"""2·MACs equals torch.utils.flop_counter.FlopCounterMode on the same torch model.

FlopCounterMode runs with grad enabled so that torch's fused inference fast paths (e.g. the
TransformerEncoderLayer fast path) do not hide matmuls from it.
"""

from __future__ import annotations

import pytest

import onnxflops
from helpers import flop_counter_flops

torch = pytest.importorskip("torch")
nn = torch.nn


def exported(module, inputs, tmp_path, exporter: str):
    if exporter == "legacy":
        path = tmp_path / "model.onnx"
        torch.onnx.export(module, inputs, str(path), dynamo=False)
        return str(path)
    return torch.onnx.export(module, inputs, dynamo=True, optimize=False, verbose=False).model_proto


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 32), nn.Tanh(),
                                    nn.Linear(32, 10, bias=False))

    def forward(self, x):
        return self.layers(x)


class StridedGroupedCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 5, stride=2, padding=2)
        self.grouped = nn.Conv2d(16, 32, 3, padding=2, dilation=2, groups=4)
        self.depthwise = nn.Conv2d(32, 32, 3, stride=(2, 1), padding=(1, 0), groups=32,
                                   bias=False)
        self.pointwise = nn.Conv2d(32, 8, 1)
        self.up = nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1)
        self.head = nn.Linear(4 * 16 * 52, 5)

    def forward(self, x):
        x = torch.relu(self.stem(x))
        x = torch.relu(self.grouped(x))
        x = self.pointwise(self.depthwise(x))
        x = self.up(x)
        return self.head(torch.flatten(x, 1))


class GruModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(24, 32, num_layers=2, batch_first=True)
        self.out = nn.Linear(32, 6)

    def forward(self, x):
        y, _ = self.gru(x)
        return self.out(y)


class TransformerLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                                dropout=0.0, batch_first=True, activation="gelu")

    def forward(self, x):
        return self.layer(x, is_causal=False)


CASES = {
    "mlp": (Mlp, (3, 64)),
    "cnn": (StridedGroupedCnn, (2, 3, 32, 56)),
    "gru": (GruModel, (2, 7, 24)),
    "transformer": (TransformerLayer, (2, 12, 64)),
}


@pytest.mark.parametrize("exporter", ["legacy", "dynamo"])
@pytest.mark.parametrize("case", list(CASES))
def test_twice_the_macs_is_what_flop_counter_mode_counts(case, exporter, tmp_path):
    factory, shape = CASES[case]
    torch.manual_seed(0)
    module = factory().eval()
    with torch.no_grad():  # distinct values: the legacy exporter merges identical initializers
        for p in module.parameters():
            p.normal_()
    x = torch.randn(*shape)
    report = onnxflops.count(exported(module, (x,), tmp_path, exporter))
    assert not report.uncosted
    assert 2 * report.total.macs == flop_counter_flops(module, x)
    assert report.total.params == sum(p.numel() for p in module.parameters())
