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


class RelativePositionProjected(nn.Module):
    """Scores against a learned relative-position table projected through the query weight: the
    projection reads weights alone and runs on every forward."""

    def __init__(self):
        super().__init__()
        self.q = nn.Linear(32, 32)
        self.table = nn.Parameter(torch.zeros(9, 32))

    def forward(self, x):
        return self.q(x) @ self.q(self.table).T


class LearnedQueries(nn.Module):
    """A detector decoder's learned object queries projected by a Linear, then attended to."""

    def __init__(self):
        super().__init__()
        self.queries = nn.Parameter(torch.zeros(6, 32))
        self.proj = nn.Linear(32, 32)

    def forward(self, x):
        return torch.softmax(self.proj(self.queries) @ x.transpose(1, 2), -1) @ x


class WeightNormConv(nn.Module):
    """weight_norm: the kernel g·v/‖v‖ is recomputed on each call."""

    def __init__(self):
        super().__init__()
        self.conv = nn.utils.parametrizations.weight_norm(nn.Conv2d(3, 8, 3, padding=1))

    def forward(self, x):
        return self.conv(x)


CASES = {
    "mlp": (Mlp, (3, 64)),
    "cnn": (StridedGroupedCnn, (2, 3, 32, 56)),
    "gru": (GruModel, (2, 7, 24)),
    "transformer": (TransformerLayer, (2, 12, 64)),
    "relative_position": (RelativePositionProjected, (2, 5, 32)),
    "learned_queries": (LearnedQueries, (2, 5, 32)),
    "weight_norm": (WeightNormConv, (1, 3, 8, 8)),
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
    copies = _TRANSPOSED_COPIES.get((case, exporter), 0)
    assert report.total.params == sum(p.numel() for p in module.parameters()) + copies


# The legacy exporter's constant folding stores q.weight twice, as it is (for the Gemm on the
# table) and transposed (for the MatMul on x): a plain file cannot tell they are one parameter.
_TRANSPOSED_COPIES = {("relative_position", "legacy"): 32 * 32}


class SineTableProjected(nn.Module):
    """A detector encoder's sin-cos position table, rebuilt from literals in every forward
    (arange → two 400×1 @ 1×64 outer products → sin/cos → concat), added to the features, then a
    Linear: FlopCounterMode counts the table's products as it counts the Linear."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(128, 16)

    def forward(self, x):
        rows = torch.arange(400, dtype=torch.float32).unsqueeze(1)
        frequencies = 1.0 / 10000 ** (torch.arange(64, dtype=torch.float32) / 64)
        sines = (rows @ frequencies.unsqueeze(0)).sin()
        cosines = ((rows + 0.5) @ frequencies.unsqueeze(0)).cos()
        return self.proj(x + torch.cat([sines, cosines], dim=1))


def test_a_table_of_literals_projected_by_products_counts_what_flop_counter_mode_counts():
    # The legacy exporter traces the table to a stored constant (no work left in the file to
    # count); torch.export keeps its ops, which run in every forward.
    module, x = SineTableProjected().eval(), torch.randn(1, 400, 128)
    report = onnxflops.count(module, {"x": x})
    table = 2 * 400 * 1 * 64  # 51,200 MACs
    assert report.complete and report.foldable.macs == table
    assert report.total.macs == table + 400 * 128 * 16 == 870_400
    assert 2 * report.total.macs == flop_counter_flops(module, x)


class ScatterIntoGruCell(nn.Module):
    """A message-passing step as graph libraries write it: messages scattered into as many nodes
    as the edges name, int(index.max()) + 1 (a size torch.export cannot read without the data),
    then a GRUCell updates each node from its own features."""

    def __init__(self):
        super().__init__()
        self.message = nn.Linear(16, 32)
        self.own = nn.Linear(16, 32)
        self.gru = nn.GRUCell(32, 32)

    def forward(self, x, edge_index):
        source, target = edge_index[0], edge_index[1]
        messages = self.message(x[source])
        nodes = int(target.max()) + 1
        summed = messages.new_zeros((nodes, 32)).index_add(0, target, messages)
        return self.gru(summed, self.own(x[:nodes]))


def test_a_scatter_sized_by_the_data_converts_at_the_example_values_and_says_so():
    import warnings

    from onnxflops.errors import DataPathWarning

    module = ScatterIntoGruCell().eval()
    x = torch.randn(10, 16)
    edge_index = torch.tensor([[0, 1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 4, 5, 6, 7, 7]])  # 8 nodes
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = onnxflops.count(module, {"x": x, "edge_index": edge_index})
    said = [str(w.message) for w in caught]
    assert any(issubclass(w.category, DataPathWarning) and "example inputs' values" in
               str(w.message) for w in caught), said
    assert not any("legacy exporter instead" in s for s in said), said  # torch.export's graph
    edges, nodes = 8, 8
    # messages E·16·32, own N·16·32, the GRUCell's two products N·32·3·32 each
    macs = edges * 16 * 32 + nodes * 16 * 32 + 2 * nodes * 32 * 96
    assert report.complete and report.total.macs == macs == 57_344
    assert 2 * report.total.macs == flop_counter_flops(module, x, edge_index)


class PaddedSpectrogramConv(nn.Module):
    """A separator's front: a complex STFT, padded along its frames (a pad of a complex tensor,
    which torchlib does not translate), its magnitude into a Conv1d."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(33, 33, 3, padding=1)
        self.register_buffer("window", torch.hann_window(64))

    def forward(self, wave):
        spectrum = torch.stft(wave, 64, 16, window=self.window, return_complex=True)
        return self.conv(nn.functional.pad(spectrum, (0, 1)).abs())


