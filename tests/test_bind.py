"""Binding input shapes: on a copy by default, on the model itself with in_place."""

from __future__ import annotations

import onnx
import pytest

from helpers import model, node, weight
from onnxflops.bind.inputs import bind_inputs
from onnxflops.errors import OnnxFlopsError


def two_dynamic_inputs() -> onnx.ModelProto:
    m = model([node("MatMul", ["x", "w"], ["y"]), node("Identity", ["mask"], ["m"])],
              {"x": ["batch", "seq", 8], "mask": ["batch", "keys"]}, [weight("w", (8, 4))],
              outputs=["y", "m"])
    m.graph.value_info.append(onnx.helper.make_tensor_value_info("stale", 1, ["batch", 4]))
    return m


def dims(vi: onnx.ValueInfoProto) -> list:
    return [d.dim_value or d.dim_param for d in vi.type.tensor_type.shape.dim]


@pytest.mark.parametrize("in_place", [False, True])
def test_binding_sets_the_shapes_and_drops_the_recorded_intermediate_ones(in_place):
    original = two_dynamic_inputs()
    before = original.SerializeToString()
    bound = bind_inputs(original, {"x": (2, 16, 8), "mask": (2, 5)}, in_place=in_place)
    assert [dims(i) for i in bound.graph.input] == [[2, 16, 8], [2, 5]]
    assert len(bound.graph.value_info) == 0
    assert (bound is original) == in_place
    assert (original.SerializeToString() == before) != in_place


def test_in_place_changes_nothing_when_a_shape_is_refused():
    original = two_dynamic_inputs()
    before = original.SerializeToString()
    # x binds, then mask's second dim is left dynamic
    with pytest.raises(OnnxFlopsError, match="input 'mask' dim 1 \\('keys'\\) is dynamic"):
        bind_inputs(original, {"x": (3, 16, 8)}, batch=3, in_place=True)
    assert original.SerializeToString() == before


def token_inputs() -> onnx.ModelProto:
    """input_ids and attention_mask share their named dims 'batch' and 'seq'."""
    return model([node("Add", ["ids", "mask"], ["y"])],
                 {"ids": ["batch", "seq"], "mask": ["batch", "seq"]})


def test_binding_one_input_binds_the_same_named_dims_of_the_others():
    bound = bind_inputs(token_inputs(), {"ids": (1, 128)})
    assert [dims(i) for i in bound.graph.input] == [[1, 128], [1, 128]]


def test_two_inputs_giving_one_named_dim_two_sizes_is_an_error():
    with pytest.raises(OnnxFlopsError, match="input 'mask': dim 'seq' is 64 here but 128 in "
                                             "input 'ids'"):
        bind_inputs(token_inputs(), {"ids": (1, 128), "mask": (1, 64)})


def test_a_misspelled_input_name_gets_the_closest_one():
    with pytest.raises(OnnxFlopsError, match=r"model has no input 'msk' \(did you mean 'mask'\?\)"):
        bind_inputs(token_inputs(), {"msk": (1, 128)})


def test_a_dim_may_be_bound_to_zero():
    # A model may run on an empty tensor: x 0x4 by W 4x3 is a 0x3 product of no MAC.
    import onnxflops
    from onnxflops.bind import parse_input_spec

    assert parse_input_spec("x=0x4") == ("x", (0, 4))
    m = model([node("MatMul", ["x", "w"], ["y"])], {"x": ["n", 4]}, [weight("w", (4, 3))])
    report = onnxflops.count(m, {"x": (0, 4)})
    assert report.total.macs == 0
    assert report.nodes[0].output_shapes == [[0, 3]]
    with pytest.raises(onnxflops.OnnxFlopsError, match=r"^batch: 0 is out of range \(1 to"):
        onnxflops.count(m, batch=0)


def test_inputs_in_order_and_arrays_bind_as_inputs_by_name_do():
    import numpy as np

    import onnxflops
    from onnxflops.bind import TypedShape
    from onnxflops.bind.inputs import inputs_by_name, shape_of

    m = two_dynamic_inputs()
    x, mask = np.zeros((2, 5, 8), np.float32), np.ones((2, 3), np.int64)
    by_name = onnxflops.count(m, inputs={"x": (2, 5, 8), "mask": (2, 3)})
    assert by_name.total.macs == 2 * 5 * 8 * 4
    for given in ([x, mask], ((2, 5, 8), (2, 3)), {"x": x, "mask": mask}):
        assert onnxflops.count(m, inputs=given).total.macs == by_name.total.macs
    # An array keeps its dtype in the shape it binds; a lone input is the first one.
    assert shape_of(mask) == (2, 3) and shape_of(mask).dtype == "int64"
    assert isinstance(shape_of(x), TypedShape) and shape_of((2, 3)) == (2, 3)
    assert inputs_by_name(x, ["x", "mask"]) == {"x": x}
    with pytest.raises(OnnxFlopsError, match="3 given in order, the model takes 2"):
        inputs_by_name([x, mask, mask], ["x", "mask"])
