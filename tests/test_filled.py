"""Filled tensors kept as headers while a converter rewrites a graph, and told apart by their fill."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from onnxflops.converters.common import ABSENT_WEIGHTS
from onnxflops.converters.filled import (drop_fill_notes, fill_value, filled_header,
                                         filled_tensors_as_headers, is_filled)
from onnxflops.converters.weight_match import Weight, weight_roles_by_value
from onnxflops.graph import MAX_VALUE_ELEMENTS

LARGE = (96, 64)  # above the loader's small size
assert np.prod(LARGE) > MAX_VALUE_ELEMENTS


def filled(value: float, shape=LARGE, dtype=np.float32) -> np.ndarray:
    return np.broadcast_to(np.array(value, dtype=dtype), shape)


def test_which_arrays_are_filled():
    assert is_filled(filled(0.75))
    assert is_filled(np.full(LARGE, 0.75, dtype=np.float32))  # expanded, found by a scan
    assert not is_filled(filled(0.75, shape=(4, 4)))  # small: the loader reads its values
    assert not is_filled(np.arange(np.prod(LARGE), dtype=np.float32).reshape(LARGE))
    assert not is_filled(np.full(LARGE, np.nan, dtype=np.float32))


def test_a_header_names_an_absent_file_and_notes_its_fill():
    header = filled_header(filled(0.75), "w")
    assert (header.name, tuple(header.dims)) == ("w", LARGE)
    assert header.data_type == onnx.TensorProto.FLOAT and not header.raw_data
    assert header.data_location == onnx.TensorProto.EXTERNAL
    assert [(e.key, e.value) for e in header.external_data] == [("location", ABSENT_WEIGHTS)]
    assert fill_value(header).tolist() == [0.75] and fill_value(header).dtype == np.float32
    graph = onnx.helper.make_graph([], "g", [], [], [header])
    drop_fill_notes(graph)
    assert fill_value(graph.initializer[0]) is None and not graph.initializer[0].doc_string


def test_while_active_numpy_helper_writes_headers_and_reads_views():
    with filled_tensors_as_headers():
        header = numpy_helper.from_array(filled(1.25), "kernel")
        view = numpy_helper.to_array(header)
        transposed = numpy_helper.from_array(np.transpose(view), "kernel_t")  # still a view
        real = numpy_helper.from_array(np.arange(6, dtype=np.float32), "small")
    assert not header.raw_data and fill_value(header).tolist() == [1.25]
    assert view.shape == LARGE and not any(view.strides) and float(view[3, 5]) == 1.25
    assert tuple(transposed.dims) == LARGE[::-1] and fill_value(transposed).tolist() == [1.25]
    assert numpy_helper.to_array(real).tolist() == [0, 1, 2, 3, 4, 5]
    # afterwards numpy_helper is itself again
    assert len(numpy_helper.from_array(np.full(LARGE, 1.25, np.float32)).raw_data) == 4 * 6144


def test_headers_are_told_apart_by_their_fill():
    """A weight's stand-in fills it: its headers (whole or transposed) are it, whatever their
    size; another value is no weight's."""
    kernel, stats = (Weight("kernel", np.array([1.25], np.float32), True, size=6144),
                     Weight("stats", np.array([0.625], np.float32), False, size=64))
    model = onnx.helper.make_model(onnx.helper.make_graph([], "g", [], [], [
        filled_header(filled(1.25), "k"), filled_header(filled(1.25, LARGE[::-1]), "k_t"),
        numpy_helper.from_array(np.full(64, 0.625, np.float32), "s"),
        filled_header(filled(0.5), "folded")]))
    roles = weight_roles_by_value(model, [kernel, stats])
    assert roles["parameters"] == {"k": "kernel", "k_t": "kernel"}
    assert roles["buffers"] == {"s": "stats"} and roles["constants"] == ["folded"]
    assert roles["sizes"] == {"kernel": 6144, "stats": 64}


def test_stand_in_fills_are_distinct_in_their_dtype():
    from onnxflops.converters.structure import StandInValues

    values = StandInValues()
    singles = [float(values.distinct_scalar(np.float32)[0]) for _ in range(500)]
    assert len(set(singles)) == 500 and all(0.5 <= v < 1.5 for v in singles)
    halves = [float(values.distinct_scalar(np.float16)[0]) for _ in range(3000)]  # > 2048 in range
    assert len(set(halves)) == 3000 and 1.0 not in halves and min(halves) > 0


def test_a_folded_monotonic_function_of_a_small_weight_holds_it():
    """TensorFlow folds weight-only arithmetic (an RMSNorm's 1 + scale) into a new constant. A
    small weight's stand-ins are distinct random values: a constant that rises (1 + w) or falls
    (−2·w) in their order holds that weight; the same values in another order, or a constant
    with a repeated value (ones), hold none."""
    rng = np.random.default_rng(0)
    scale, other = (Weight(name, rng.random(16, dtype=np.float32) + np.float32(0.5), True)
                    for name in ("scale", "other"))
    shuffled = np.array(1 + scale.values)[rng.permutation(16)]
    model = onnx.helper.make_model(onnx.helper.make_graph([], "g", [], [], [
        numpy_helper.from_array(1 + scale.values, "one_plus"),
        numpy_helper.from_array(-2 * other.values, "negated"),
        numpy_helper.from_array(shuffled, "shuffled"),
        numpy_helper.from_array(np.ones(16, np.float32), "ones")]))
    roles = weight_roles_by_value(model, [scale, other])
    assert roles["parameters"] == {"one_plus": "scale", "negated": "other"}
    assert sorted(roles["constants"]) == ["ones", "shuffled"]
    # Real weights share values (fresh zeros and ones): no order is read from them.
    real = weight_roles_by_value(model, [scale, other], distinct=False)
    assert real["parameters"] == {}


def test_distinct_arrays_share_no_value_and_hold_no_one():
    from onnxflops.converters.structure import StandInValues

    arrays = StandInValues().distinct_arrays([640] * 3000 + [9])
    values = np.concatenate(arrays)
    assert [a.size for a in arrays[-2:]] == [640, 9] and values.dtype == np.float32
    # 1,920,009 values from 2^24: about 110,000 would repeat if drawn independently
    assert np.unique(values).size == values.size == 640 * 3000 + 9
    assert 1.0 not in values and values.min() >= 0.5 and values.max() <= 1.5
