"""A model-local function's nodes run as onnxruntime 1.32 runs them: inlined into the model's
graph, at the model's opset of their domain (at the newest where the model imports none), their
input and output counts first checked at the function's own opsets, in every function, called or
not. Each model below was run through onnxruntime 1.32 (the tests marked so check it again)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from onnxflops.cli import main
from onnxflops.normalize import functions as normalize_functions

_MODEL_OPSETS = (("", 20), ("local", 1))


def _model(body: list[onnx.NodeProto], function_opsets, model_opsets=_MODEL_OPSETS,
           called: bool = True) -> onnx.ModelProto:
    """x (2x3x4) -> F(x) -> y (or Relu(x) -> y, F not called), F's body `body` (a -> b)."""
    function = helper.make_function("local", "F", ["a"], ["b"], body,
                                    [helper.make_opsetid(d, v) for d, v in function_opsets])
    call = helper.make_node("F", ["x"], ["y"], domain="local", name="call") if called \
        else helper.make_node("Relu", ["x"], ["y"], name="relu")
    graph = helper.make_graph([call], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    return helper.make_model(graph, functions=[function], ir_version=8,
                             opset_imports=[helper.make_opsetid(d, v) for d, v in model_opsets])


def _relu() -> list[onnx.NodeProto]:
    return [helper.make_node("Relu", ["a"], ["b"], name="r")]


def _reduce_max_by_attribute() -> list[onnx.NodeProto]:
    """ReduceMax-13 (axes an attribute; an input from opset 18)."""
    return [helper.make_node("ReduceMax", ["a"], ["b"], name="r", axes=[1])]


def _reduce_max_by_input() -> list[onnx.NodeProto]:
    """ReduceMax-18 (axes an input)."""
    axes = helper.make_node("Constant", [], ["axes"],
                            value=helper.make_tensor("axes", TensorProto.INT64, [1], [1]))
    return [axes, helper.make_node("ReduceMax", ["a", "axes"], ["b"], name="r")]


def _relu_of_two_outputs_in_a_branch() -> list[onnx.NodeProto]:
    relu = helper.make_node("Relu", ["a"], ["b", "extra"], name="r")
    then = helper.make_graph([relu], "then", [], [helper.make_tensor_value_info("b", TensorProto.FLOAT, None)])
    other = helper.make_graph([helper.make_node("Identity", ["a"], ["b"])], "else", [],
                              [helper.make_tensor_value_info("b", TensorProto.FLOAT, None)])
    true = helper.make_node("Constant", [], ["c"], value=helper.make_tensor("c", TensorProto.BOOL, [], [True]))
    return [true, helper.make_node("If", ["c"], ["b"], then_branch=then, else_branch=other)]


def _count(model: onnx.ModelProto, tmp_path, capsys) -> tuple[int, str, str]:
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    code = main(["count", str(path), "--json"])
    out, err = capsys.readouterr()
    return code, out, err.replace(f"{path}: ", "")


def _runs_in_onnxruntime(model: onnx.ModelProto) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": np.arange(24, dtype=np.float32).reshape(2, 3, 4)})[0]


def _refused_by_onnxruntime(model: onnx.ModelProto, message: str) -> None:
    ort = pytest.importorskip("onnxruntime")
    with pytest.raises(Exception, match=message):
        ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


# --- counted: (a) a function importing an older opset, (b) a domain the model does not import ---

COUNTED = {
    "function at opset 17 in a model at 20": _model(_relu(), [("", 17)]),
    "function at opset 17 in a model importing 'ai.onnx' at 20":
        _model(_relu(), [("", 17)], [("ai.onnx", 20), ("local", 1)]),
    "a node of domain 'ai.onnx' spelled out in a function nothing calls":
        _model([helper.make_node("Relu", ["a"], ["b"], domain="ai.onnx")], [("ai.onnx", 17)],
               called=False),
    "function at opset 17 in a model importing no ai.onnx": _model(_relu(), [("", 17)], [("local", 1)]),
}


@pytest.mark.parametrize("inlined", [True, False], ids=["inlined", "calls kept"])
@pytest.mark.parametrize("case", list(COUNTED))
def test_a_function_importing_other_opsets_than_the_model_is_costed(case, inlined, tmp_path,
                                                                    capsys, monkeypatch):
    # Was: "UNCOSTED call (F): ... Model has functions with incompatible opset versions" (onnx's
    # inliner), exit 1; and, for the model importing no ai.onnx, "No opset import for domain ''".
    if not inlined:  # each call costed from its body, as a model too large to inline is
        monkeypatch.setattr(normalize_functions, "MAX_INLINED_NODES", 0)
    code, out, err = _count(COUNTED[case], tmp_path, capsys)
    assert (code, err) == (0, "")
    assert '"flops": 24' in out  # Relu: one comparison each of 2·3·4 elements


@pytest.mark.parametrize("case", list(COUNTED))
def test_onnxruntime_runs_the_functions_counted_here(case):
    assert _runs_in_onnxruntime(COUNTED[case]).shape == (2, 3, 4)


def test_onnxruntime_runs_a_function_node_at_the_model_opset():
    # Softmax in a function importing opset 11 (normalizing over every axis from `axis` on), in
    # a model importing 13: onnxruntime normalizes axis 1 alone, as Softmax-13 does.
    softmax = [helper.make_node("Softmax", ["a"], ["b"], axis=1)]
    y = _runs_in_onnxruntime(_model(softmax, [("", 11)], [("", 13), ("local", 1)]))
    assert np.allclose(y.sum(axis=1), 1) and not np.allclose(y.sum(axis=(1, 2)), 1)


# --- refused: what onnxruntime refuses, one line each ---------------------------------------------

REFUSED = {
    "ReduceMax-13 in a function at 17, run at the model's 20": (
        _model(_reduce_max_by_attribute(), [("", 17)]),
        "function 'F': node 'r' (ReduceMax) is ReduceMax-13 at the function's opset 17, but "
        "onnxruntime runs it at opset 20, as ReduceMax-20",
        "Unrecognized attribute: axes for operator ReduceMax"),
    "ReduceMax-13 in a function at 17, the model importing no ai.onnx": (
        _model(_reduce_max_by_attribute(), [("", 17)], [("local", 1)]),
        "function 'F': node 'r' (ReduceMax) is ReduceMax-13 at the function's opset 17, but "
        f"onnxruntime runs it at opset {onnx.defs.onnx_opset_version()}, as ReduceMax-20",
        "Unrecognized attribute: axes for operator ReduceMax"),
    "Gelu-20 in a function at 20, run at the model's 17": (
        _model([helper.make_node("Gelu", ["a"], ["b"], name="r")], [("", 20)], [("", 17), ("local", 1)]),
        "function 'F': node 'r' (Gelu) is Gelu-20 at the function's opset 20, but onnxruntime "
        "runs it at opset 17, which has no Gelu",
        "No Op registered for Gelu with domain_version of 17"),
    "a function importing opset 0, nothing calling it": (
        _model(_relu(), [("", 0)], called=False),
        "function 'F': imports opset 0 of ai.onnx; opset versions start at 1",
        "Invalid opset version for domain  in function F"),
    "a function importing opset 2^31": (
        _model(_relu(), [("", 2**31)]),
        "function 'F': imports opset 2147483648 of ai.onnx, which no opset can be",
        "Invalid opset version for domain  in function F"),
    "a node of domain '' in a function importing 'ai.onnx'": (
        _model(_relu(), [("ai.onnx", 17)]),
        "function 'F': node 'r' (Relu) is of domain '' (ai.onnx), which the function imports "
        "only as 'ai.onnx', a name onnxruntime does not match to ''",
        "No opset registered for domain  in function F"),
    "a node of domain 'ai.onnx' in a function importing ''": (
        _model([helper.make_node("Relu", ["a"], ["b"], name="r", domain="ai.onnx")], [("", 17)]),
        "function 'F': node 'r' (Relu) is of domain 'ai.onnx', which the function imports no "
        "opset of",
        "No opset registered for domain ai.onnx in function F"),
    "a node of domain 'ai.onnx' in a called function importing 'ai.onnx'": (
        _model([helper.make_node("Relu", ["a"], ["b"], name="r", domain="ai.onnx")],
               [("ai.onnx", 17)], [("ai.onnx", 20), ("local", 1)]),
        "function 'F': node 'r' (Relu) is of domain 'ai.onnx' spelled out, which onnxruntime "
        "does not resolve in a function (its ops are of domain '')",
        "No opset import for domain ai.onnx"),
    "two inputs to ReduceMax-13, in a function nothing calls": (
        _model(_reduce_max_by_input(), [("", 17)], called=False),
        "function 'F': node 'r' (ReduceMax) has 2 inputs; ReduceMax-13 takes 1",
        "Invalid input count for op ReduceMax in function F: expected 1 to 1, got 2"),
    "two outputs of a Relu in a branch, in a function nothing calls": (
        _model(_relu_of_two_outputs_in_a_branch(), [("", 17)], called=False),
        "function 'F': node 'r' (Relu) has 2 outputs; Relu-14 takes 1",
        "Invalid output count for op Relu in function F: expected 1 to 1, got 2"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_function_node_onnxruntime_refuses_is_one_line(case, tmp_path, capsys):
    # Were counted, exit 0 or 1.
    model, line, _ = REFUSED[case]
    code, out, err = _count(model, tmp_path, capsys)
    assert (code, out, err.splitlines()) == (2, "", [f"onnxflops: error: {line}"])


@pytest.mark.parametrize("case", list(REFUSED))
def test_onnxruntime_refuses_each_model_refused_here(case):
    model, _, message = REFUSED[case]
    _refused_by_onnxruntime(model, message)
