"""The nodes of model-local functions are checked as onnxruntime 1.32 checks them: each is of a
domain the function itself imports (every function, called or not), and in the functions the
model calls each fits its op's schema at the function's opsets. The fuzz run's counted-invalid
cases scan:110706, cnn_dynamo:107910 and mlp_dynamo:109729 (tests/fuzz/runs/long-3) were built
as below: a function importing opset 17 in a model importing 20, which onnx's inliner leaves as a
call, so the checks on the inlined graph never saw its nodes."""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto, helper

from onnxflops.cli import main


def _model(body: onnx.NodeProto, function_opsets, model_opsets=(("", 20), ("local", 1)),
           called: bool = True) -> onnx.ModelProto:
    """x -> F(x) -> y (or Relu(x) -> y, F not called), F's body the one node `body` (a -> b)."""
    function = helper.make_function("local", "F", ["a"], ["b"], [body],
                                    [helper.make_opsetid(d, v) for d, v in function_opsets])
    call = helper.make_node("F", ["x"], ["y"], domain="local", name="call") if called \
        else helper.make_node("Relu", ["x"], ["y"], name="relu")
    graph = helper.make_graph([call], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    return helper.make_model(graph, functions=[function], ir_version=8,
                             opset_imports=[helper.make_opsetid(d, v) for d, v in model_opsets])


def _relu(domain: str = "", **attributes) -> onnx.NodeProto:
    return helper.make_node("Relu", ["a"], ["b"], name="r", domain=domain, **attributes)


# (model, the line's end after "function 'F': node 'r' (Relu)"): each refused by onnxruntime 1.32.
REFUSED = {
    "domain not imported by the function (scan:110706)": (
        _model(_relu("com.microsoft"), [("", 17)]),
        "is of domain 'com.microsoft', which the function imports no opset of"),
    "domain imported by the model only, the call inlined": (
        _model(_relu("com.microsoft"), [("", 17)], [("", 17), ("local", 1), ("com.microsoft", 1)]),
        "is of domain 'com.microsoft', which the function imports no opset of"),
    "no import of the standard domain in the function": (
        _model(_relu(), [], [("", 17), ("local", 1)]),
        "is of domain 'ai.onnx', which the function imports no opset of"),
    "domain not imported, in a function nothing calls": (
        _model(_relu("ai.onnx.ml"), [("", 17)], called=False),
        "is of domain 'ai.onnx.ml', which the function imports no opset of"),
    "an attribute the op does not have (mlp_dynamo:109729)": (
        _model(_relu(num_scan_inputs=1), [("", 17)]),
        ": Unrecognized attribute: num_scan_inputs for operator Relu"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_function_node_onnxruntime_refuses_is_one_line_naming_function_and_node(
        case, tmp_path, capsys):
    model, message = REFUSED[case]
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    assert main(["count", str(path)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert lines == [f"onnxflops: error: {path}: function 'F': node 'r' (Relu) {message}"
                     .replace(") :", "):")]


@pytest.mark.parametrize("in_branch", [False, True])
def test_a_call_of_a_local_function_whose_domain_the_model_does_not_import_is_refused(
        in_branch, tmp_path, capsys):
    # onnxruntime 1.32: "No opset import for domain 'local'" (onnx's inliner made the call plain
    # nodes, and the count went on).
    model = _model(_relu(), [("", 17), ("local", 1)], [("", 17)])
    if in_branch:
        branch = helper.make_graph(
            [helper.make_node("F", ["x"], ["t"], domain="local", name="call")], "then", [],
            [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])])
        other = helper.make_graph([helper.make_node("Relu", ["x"], ["e"])], "else", [],
                                  [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])])
        del model.graph.node[:]
        model.graph.node.extend([
            helper.make_node("Constant", [], ["c"], value=helper.make_tensor("c", TensorProto.BOOL, [], [True])),
            helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=other)])
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    assert main(["count", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"onnxflops: error: {path}: node 'call' (F) is of domain 'local', which the model imports "
        "no opset of"]


def test_a_domain_only_the_function_imports_is_counted_as_onnxruntime_runs_it(tmp_path):
    # A Gelu of onnxruntime's domain, which the function imports and the model does not: the
    # function's imports are what count (it was refused by the model's, once inlined).
    gelu = helper.make_node("Gelu", ["a"], ["b"], name="g", domain="com.microsoft")
    path = tmp_path / "m.onnx"
    onnx.save(_model(gelu, [("", 17), ("com.microsoft", 1)], [("", 17), ("local", 1)]), str(path))
    assert main(["count", str(path)]) == 0


def test_a_function_nothing_calls_is_not_checked_against_schemas(tmp_path):
    # onnxruntime checks the schemas of the nodes it inlines, so it runs this model.
    path = tmp_path / "m.onnx"
    onnx.save(_model(_relu(num_scan_inputs=1), [("", 17)], called=False), str(path))
    assert main(["count", str(path)]) == 0


@pytest.mark.parametrize("case", list(REFUSED))
def test_onnxruntime_refuses_each_model_refused_here(case):
    ort = pytest.importorskip("onnxruntime")
    with pytest.raises(Exception, match="No opset registered for domain|Unrecognized attribute"):
        ort.InferenceSession(REFUSED[case][0].SerializeToString(),
                             providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("model", [
    _model(_relu(num_scan_inputs=1), [("", 17)], called=False),
    _model(helper.make_node("Gelu", ["a"], ["b"], domain="com.microsoft"),
           [("", 17), ("com.microsoft", 1)], [("", 17), ("local", 1)])],
    ids=["unused function, wrong attribute", "domain the function alone imports"])
def test_onnxruntime_runs_the_models_counted_here(model):
    ort = pytest.importorskip("onnxruntime")
    ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def test_onnxruntime_refuses_a_call_whose_domain_the_model_does_not_import():
    ort = pytest.importorskip("onnxruntime")
    model = _model(_relu(), [("", 17), ("local", 1)], [("", 17)])
    with pytest.raises(Exception, match="No opset import for domain 'local'"):
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("kind", ["inputs", "outputs"])
def test_a_call_with_more_inputs_or_outputs_than_its_function_has_is_refused(kind, tmp_path, capsys):
    # mlp_dynamo:122899: F(a) -> b called with two inputs; onnxruntime's inliner refuses it
    # ("Number of actual parameters cannot exceed number of formal parameters").
    model = _model(_relu(), [("", 17)])
    call = model.graph.node[0]
    if kind == "inputs":
        call.input.append("x")
    else:
        call.output.append("extra")
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    assert main(["count", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"onnxflops: error: {path}: node 'call' (F) calls function 'F' with 2 {kind}; it has 1"]
    if kind == "inputs":
        ort = pytest.importorskip("onnxruntime")
        with pytest.raises(Exception, match="Number of actual parameters cannot exceed"):
            ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
