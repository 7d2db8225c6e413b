"""The report of ResNet-50 and MobileNetV3-Large says in words why the latency ratio is not the
FLOPs ratio, naming depthwise convolutions, from the same numbers its JSON holds."""

from __future__ import annotations

import json
from html import escape

import pytest

from onnxflops.cli import main

pytest.importorskip("onnxruntime")
torchvision = pytest.importorskip("torchvision")

RESNET, MOBILENET = "torchvision.models:resnet50", "torchvision.models:mobilenet_v3_large"


def depthwise_macs(module) -> int:
    """Σ over the module's depthwise convolutions (groups = C_in > 1) of numel(Y)·kh·kw, from a
    forward pass on one 224² image (torch, independent of the export and the count)."""
    import torch

    macs = []

    def hook(conv, _inputs, output):
        macs.append(output.numel() * conv.kernel_size[0] * conv.kernel_size[1])

    for m in module.modules():
        if isinstance(m, torch.nn.Conv2d) and m.groups == m.in_channels > 1:
            m.register_forward_hook(hook)
    with torch.no_grad():
        module.eval()(torch.zeros(1, 3, 224, 224))
    return sum(macs)


def test_resnet50_against_mobilenet_v3_large_in_words(tmp_path, monkeypatch):
    monkeypatch.setenv("ONNXFLOPS_CACHE_DIR", str(tmp_path / "cache"))
    page, doc = tmp_path / "report.html", tmp_path / "report.json"
    assert main(["report", RESNET, MOBILENET, "--input", "x=1x3x224x224", "--runs", "5",
                 "--warmup", "2", "--profile-runs", "3", "--threads", "2", "--quick",
                 "-o", str(page), "--json", str(doc)]) == 0
    report = json.loads(doc.read_text())
    resnet, mobilenet = report["models"]
    fewer = resnet["flops"] / mobilenet["flops"]
    faster = resnet["latency_ms"]["median"] / mobilenet["latency_ms"]["median"]
    # 4.1 G against 0.22 G multiply-accumulates, as torchvision's own tables give them.
    assert 16 < fewer < 20
    depthwise = mobilenet["by_category"]["depthwise conv"]
    assert "depthwise conv" not in resnet["by_category"]
    # Rows of depthwise work are the depthwise convs (with the activation fused to them, a few
    # FLOPs per output beside 2·9 or 2·25; BatchNorm is folded at export), no pointwise or dense
    # conv among them. On the deployed graph a depthwise conv whose output tensor the export
    # renamed shares a row with the larger work after it, which names the row: most of the
    # depthwise work, not all, is in depthwise rows (35.8 M of 36.8 M FLOPs here).
    macs = depthwise_macs(torchvision.models.mobilenet_v3_large())
    assert 0.9 * 2 * macs <= depthwise["flops"] < 3 * macs

    # The words follow from the JSON's own timings, whichever way a loaded machine moved them
    # (on a quiet one MobileNetV3 runs at about half ResNet-50's rate; under CI's load one run
    # gave it 1.7×): no assertion here rests on a timing.
    pair = report["summary"][2]
    assert pair.startswith(f"{MOBILENET} has {fewer:.1f}× fewer FLOPs than {RESNET} and runs "
                           f"{faster:.1f}× faster")
    assert report["summary"][:2] == [" ".join(resnet["summary"]), " ".join(mobilenet["summary"])]
    assert f"<p>{escape(pair)}</p>" in page.read_text()
    rate = faster / fewer
    if abs(rate - 1) < 0.05:
        assert ", as its FLOPs predict: both run at about the same rate" in pair
        return
    share = f"{100 * rate:.0f}% of" if rate < 1 else f"{rate:.1f}×"
    assert f", because it runs at {share} {RESNET}'s FLOP/s (" in pair
    # The reasons: the categories whose share of MobileNetV3's time grew by 5 points or more over
    # ResNet-50's (else the one that grew most), largest growth first, at most three.
    before = {name: g["latency_share"] for name, g in resnet["by_category"].items()}
    growth = sorted(((g["latency_share"] - before.get(name, 0.0), name)
                     for name, g in mobilenet["by_category"].items()), reverse=True)
    named = [name for grew, name in growth if grew >= 0.05][:3] or \
        [name for grew, name in growth[:1] if grew > 0]
    assert pair.count(" of its time against ") == len(named)
    where = [pair.index(f"{name} takes ") for name in named]
    assert where == sorted(where)
    if "depthwise conv" in named:
        share = f"{100 * depthwise['latency_share']:.0f}%"
        assert f"depthwise conv takes {share} of its time against 0% in {RESNET}, " in pair
