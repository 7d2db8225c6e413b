"""Real size: conversions never hold weight bytes; modules on the meta device count exactly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

import onnxflops
from onnxflops.cli import main
from onnxflops.errors import OnnxFlopsError
from onnxflops.graph import MAX_VALUE_ELEMENTS

torch = pytest.importorskip("torch")
from onnxflops.converters import ABSENT_WEIGHTS, is_graph_only, torch_to_onnx  # noqa: E402

nn = torch.nn
REPO = Path(__file__).resolve().parents[2]


def mlp() -> nn.Module:
    """Linear(256, 512) → ReLU → Linear(512, 10): weights far above the loader's small size."""
    return nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 10))


MLP_MACS = 4 * (256 * 512 + 512 * 10)  # batch 4
MLP_PARAMS = 256 * 512 + 512 + 512 * 10 + 10


def weight_bytes(proto: onnx.ModelProto) -> int:
    return sum(len(t.raw_data) + 4 * len(t.float_data) for t in proto.graph.initializer)


class TestGraphOnlyExport:
    def test_real_weights_are_not_serialized_and_not_touched(self):
        module = mlp()
        before = [p.detach().clone() for p in module.parameters()]
        proto = torch_to_onnx(module, (4, 256))
        large = [t for t in proto.graph.initializer if _elements(t) > MAX_VALUE_ELEMENTS]
        assert [t.name for t in large] == ["0.weight", "2.weight"]
        assert all(t.data_location == onnx.TensorProto.EXTERNAL for t in large)
        assert weight_bytes(proto) == 4 * (512 + 10)  # the biases only: small tensors keep bytes
        assert all(torch.equal(a, b) for a, b in zip(before, module.parameters()))
        counted = onnxflops.count(proto).total
        assert (counted.macs, counted.params) == (MLP_MACS, MLP_PARAMS)

    def test_keep_weights_still_writes_them(self):
        proto = torch_to_onnx(mlp(), (4, 256), keep_weights=True)
        assert weight_bytes(proto) == 4 * MLP_PARAMS
        assert not is_graph_only(proto)


class TestMetaDevice:
    def test_a_module_on_meta_counts_like_the_same_module_in_memory(self):
        with torch.device("meta"):
            module = mlp()
        for inputs in [(4, 256), torch.randn(4, 256), torch.empty(4, 256, device="meta")]:
            counted = onnxflops.count(module, inputs=(inputs,)).total
            assert (counted.macs, counted.params) == (MLP_MACS, MLP_PARAMS)

    def test_every_initializer_is_a_header_naming_a_file_never_written(self, tmp_path):
        with torch.device("meta"):
            module = mlp()
        proto = torch_to_onnx(module, (4, 256), keep_weights=True)  # meta weights have no bytes
        assert is_graph_only(proto) and weight_bytes(proto) == 0
        assert {(t.name, tuple(t.dims)) for t in proto.graph.initializer} == {
            ("0.weight", (512, 256)), ("0.bias", (512,)), ("2.weight", (10, 512)),
            ("2.bias", (10,))}
        assert {e.value for t in proto.graph.initializer for e in t.external_data
                if e.key == "location"} == {ABSENT_WEIGHTS}
        onnx.save(proto, tmp_path / "m.onnx")
        assert not (tmp_path / ABSENT_WEIGHTS).exists()
        counted = onnxflops.count(tmp_path / "m.onnx").total
        assert (counted.macs, counted.params) == (MLP_MACS, MLP_PARAMS)
        assert_valid_but_for_the_absent_data(tmp_path / "m.onnx")

    def test_the_legacy_exporter_says_it_cannot_take_meta_weights(self):
        with torch.device("meta"):
            module = mlp()
        with pytest.raises(OnnxFlopsError, match="meta device.*dynamo"):
            torch_to_onnx(module, (4, 256), exporter="legacy")


@pytest.mark.slow
class TestLlamaOnMeta:
    """transformers' LlamaForCausalLM built on meta, against its hand-derived numbers."""

    @pytest.fixture(autouse=True)
    def _transformers(self):
        from onnxflops.models import llama

        try:
            llama.llama_config("tiny")
        except ImportError as e:
            pytest.skip(f"transformers' Llama cannot be imported ({e})")

    def test_counts_the_hand_derived_macs_and_params(self):
        from onnxflops.models import llama

        report = onnxflops.count(llama.llama_on_meta("tiny"), inputs=(llama.token_ids(32),))
        assert report.total.macs == llama.analytic_macs("tiny", tokens=32)
        # the converter records inv_freq as a buffer, so the params are the model's own
        assert report.total.params == llama.analytic_params("tiny")
        assert report.total.buffers == llama.rotary_buffer_elements("tiny")

    def test_convert_writes_a_graph_only_file_that_counts_back_identically(self, tmp_path,
                                                                           capsys):
        from onnxflops.models import llama

        out = tmp_path / "tiny.onnx"
        assert main(["convert", "onnxflops.models.llama:tiny", "-o", str(out)]) == 0
        assert "graph only" in capsys.readouterr().err
        assert out.stat().st_size < 2_000_000 and not (tmp_path / ABSENT_WEIGHTS).exists()
        assert_valid_but_for_the_absent_data(out)
        from_file, from_module = onnxflops.count(out).total, onnxflops.count(llama.tiny()).total
        assert from_file.macs == from_module.macs == llama.analytic_macs("tiny", tokens=32)
        assert from_file.params == from_module.params


