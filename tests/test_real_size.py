"""Real size: conversions never hold weight bytes; modules on the meta device count exactly."""

from __future__ import annotations

import onnx
import pytest

import onnxflops
from onnxflops.cli import main
from onnxflops.errors import OnnxFlopsError
from onnxflops.load import SMALL_TENSOR_ELEMENTS

torch = pytest.importorskip("torch")
from converters import ABSENT_WEIGHTS, is_graph_only, torch_to_onnx  # noqa: E402

nn = torch.nn


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
        large = [t for t in proto.graph.initializer if _elements(t) > SMALL_TENSOR_ELEMENTS]
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
        from models import llama

        try:
            llama.llama_config("tiny")
        except ImportError as e:
            pytest.skip(f"transformers' Llama cannot be imported ({e})")

    def test_counts_the_hand_derived_macs_and_params(self):
        from models import llama

        report = onnxflops.count(llama.llama_on_meta("tiny"), inputs=(llama.token_ids(32),))
        assert report.total.macs == llama.analytic_macs("tiny", tokens=32)
        # inv_freq, a buffer feeding a MatMul, counts as a param of the ONNX graph
        assert report.total.params == llama.analytic_params("tiny") + \
            llama.rotary_buffer_elements("tiny")

    def test_convert_writes_a_graph_only_file_that_counts_back_identically(self, tmp_path,
                                                                           capsys):
        from models import llama

        out = tmp_path / "tiny.onnx"
        assert main(["convert", "models.llama:tiny", "-o", str(out)]) == 0
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
