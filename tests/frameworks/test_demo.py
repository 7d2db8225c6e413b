"""The demo runs live: onnxflops from Keras and PyTorch agree; TensorFlow's profiler does not."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("tensorflow")
pytest.importorskip("torch")

from onnxflops.models import pair  # noqa: E402
from onnxflops import demo  # noqa: E402


def test_tensorflow_profiler_counts_the_gru_loop_body_once_as_seed_003_reported():
    total, per_op = demo.tensorflow_profiler_flops(pair(demo.PAIR).keras_model(), demo.INPUT)
    conv = 2 * 32 * 97 * 127 * 16
    one_gru_step_input_matmul = 2 * 4064 * 288  # the recurrent matmul's shape is unknown to it
    dense = 2 * 97 * 96 * 256
    biases = 32 * 97 * 127 + 97 * 256 + 288  # conv, dense, and one GRU step's input bias
    assert per_op == {"Conv2D": conv, "MatMul": one_gru_step_input_matmul + dense,
                      "BiasAdd": biases}
    assert total == 20_142_592  # "about 20.1 M FLOPs"


# TensorFlow's and CUDA's log lines: glog's "I0000 00:00:... file.cc:31]" prefix, absl's notice
# before its logging starts, and the two a new user met.
_FRAMEWORK_LOG = re.compile(r"^[IWEF]\d{4} |absl::InitializeLog|oneDNN custom operations|"
                            r"Could not find cuda drivers|cpu_feature_guard", re.MULTILINE)


def test_the_demo_shows_keras_and_pytorch_agreeing_without_framework_log_lines():
    """Run as a user runs it: a fresh process, TensorFlow's log level not set by the user."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_")}
    done = subprocess.run([sys.executable, "-m", "onnxflops.demo"], capture_output=True,
                          text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert not _FRAMEWORK_LOG.findall(done.stderr), done.stderr
    out = done.stdout
    assert out.count("124.90 M  250.81 M  1.22 M") == 3
    assert "20.14 M" in out and "249.81 M" in out
    assert "agree on MACs, FLOPs and params" in out