def assert_valid_but_for_the_absent_data(path) -> None:
    """onnx.checker's full check passes once a file of that name exists (it checks only that)."""
    data = path.parent / ABSENT_WEIGHTS
    data.touch()
    try:
        onnx.checker.check_model(str(path), full_check=True)
    finally:
        data.unlink()


def _elements(t: onnx.TensorProto) -> int:
    n = 1
    for d in t.dims:
        n *= d
    return n


@pytest.mark.slow
class TestFrameworksCoexist:
    """TensorFlow then triton in one process aborts (both bundle LLVM); torch loads triton when it
    exports. Children run with the triton wheel on their path (pip installs it without a GPU)."""

    KERAS_THEN_TORCH = (
        "import os, sys; os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'\n"
        "import keras, torch, onnxflops\n"
        "k = onnxflops.count(keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)]))\n"
        "t = onnxflops.count(torch.nn.Linear(8, 4), inputs=((1, 8),))\n"
        "print(k.total.macs, t.total.macs, 'triton' in sys.modules)\n")

    @pytest.fixture(scope="class")
    def triton_path(self, tmp_path_factory):
        pytest.importorskip("tensorflow")
        given = os.environ.get("ONNXFLOPS_TRITON_DIR")
        if given:
            return given
        target = tmp_path_factory.mktemp("triton")
        pip = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                              "--target", str(target), "triton"], capture_output=True, timeout=600)
        if pip.returncode != 0:
            pytest.skip("pip cannot install the triton wheel here")
        return str(target)

    TORCH_THEN_KERAS = (
        "import os, sys; os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'\n"
        "import torch, onnxflops\n"
        "t = onnxflops.count(torch.nn.Linear(8, 4), inputs=((1, 8),))\n"
        "import keras\n"
        "k = onnxflops.count(keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)]))\n"
        "print(t.total.macs, k.total.macs)\n")

    def run(self, code: str, triton_path: str, *args: str,
            cwd: Path | None = None) -> subprocess.CompletedProcess:
        path = os.pathsep.join([str(REPO), triton_path])
        return subprocess.run([sys.executable, *(("-c", code) if code else ()), *args],
                              capture_output=True, text=True, cwd=cwd,
                              env=dict(os.environ, PYTHONPATH=path), timeout=600)

    def test_the_crash_is_real_with_this_triton(self, triton_path):
        crashed = self.run("import tensorflow, triton", triton_path)
        assert crashed.returncode != 0 and "LLVM" in crashed.stderr

    def test_a_keras_model_then_a_torch_module(self, triton_path):
        child = self.run(self.KERAS_THEN_TORCH, triton_path)
        assert child.returncode == 0, child.stderr[-2000:]
        assert child.stdout.split() == ["32", "32", "False"]

    def test_a_torch_module_then_a_keras_model(self, triton_path):
        child = self.run(self.TORCH_THEN_KERAS, triton_path)
        assert child.returncode == 0, child.stderr[-2000:]
        assert child.stdout.split() == ["32", "32"]

    @pytest.fixture(scope="class")
    def saved_mlps(self, triton_path, tmp_path_factory) -> Path:
        """A folder with the same MLP saved as mlp.pt2 (torch.export) and mlp.keras."""
        folder = tmp_path_factory.mktemp("mlps")
        for code in ("import torch\n"  # each framework in a child of its own
                     "from onnxflops.models import torch_models\n"
                     "program = torch.export.export(torch_models.mlp().eval(),"
                     " (torch.zeros(1, 64),))\n"
                     "torch.export.save(program, 'mlp.pt2')\n",
                     "import os; os.environ['TF_CPP_MIN_LOG_LEVEL'] = '3'\n"
                     "from onnxflops.models import keras_models\n"
                     "keras_models.mlp().save('mlp.keras')\n"):
            saved = self.run(code, triton_path, cwd=folder)
            assert saved.returncode == 0, saved.stderr[-2000:]
        return folder

    @pytest.mark.parametrize("sides", [("mlp.keras", "mlp.pt2"),
                                       ("onnxflops.models.torch_models:mlp", "mlp.keras")],
                             ids=["keras-file-then-pt2", "torch-spec-then-keras-file"])
    def test_compare_a_keras_file_and_a_torch_model_in_either_order(self, triton_path, saved_mlps,
                                                                    sides):
        """torch.export.load loads triton as it reads a .pt2: after TensorFlow that crashed
        compare with exit 139 until it imported torch and triton first."""
        child = self.run("", triton_path, "-m", "onnxflops.cli", "compare", *sides,
                         "--input", "input=1x64", cwd=saved_mlps)
        assert child.returncode == 0, child.stderr[-2000:]
        assert "SAME: MACs, FLOPs (default), params and buffers agree" in child.stdout
