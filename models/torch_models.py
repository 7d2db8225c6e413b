"""The PyTorch half of each reference pair (channels-first, as PyTorch writes them).

Each builder returns a fresh nn.Module; its twin of the same name is in models/keras_models.py.
"""

from __future__ import annotations

import torch
from torch import nn


class _Seed003(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 32, (4, 4), stride=(1, 2))
        self.gru = nn.GRU(32 * 127, 96, batch_first=True)
        self.dense = nn.Linear(96, 256)

    def forward(self, x):
        y = torch.relu(self.conv(x)).reshape(x.shape[0], 97, 32 * 127)
        y, _ = self.gru(y)
        return torch.sigmoid(self.dense(y))


def seed003_conv_gru_dense() -> nn.Module:
    """Conv2d(1, 32, 4×4, stride (1, 2)) → reshape → GRU(4064, 96) → Linear(96, 256)."""
    return _Seed003()


def seed001_input_only() -> nn.Module:
    return nn.Identity()


def seed001_dense_softmax() -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(32 * 32, 1), nn.Softmax(dim=-1))


def seed001_conv_dense_softmax() -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 1, 5, padding=2), nn.Flatten(), nn.Linear(32 * 32, 1),
                         nn.Softmax(dim=-1))


def seed001_conv3() -> nn.Module:
    return nn.Conv2d(1, 1, 3, padding=1)


def seed001_two_convs() -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.Conv2d(32, 1, 3, padding=1))


def seed002_conv_bn_relu() -> nn.Module:
    """Conv2d(3, 2, 7, stride 2, padding 3, no bias) → BatchNorm2d(2) → ReLU on 500×500."""
    return nn.Sequential(nn.Conv2d(3, 2, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(2),
                         nn.ReLU())


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU(),
                         nn.Linear(64, 10))


def lenet() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 5 * 5, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, 10))


def _conv_bn(c_in: int, c_out: int, kernel: int, groups: int = 1) -> list[nn.Module]:
    return [nn.Conv2d(c_in, c_out, kernel, padding=kernel // 2, groups=groups, bias=False),
            nn.BatchNorm2d(c_out)]


class _Residual(nn.Module):
    """body(x) + x, then an optional activation."""

    def __init__(self, body: nn.Module, after: nn.Module | None = None):
        super().__init__()
        self.body = body
        self.after = after or nn.Identity()

    def forward(self, x):
        return self.after(self.body(x) + x)


def resnet_bottleneck() -> nn.Module:
    """1×1 reduce → 3×3 → 1×1 expand, each with BatchNorm, plus the identity skip."""
    body = nn.Sequential(*_conv_bn(32, 8, 1), nn.ReLU(), *_conv_bn(8, 8, 3), nn.ReLU(),
                         *_conv_bn(8, 32, 1))
    return _Residual(body, nn.ReLU())


def mobilenet_v2_block() -> nn.Module:
    """Expand 1×1 (×6) → depthwise 3×3 → project 1×1, ReLU6, with the residual add."""
    body = nn.Sequential(*_conv_bn(8, 48, 1), nn.ReLU6(), *_conv_bn(48, 48, 3, groups=48),
                         nn.ReLU6(), *_conv_bn(48, 8, 1))
    return _Residual(body)


class _LastStep(nn.Module):
    """A recurrent stack over (batch, time, features) returning the last step's output."""

    def __init__(self, rnn: nn.Module):
        super().__init__()
        self.rnn = rnn

    def forward(self, x):
        y, _ = self.rnn(x)
        return y[:, -1]


def gru2() -> nn.Module:
    return _LastStep(nn.GRU(10, 16, num_layers=2, batch_first=True))


def lstm2() -> nn.Module:
    return _LastStep(nn.LSTM(10, 16, num_layers=2, batch_first=True))


class _EncoderLayer(nn.Module):
    """Post-norm encoder layer: MHA(2 heads) + Add + LayerNorm, GELU FFN + Add + LayerNorm."""

    def __init__(self, width: int = 32, heads: int = 2, hidden: int = 64):
        super().__init__()
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm1 = nn.LayerNorm(width)
        self.ff1 = nn.Linear(width, hidden)
        self.gelu = nn.GELU()
        self.ff2 = nn.Linear(hidden, width)
        self.norm2 = nn.LayerNorm(width)

    def forward(self, x):
        attended, _ = self.attention(x, x, x, need_weights=False)
        y = self.norm1(x + attended)
        return self.norm2(y + self.ff2(self.gelu(self.ff1(y))))


def transformer_encoder() -> nn.Module:
    return _EncoderLayer()


class _TextCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(1000, 32)
        self.conv = nn.Conv1d(32, 64, 5)
        self.classifier = nn.Linear(64, 4)

    def forward(self, tokens):
        y = torch.relu(self.conv(self.embedding(tokens).transpose(1, 2)))
        return self.classifier(y.amax(dim=2))


def text_cnn() -> nn.Module:
    return _TextCNN()


def upsampling_decoder() -> nn.Module:
    return nn.Sequential(
        nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
        nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(8, 3, 3, padding=1))
