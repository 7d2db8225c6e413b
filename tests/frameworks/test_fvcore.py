"""`--convention fvcore` against fvcore's own FlopCountAnalysis, on models whose every op fvcore
prices or skips by design (no op it reports as unsupported and would have priced).

fvcore traces the torch model with TorchScript; onnxflops counts the ONNX that torch.export
writes. Equal totals mean every per-op figure agrees. Numbers seen (fvcore 0.1.5.post20221221):
resnet18 at 1×3×224×224 1,819,065,856; vit_tiny_patch16_224 (timm, unfused attention)
1,258,411,200.
"""

from __future__ import annotations

import pytest

import onnxflops

torch = pytest.importorskip("torch")
fvcore_nn = pytest.importorskip("fvcore.nn")
nn = torch.nn


def fvcore_total(module, shape) -> int:
    analysis = fvcore_nn.FlopCountAnalysis(module.eval(), (torch.randn(*shape),))
    analysis.unsupported_ops_warnings(False)
    analysis.uncalled_modules_warnings(False)
    return analysis.total()


def ours(module, shape) -> int:
    report = onnxflops.count(module, inputs=(shape,), convention="fvcore", strict=True)
    return report.total.flops


class EveryRule(nn.Module):
    """One op for each of fvcore's handles: conv, transposed conv, batch norm (eval), group,
    instance and layer norm, nearest and bilinear upsampling, adaptive average pooling, linear,
    matmul, bmm, einsum; and ops fvcore skips by design (relu, add, softmax, sum)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.gn = nn.GroupNorm(2, 8)
        self.inorm = nn.InstanceNorm2d(8, affine=True)
        self.up = nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.nearest = nn.Upsample(scale_factor=2, mode="nearest")
        self.bilinear = nn.Upsample(scale_factor=0.5, mode="bilinear")
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.ln = nn.LayerNorm(16)
        self.fc = nn.Linear(16, 16)

    def forward(self, x):  # x: 1×3×16×16
        x = torch.relu(self.bn(self.conv(x)))
        x = self.inorm(self.gn(x)) + x
        x = self.bilinear(self.nearest(self.up(x)))  # 1×4×32×32
        pooled = self.pool(x).flatten(1)  # 1×4
        tokens = self.ln(x.reshape(1, 256, 16))
        h = self.fc(tokens)  # 1×256×16
        scores = torch.softmax(torch.matmul(h, h.transpose(1, 2)), -1)  # 1×256×256
        mixed = torch.bmm(scores, h)  # 1×256×16
        return torch.einsum("bij,bjk->bik", mixed, h.transpose(1, 2)).sum() + pooled.sum()


def test_a_model_with_each_of_fvcores_rules():
    module = EveryRule()
    assert ours(module, (1, 3, 16, 16)) == fvcore_total(module, (1, 3, 16, 16))


def test_torchvision_resnet18_as_fvcore_counts_it():
    torchvision = pytest.importorskip("torchvision")
    module = torchvision.models.resnet18()
    # conv 1,813,561,344 + batch norm 2·2,483,712 + adaptive pool 25,088 + fc 512,000
    assert fvcore_total(module, (1, 3, 224, 224)) == 1_819_065_856
    assert ours(module, (1, 3, 224, 224)) == 1_819_065_856


def test_a_timm_vit_as_fvcore_counts_it():
    timm = pytest.importorskip("timm")
    fused = timm.layers.use_fused_attn()
    timm.layers.set_fused_attn(False)  # fvcore prices q·kᵀ and attn·v only as plain matmuls
    try:
        module = timm.create_model("vit_tiny_patch16_224")
    finally:
        timm.layers.set_fused_attn(fused)
    expected = fvcore_total(module, (1, 3, 224, 224))
    assert expected == 1_258_411_200
    assert ours(module, (1, 3, 224, 224)) == expected