def test_a_padded_complex_spectrogram_counts_what_flop_counter_mode_counts():
    module, wave = PaddedSpectrogramConv().eval(), torch.randn(1, 1024)
    report = onnxflops.count(module, {"wave": wave})
    frames = (1024 + 64 - 64) // 16 + 1  # centred: 32 samples padded each side; 65 frames
    assert report.complete and report.total.macs == 33 * 33 * 3 * (frames + 1) == 215_622
    assert 2 * report.total.macs == flop_counter_flops(module, wave)
    # the STFT: per frame an FFT of 64 (5·64·log2 64) and the window's 64 multiplies
    stft = next(n for n in report.nodes if n.op_type == "STFT")
    assert stft.flops == frames * (5 * 64 * 6 + 64) == 128_960


class MaskedSpectrogramSeparator(nn.Module):
    """A source separator whole: a complex STFT, padded along its frames, its magnitude through
    a Conv1d over the frequency bins as channels, back to a complex spectrogram with the input's
    phase (polar), and an ISTFT back to a wave (torch's istft: an inverse one-sided FFT per frame
    and an overlap-add whose indices are int32)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(33, 33, 3)
        self.register_buffer("window", torch.hann_window(64))

    def forward(self, wave):
        spectrum = torch.stft(wave, 64, 16, window=self.window, return_complex=True)
        magnitude = torch.relu(self.conv(nn.functional.pad(spectrum, (1, 1)).abs()))
        separated = torch.polar(magnitude, spectrum.angle())
        return torch.istft(separated, 64, 16, window=self.window, length=1024)


@pytest.mark.slow
def test_a_complex_stft_conv_istft_separator_counts_completely():
    module, wave = MaskedSpectrogramSeparator().eval(), torch.randn(1, 1024)
    report = onnxflops.count(module, {"wave": wave})
    frames = 1024 // 16 + 1  # centred: 32 samples padded each side; 65 frames
    # the Conv1d: 65 + 2 padded frames, kernel 3 unpadded, back to 65 frames
    assert report.complete and report.total.macs == 33 * 33 * 3 * frames == 212_355
    # FlopCounterMode counts the convolution alone: it has no formula for the FFTs (aten's
    # _fft_r2c and _fft_c2r), nor for the elementwise work (abs, angle, polar, the windows, the
    # overlap-add)
    assert 2 * report.total.macs == flop_counter_flops(module, wave)
    transforms = {n.op_type: n.flops for n in report.nodes if n.op_type in ("STFT", "DFT")}
    fft64 = 5 * 64 * 6  # signal.py's 5·N·log2 N for one FFT of N = 64
    # STFT: per frame an FFT and the window's 64 multiplies; ISTFT: per frame an inverse FFT of
    # dft_length 64 (from the 33 one-sided bins)
    assert transforms == {"STFT": frames * (fft64 + 64), "DFT": frames * fft64}
    assert transforms == {"STFT": 128_960, "DFT": 124_800}
    # the overlap-add: each frame's 64 samples added into the wave, and the window's squares
    # into its envelope (ScatterND, reduction add)
    overlap_adds = [n.flops for n in report.nodes if n.op_type == "ScatterND"]
    assert overlap_adds == [frames * 64, frames * 64]
