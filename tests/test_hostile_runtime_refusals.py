"""Classes the long fuzz run (tests/fuzz/runs/long-3, slice 06) found counted though onnxruntime
1.32 refuses them: each is one line, exit 2, naming what is wrong."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnxflops.cli import main


@pytest.mark.parametrize("op", ["Conv", "MaxPool"])
@pytest.mark.parametrize("auto_pad", ["NNTSET", "notset", "junk"])
def test_an_auto_pad_onnxruntime_does_not_know_is_refused_naming_the_node(
        op, auto_pad, tmp_path, capsys):
    # cnn_dynamo:115875: a bit flip made a Conv's NOTSET 'NNTSET'; ONNX's inference reads it as
    # NOTSET, onnxruntime refuses it ("Unknown AutoPadType String").
    weights = [numpy_helper.from_array(np.ones((2, 1, 3, 3), np.float32), "w")] * (op == "Conv")
    node = helper.make_node(op, ["x", "w"][:1 + (op == "Conv")], ["y"], name="c",
                            kernel_shape=[3, 3], auto_pad=auto_pad)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], weights)
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=8), path)
    assert main(["count", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"onnxflops: error: node 'c' ({op}): auto_pad '{auto_pad}' is none of NOTSET, SAME_UPPER, "
        "SAME_LOWER and VALID, which onnxruntime refuses at load"]


@pytest.mark.parametrize("auto_pad", ["", "NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"])
def test_the_auto_pads_onnxruntime_takes_are_counted(auto_pad, tmp_path):
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], auto_pad=auto_pad)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=8), path)
    assert main(["count", str(path)]) == 0


def test_an_external_data_path_that_is_not_utf8_is_refused_naming_it(tmp_path, capsys):
    # if:116732: a location of b'..\xff../etc/passwd' was counted (a missing file is accepted on
    # purpose), and onnxruntime's refusal could not even be read ("'utf-8' codec can't decode").
    w = numpy_helper.from_array(np.ones(4, np.float32), "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    w.external_data.add(key="location", value="PLACEHOLDER")
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [w])
    data = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                             ir_version=8).SerializeToString()
    path = tmp_path / "m.onnx"
    path.write_bytes(data.replace(b"PLACEHOLDER", b"..\xff../etc/p"))
    assert main(["count", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"onnxflops: error: {path}: the external data 'location' of initializer 'w' has a name "
        r"that is not UTF-8 text: ..\xff../etc/p"]


def test_onnxruntime_refuses_an_auto_pad_it_does_not_know():
    ort = pytest.importorskip("onnxruntime")
    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], auto_pad="NNTSET")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=8)
    with pytest.raises(Exception, match="Unknown AutoPadType String"):
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _loop_with_body_named(name: str):
    vi = helper.make_tensor_value_info
    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["co"]), helper.make_node("Relu", ["v"], ["vo"])], name,
        [vi("i", TensorProto.INT64, []), vi("c", TensorProto.BOOL, []), vi("v", TensorProto.FLOAT, [2])],
        [vi("co", TensorProto.BOOL, []), vi("vo", TensorProto.FLOAT, [2])])
    trips = numpy_helper.from_array(np.array(3, np.int64), "trips")
    graph = helper.make_graph([helper.make_node("Loop", ["trips", "", "x"], ["y"], name="loop", body=body)], "g",
                              [vi("x", TensorProto.FLOAT, [2])], [vi("y", TensorProto.FLOAT, [2])], [trips])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_a_nested_graph_without_a_name_is_refused_naming_its_node(tmp_path, capsys):
    # if:118697: a bit flip emptied an If branch's name; onnxruntime refuses it ("Field 'name' of
    # 'graph' is required to be non-empty"), the main graph's alone may be empty.
    path = tmp_path / "m.onnx"
    onnx.save(_loop_with_body_named(""), path)
    assert main(["count", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"onnxflops: error: {path}: node 'loop' (Loop): its graph 'body' has no name, which "
        "onnxruntime refuses"]
    onnx.save(_loop_with_body_named("body"), path)
    assert main(["count", str(path)]) == 0


def test_onnxruntime_refuses_a_nested_graph_without_a_name():
    ort = pytest.importorskip("onnxruntime")
    with pytest.raises(Exception, match="Field 'name' of 'graph' is required to be non-empty"):
        ort.InferenceSession(_loop_with_body_named("").SerializeToString(),
                             providers=["CPUExecutionProvider"])


def _if_whose_branches_differ_in_rank(imports: list[tuple[str, int]]) -> onnx.ModelProto:
    """An If whose else branch declares rank 3 while it computes rank 4: If before opset 6 merges
    its branches' shapes and refuses that; later ones take their union."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])
    flag = helper.make_tensor_value_info("flag", TensorProto.BOOL, [])
    else_branch = helper.make_graph([helper.make_node("Relu", ["x"], ["e"])], "else", [],
                                    [helper.make_tensor_value_info("e", TensorProto.FLOAT, [1, 6, 6])])
    then_branch = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["t"])], "then", [],
                                    [helper.make_tensor_value_info("t", TensorProto.FLOAT, [1, 2, 6, 6])])
    node = helper.make_node("If", ["flag"], ["y"], name="branch", else_branch=else_branch,
                            then_branch=then_branch)
    graph = helper.make_graph([node], "g", [x, flag], [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in imports],
                             ir_version=8)


# if:218066 (long-6): a model importing "" 17, then "ai.onnx" 1 (the fuzzer's extra opset) runs
# at opset 1 in onnxruntime, the last import of the domain however it is spelled; onnx's inference
# read it at 17, and the If was counted.
@pytest.mark.parametrize("imports, refused", [
    ([("", 17), ("ai.onnx", 5)], True),
    ([("", 17), ("", 5)], True),
    ([("ai.onnx", 5), ("", 17)], False),
    ([("", 5), ("ai.onnx", 17)], False),
])
def test_a_domain_imported_twice_is_read_at_its_last_import_as_onnxruntime_reads_it(
        imports, refused, tmp_path, capsys):
    path = tmp_path / "m.onnx"
    onnx.save(_if_whose_branches_differ_in_rank(imports), path)
    assert main(["count", str(path)]) == (2 if refused else 0)
    lines = capsys.readouterr().err.splitlines()
    if refused:
        assert len(lines) == 1
        assert lines[0].startswith("onnxflops: error: node 'branch' (If): ONNX's shape inference "
                                   "refuses it, as onnxruntime would")
        assert lines[0].endswith("Mismatch between number of inferred and declared dimensions. "
                                 "inferred=3 declared=4")


@pytest.mark.parametrize("imports, refused", [
    ([("", 17), ("ai.onnx", 5)], True),
    ([("ai.onnx", 5), ("", 17)], False),
])
def test_onnxruntime_reads_a_domain_imported_twice_at_its_last_import(imports, refused):
    import onnxruntime

    data = _if_whose_branches_differ_in_rank(imports).SerializeToString()
    if refused:
        with pytest.raises(Exception, match="inferred=3 declared=4"):
            onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    else:
        onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
