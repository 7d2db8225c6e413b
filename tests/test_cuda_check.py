"""bench/cuda_check.sh and its python part, on a machine without a GPU: the script parses, says
in one line that there is no GPU (exit 2, no traceback), maps GPU names to the hardware table,
and its --dry-run runs every step (ceilings, two profiles, a Llama against llm's estimate) on
the CPU."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "bench" / "cuda_check.sh"


def _check_module():
    spec = importlib.util.spec_from_file_location("cuda_check", ROOT / "bench" / "cuda_check.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["cuda_check"] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_script_parses():
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a GPU may be here: it would "
                                                                   "install and run")
def test_without_a_gpu_the_script_says_so_in_one_line():
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=60,
                          cwd=ROOT)
    assert done.returncode == 2
    assert done.stdout == "" and done.stderr.count("\n") == 1
    assert done.stderr.startswith("cuda_check: error: no NVIDIA GPU here")
    wrong = subprocess.run(["bash", str(SCRIPT), "--cpu"], capture_output=True, text=True,
                           timeout=60, cwd=ROOT)
    assert wrong.returncode == 2 and "usage:" in wrong.stderr


@pytest.mark.parametrize("name, entry", [
    ("NVIDIA H100 80GB HBM3", "h100"), ("NVIDIA H200", "h200"),
    ("NVIDIA H100 PCIe", "h100pcie"), ("NVIDIA H100 NVL", "h100nvl"),
    ("NVIDIA H200 NVL", "h200nvl"), ("NVIDIA A100-SXM4-80GB", "a100"),
    ("NVIDIA A100-SXM4-40GB", None), ("NVIDIA L4", "l4"), ("Tesla T4", None)])
def test_a_gpu_name_maps_to_its_hardware_table_entry(name, entry):
    from onnxflops.serving import HARDWARE

    assert _check_module().table_entry(name) == entry
    assert entry is None or entry in HARDWARE


@pytest.mark.slow  # imports torch
def test_the_python_part_without_a_gpu_is_one_line(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is here")
    assert _check_module().main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cuda_check: error: no CUDA GPU usable by torch") and err.count("\n") == 1


@pytest.mark.slow  # exports three tiny models, probes the CPU's ceilings
def test_the_dry_run_runs_every_step_on_the_cpu(tmp_path):
    env = {**os.environ, "ONNXFLOPS_CACHE_DIR": str(tmp_path), "PYTHON": sys.executable}
    done = subprocess.run(["bash", str(SCRIPT), "--dry-run"], capture_output=True, text=True,
                          timeout=900, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = done.stdout.split("== summary", 1)[1]
    for line in ("ceilings cpu float32: peak", "tiny ResNet: ", "tiny BERT: ",
                 "Llama prefill 16 tokens: measured", "Llama decode step (context 16…19)"):
        assert line in summary, line
    # the per-node join of each profile: its table of the slowest nodes
    assert done.stdout.count("FLOPs %") == 2
    assert "Traceback" not in done.stderr
