"""The source seam: each kind of model told by the one table, without importing a framework."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from onnxflops import sources
from onnxflops.errors import OnnxFlopsError

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "tests" / "fuzz" / "seeds" / "cnn_dynamo.onnx"


def _relu() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu", [x], [y])
    return helper.make_model(graph)


@pytest.mark.parametrize("name, kind", [
    ("model.onnx", "ONNX model"),
    ("model.pt2", "torch.export program"),
    ("model.keras", "Keras model file"),
    ("model.h5", "Keras model file"),
    ("model.pt", "pickled torch module"),
    ("model.pth", "pickled torch module"),
])
def test_an_existing_file_is_told_by_its_suffix(tmp_path, name, kind):
    path = tmp_path / name
    path.write_bytes(b"")
    assert sources.kind_of(path).name.startswith(kind)
    assert sources.kind_of(str(path)).name.startswith(kind)


def test_a_saved_model_folder_is_told_by_its_saved_model_pb(tmp_path):
    assert sources.kind_of(tmp_path) is sources.ONNX  # a folder without one: nothing to convert
    (tmp_path / "saved_model.pb").write_bytes(b"")
    assert sources.kind_of(tmp_path).name.startswith("TensorFlow SavedModel")


def test_a_factory_spec_is_a_name_that_is_no_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert sources.kind_of("package.module:build").name.startswith("factory spec")
    assert sources.kind_of("missing.onnx") is sources.ONNX  # the reader says: no such file
    assert sources.kind_of("missing.pt2") is sources.ONNX
    assert sources.kind_of("not a spec:1") is sources.ONNX
    (tmp_path / "pkg.mod:f").write_bytes(b"")  # an existing file is read, never imported
    assert sources.kind_of("pkg.mod:f") is sources.ONNX


def test_an_onnx_proto_is_onnx_and_needs_no_conversion():
    proto = _relu()
    assert sources.kind_of(proto) is sources.ONNX
    assert not sources.needs_conversion(proto) and not sources.needs_conversion(SEED)
    assert sources.load(proto).model is proto


def test_an_onnx_source_is_read_as_it_is_with_its_weights_only_when_asked(tmp_path):
    proto = _relu()
    prepared = sources.to_onnx(proto)
    assert (prepared.counted, prepared.name, prepared.converted) == (proto, "relu", False)
    assert prepared.weighted() is proto
    path = tmp_path / "relu.onnx"
    onnx.save(proto, path)
    prepared = sources.to_onnx(path, keep_weights=True)
    assert (prepared.counted, prepared.name, prepared.converted) == (str(path), "relu.onnx", False)
    assert [n.op_type for n in prepared.weighted().graph.node] == ["Relu"]


def test_weights_that_cannot_be_read_are_one_line(tmp_path):
    with pytest.raises(OnnxFlopsError, match=r"gone.onnx: cannot read its weights to run it"):
        sources.to_onnx(tmp_path / "gone.onnx").weighted()


def test_declared_inputs_of_an_onnx_model_leave_open_dims_none():
    proto = _relu()
    proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    assert sources.declared_inputs(proto) == {"x": (None, 3)}
    assert sources.accepts((None, 3), (5, 3)) and not sources.accepts((None, 3), (5, 4))
    assert not sources.accepts((None, 3), (1, 5, 3))


def test_a_pickle_is_refused_in_one_line_before_any_framework_loads(tmp_path):
    path = tmp_path / "model.pt"
    path.write_bytes(b"not read")
    with pytest.raises(OnnxFlopsError, match="pickled PyTorch files are not loaded"):
        sources.load(path)


def test_telling_every_kind_imports_no_framework(tmp_path):
    """A fresh interpreter: kinds are told from types and names; torch, TensorFlow and the
    converters' modules stay unloaded."""
    for name in ("a.pt2", "b.keras", "c.pt"):
        (tmp_path / name).write_bytes(b"")
    paths = [str(tmp_path / n) for n in ("a.pt2", "b.keras", "c.pt")]
    code = ("import sys; from onnxflops import sources\n"
            f"kinds = [sources.kind_of(p).name for p in {paths!r} + ['pkg.mod:f']]\n"
            "heavy = [m for m in ('torch', 'tensorflow', 'keras', 'onnxflops.converters.from_torch',"
            " 'onnxflops.converters.from_keras') if m in sys.modules]\n"
            "print(len(kinds), heavy)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""}, timeout=120)
    assert done.stdout.strip() == "4 []", done.stderr


def test_each_kind_names_the_extra_its_converter_needs():
    extras = {kind.name.split(" (")[0]: kind.extra for kind in (*sources.KINDS, sources.CAUSAL_LM)}
    assert extras["ONNX model"] is None
    assert extras["torch nn.Module"] == extras["torch.export program"] == "torch"
    assert extras["keras.Model"] == extras["TensorFlow SavedModel folder"] == "keras"
    assert extras["transformers causal LM"] == "hf"


def test_every_extra_a_kind_names_is_one_pyproject_declares():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 on; the core tests run on 3.10 too

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    named = {kind.extra for kind in (*sources.KINDS, sources.CAUSAL_LM)} - {None}
    assert named and named <= set(declared)


def test_frameworks_meet_where_one_source_may_load_tensorflow_and_another_torch(tmp_path,
                                                                                monkeypatch):
    """TensorFlow then triton crashes the process: compare imports torch first only then."""
    monkeypatch.chdir(tmp_path)
    for name in ("a.keras", "b.pt2", "c.keras", "d.onnx"):
        (tmp_path / name).write_bytes(b"")
    meet = sources.frameworks_meet
    assert meet("a.keras", "b.pt2") and meet("b.pt2", "a.keras")
    assert meet("a.keras", "pkg.mod:build")  # a factory's code may import either
    assert meet("pkg.mod:build", "pkg.mod:other")
    assert not meet("a.keras", "c.keras") and not meet("a.keras", "d.onnx")
    assert not meet("b.pt2", "d.onnx") and not meet("pkg.mod:build")  # one source never meets


def test_sources_of_one_framework_import_none_before_loading(tmp_path):
    for name in ("a.keras", "c.keras"):
        (tmp_path / name).write_bytes(b"")
    before = {"torch", "triton", "tensorflow"} & set(sys.modules)
    sources.frameworks_for(str(tmp_path / "a.keras"), str(tmp_path / "c.keras"))
    assert {"torch", "triton", "tensorflow"} & set(sys.modules) == before
