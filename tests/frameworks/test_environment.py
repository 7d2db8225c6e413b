"""The environment the README's install line builds works for a user's own script, not only for
onnxflops: torchvision, timm and transformers import side by side (torch and torchvision from one
build, constraints/cpu.txt), and a torchvision factory spec counts. Each runs in a fresh process,
as a user's script would, with no help from onnxflops.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import onnxflops
from helpers import flop_counter_flops

# This checkout's onnxflops, whatever the working directory.
ENV = {**os.environ, "PYTHONPATH": str(Path(onnxflops.__file__).parents[1])}


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, timeout=600,
                          env=ENV)


def test_a_users_script_imports_torchvision_timm_and_transformers():
    done = run("-c", "import torchvision, timm, transformers\n"
                     "from transformers import BertModel\n"
                     "import torchvision.ops\n"
                     "print(torchvision.ops.nms.__name__, timm.__name__, BertModel.__name__)")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["nms", "timm", "BertModel"]


def test_a_torchvision_factory_spec_counts():
    torch = pytest.importorskip("torch")
    torchvision = pytest.importorskip("torchvision")
    done = run("-m", "onnxflops.cli", "count", "torchvision.models:mobilenet_v2",
               "--input", "x=1x3x64x64", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    # torch's own FlopCounterMode counts 2 FLOPs per MAC of the same model and input.
    module = torchvision.models.mobilenet_v2().eval()
    expected = flop_counter_flops(module, torch.randn(1, 3, 64, 64)) // 2
    assert json.loads(done.stdout)["total"]["macs"] == expected
