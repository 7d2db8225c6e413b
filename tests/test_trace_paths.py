"""Two legacy traces of one model, with stand-in weights and with its own, compared: a difference
in ops or in integer constants is a path the model's data chose (converters.from_torch)."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from onnxflops.converters.from_torch import _first_difference


def _constant(name: str, value) -> object:
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.asarray(value), name))


def _graph(nodes: list, initializers: tuple = ()) -> object:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    return helper.make_graph(nodes, "g", [x], [], initializer=list(initializers))


def _gather(index_name: str) -> object:
    return helper.make_node("Gather", ["x", index_name], [f"y_{index_name}"],
                            name=f"gather_{index_name}")


def test_traces_that_route_to_other_experts_differ_at_that_integer_constant():
    # the loop over the experts hit gathers expert 122 in one trace and expert 1 in the other
    a = _graph([_constant("expert", np.int64(122)), _gather("expert")])
    b = _graph([_constant("expert", np.int64(1)), _gather("expert")])
    assert _first_difference(a, b) == "node 'expert' (an integer Constant)"


def test_traces_that_take_another_branch_differ_at_the_first_other_op():
    a = _graph([helper.make_node("Relu", ["x"], ["r"], name="relu")])
    b = _graph([helper.make_node("Neg", ["x"], ["r"], name="neg")])
    assert _first_difference(a, b) == "node 'relu' (Relu)"
    longer = _graph([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                     helper.make_node("Relu", ["r"], ["s"], name="again")])
    assert _first_difference(longer, a) == "op 1 (one trace has 2 ops, the other 1)"


def test_weights_alone_leave_traces_alike():
    # other float constants, constants placed elsewhere, and the Identity the legacy exporter
    # makes of a weight equal to another (fresh norms' ones) are the weights' values, not a path
    ones = numpy_helper.from_array(np.ones(4, np.float32), "w")
    a = _graph([_constant("scale", np.float32(0.5)), _constant("axis", np.int64(0)),
                helper.make_node("Identity", ["w"], ["w2"]), _gather("axis")], [ones])
    b = _graph([_constant("axis", np.int64(0)), _gather("axis"),
                _constant("scale", np.float32(2.0))])
    assert _first_difference(a, b) is None
