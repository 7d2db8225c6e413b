"""TensorFlow next to the torch users get by default (the CUDA build, which brings triton).

    python tools/coexistence.py [--venv DIR] [--torch "torch==2.14.1"]

Importing triton after TensorFlow kills the process (both bundle LLVM). CI reproduces that with
the triton wheel alone (tests/frameworks/test_real_size.py::TestFrameworksCoexist); this script
checks the real thing, which CI does not install (5.3 GB, about 2.5 minutes here): a venv that
sees this environment's packages (TensorFlow, tf2onnx, onnx, ...) and holds its own CUDA torch
wheel (it installs without a GPU). Each scenario runs as a child process with this checkout
first on the path; the table gives its exit status and the last line it printed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QUIET = "import os, sys; os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'\n"
SCENARIOS = {
    "the crash itself: import tensorflow, triton": ["-c", "import tensorflow, triton"],
    "count a Keras model, then a torch module": ["-c", QUIET + (
        "import keras, torch, onnxflops\n"
        "k = onnxflops.count(keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)]))\n"
        "t = onnxflops.count(torch.nn.Linear(8, 4), inputs=((1, 8),))\n"
        "print('MACs', k.total.macs, t.total.macs, '(32 32 expected)')")],
    "count a torch module, then a Keras model": ["-c", QUIET + (
        "import torch, onnxflops\n"
        "t = onnxflops.count(torch.nn.Linear(8, 4), inputs=((1, 8),))\n"
        "import keras\n"
        "k = onnxflops.count(keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)]))\n"
        "print('MACs', t.total.macs, k.total.macs, '(32 32 expected)')")],
    "onnxflops compare mlp.keras TORCH_SPEC": [
        "-m", "onnxflops.cli", "compare", "mlp.keras", "onnxflops.models.torch_models:mlp",
        "--input", "input=1x64"],
    "onnxflops compare TORCH_SPEC mlp.keras": [
        "-m", "onnxflops.cli", "compare", "onnxflops.models.torch_models:mlp", "mlp.keras",
        "--input", "input=1x64"],
}


def venv_python(directory: Path, torch_requirement: str) -> Path:
    python = directory / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(directory)],
                       check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", torch_requirement], check=True)
    return python


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--venv", type=Path,
                        default=Path(tempfile.gettempdir()) / "onnxflops-cuda-torch")
    parser.add_argument("--torch", default="torch==2.14.1", help="the torch requirement to test")
    args = parser.parse_args()
    python = venv_python(args.venv, args.torch)
    env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="3")
    version = subprocess.run([str(python), "-c", "import torch, triton; print(torch.__version__,"
                              " 'triton', triton.__version__)"], capture_output=True, text=True,
                             env=env).stdout.strip()
    print(f"torch {version}, with TensorFlow from {sys.executable}")
    with tempfile.TemporaryDirectory() as work:
        subprocess.run([str(python), "-c", QUIET + "from onnxflops.models.keras_models import "
                        "mlp; mlp().save('mlp.keras')"], cwd=work, env=env, check=True,
                       capture_output=True)
        for name, argv in SCENARIOS.items():
            done = subprocess.run([str(python), *argv], cwd=work, env=env, capture_output=True,
                                  text=True, timeout=600)
            lines = (done.stdout or done.stderr).strip().splitlines()
            print(f"{name:46} exit {done.returncode:4}  {lines[-1] if lines else ''}")


if __name__ == "__main__":
    main()
