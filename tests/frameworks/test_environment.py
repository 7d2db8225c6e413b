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
    done = run("-m", "onnxflops.cli", "count", "torchvision.models:mobilenet_v2",
               "--input", "x=1x3x64x64", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    # torch's own FlopCounterMode, in a process of its own as a user's script: 2 FLOPs per MAC.
    oracle = run("-c", "import torch, torchvision\n"
                       "from torch.utils.flop_counter import FlopCounterMode\n"
                       "model = torchvision.models.mobilenet_v2().eval()\n"
                       "with torch.enable_grad(), FlopCounterMode(display=False) as counter:\n"
                       "    model(torch.randn(1, 3, 64, 64))\n"
                       "print(counter.get_total_flops() // 2)")
    assert oracle.returncode == 0, oracle.stderr[-2000:]
    assert json.loads(done.stdout)["total"]["macs"] == int(oracle.stdout)


def test_torchvision_and_timm_then_tensorflow_share_a_process():
    """CUDA builds of torch ship triton, which crashes the process when loaded after TensorFlow
    (both bundle LLVM). A user's script that imports tensorflow then torchvision meets it; the
    getting-started page says to import torch's side first. This records which it is here."""
    pytest.importorskip("tensorflow")
    first = run("-c", "import torchvision, timm\nimport tensorflow\nprint('ok')")
    assert first.returncode == 0 and first.stdout.split() == ["ok"], first.stderr[-2000:]
