#!/usr/bin/env bash
# The measuring half on an NVIDIA GPU in one call, from the repository root:
#
#     bash bench/cuda_check.sh            # on a machine with a GPU (PyPI the only network needed)
#     bash bench/cuda_check.sh --dry-run  # the same steps on the CPU, tiny models (no install)
#
# Installs onnxruntime-gpu beside the project (a virtual environment, .cuda-venv, that sees the
# system's packages: the project's CPU onnxruntime stays as it is), and torch's CUDA build there
# too where the installed torch has no CUDA; then bench/cuda_check.py probes the GPU's ceilings,
# profiles ResNet-50 and BERT-base on the CUDA execution provider and times a Llama's prefill and
# decode step against `onnxflops llm`'s estimate for the GPU found. A few minutes in all; it
# stops at 9. Without a GPU: one line saying so, exit status 2.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
python=${PYTHON:-python3}
say() { echo "cuda_check: $*" >&2; }

if [[ "${1:-}" == "--dry-run" ]]; then
    exec timeout 540 "$python" bench/cuda_check.py --dry-run
elif [[ $# -gt 0 ]]; then
    say "usage: bash bench/cuda_check.sh [--dry-run]"
    exit 2
fi

if ! command -v nvidia-smi > /dev/null 2>&1 || ! nvidia-smi -L > /dev/null 2>&1; then
    say "error: no NVIDIA GPU here (nvidia-smi finds none); run it on a GPU machine, or with" \
        "--dry-run to run the same steps on the CPU"
    exit 2
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >&2

venv=.cuda-venv
if [[ ! -x "$venv/bin/python" ]]; then
    "$python" -m venv --system-site-packages "$venv" || {
        say "error: cannot make a virtual environment with $python -m venv"; exit 2; }
fi
pip=("$venv/bin/python" -m pip install --quiet --disable-pip-version-check)
say "installing onnxruntime-gpu (with the CUDA and cuDNN libraries from PyPI) into $venv"
"${pip[@]}" "onnxruntime-gpu[cuda,cudnn]" || {
    say "error: pip could not install onnxruntime-gpu"; exit 2; }
if ! "$venv/bin/python" -c "import torch, sys; sys.exit(not torch.cuda.is_available())" \
        2> /dev/null; then
    say "the installed torch has no CUDA: installing PyPI's torch (its CUDA build) into $venv"
    "${pip[@]}" torch torchvision || { say "error: pip could not install torch"; exit 2; }
fi
exec timeout 540 "$venv/bin/python" bench/cuda_check.py
