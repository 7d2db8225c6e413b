"""Tensors filled with one value, kept as ONNX headers while a converter rewrites a graph.

Keras conversion traces every weight as a constant filled with its stand-in value (see
`onnxflops.converters.from_keras`). TensorFlow writes such a constant as one value and a shape;
tf2onnx would expand each into an array and a TensorProto of the weight's full size, and its
optimizer passes copy them again (VGG16: 4 GB and 74 s for 528 MB of weights). While
`filled_tensors_as_headers` is active, onnx.numpy_helper, through which tf2onnx makes and reads
every tensor, keeps a large filled array as a header instead: name, dtype, dims and an external
reference to a file never written, as the torch converter writes weights, with the fill value
noted on it. Reading one back gives a broadcast view of that value: transposes and reshapes stay
views, so no weight is ever expanded. `fill_value` reads the note (to tell weights apart by their
stand-ins), `drop_fill_notes` removes the notes once they are read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import numpy as np
import onnx
from onnx import numpy_helper

from onnxflops.converters.common import ABSENT_WEIGHTS
from onnxflops.graph import MAX_VALUE_ELEMENTS

_NOTE = "onnxflops-fill:"  # the doc_string of a header: its fill value's bytes, in hex


def is_filled(array: np.ndarray) -> bool:
    """A large array whose elements are all one value: a broadcast of it (checked in O(1)), or a
    float array that holds one value only."""
    if array.size <= MAX_VALUE_ELEMENTS or array.dtype == object:
        return False
    if not any(array.strides):
        return True
    if array.dtype.kind != "f":
        return False
    first = array.flat[0]
    return bool(first == first and np.all(array == first))  # NaN is never a stand-in


def filled_header(array: np.ndarray, name: str | None = None) -> onnx.TensorProto:
    """A header for `array`, which `is_filled`: no data, its fill value noted."""
    value = np.ascontiguousarray(array.flat[:1])
    header = onnx.TensorProto(name=name or "", dims=array.shape,
                              data_type=onnx.helper.np_dtype_to_tensor_dtype(array.dtype))
    header.data_location = onnx.TensorProto.EXTERNAL
    header.external_data.add(key="location", value=ABSENT_WEIGHTS)
    header.doc_string = _NOTE + value.tobytes().hex()
    return header


def fill_value(tensor: onnx.TensorProto) -> np.ndarray | None:
    """The one value (a 1-element array) that fills a header `filled_header` wrote; else None."""
    if not tensor.doc_string.startswith(_NOTE):
        return None
    dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type)
    return np.frombuffer(bytes.fromhex(tensor.doc_string[len(_NOTE):]), dtype=dtype)[:1].copy()


def drop_fill_notes(graph: onnx.GraphProto) -> None:
    for tensor in graph.initializer:
        if tensor.doc_string.startswith(_NOTE):
            tensor.ClearField("doc_string")


@contextlib.contextmanager
def filled_tensors_as_headers() -> Iterator[None]:
    """onnx.numpy_helper makes large filled arrays into headers and reads headers as broadcast
    views, for the duration (module-wide: whoever calls through numpy_helper)."""
    from_array, to_array = numpy_helper.from_array, numpy_helper.to_array

    def array_or_header(array, name=None):
        if isinstance(array, np.ndarray) and is_filled(array):
            return filled_header(array, name)
        return from_array(array, name)

    def header_or_array(tensor, base_dir=""):
        value = fill_value(tensor)
        if value is None:
            return to_array(tensor, base_dir)
        return np.broadcast_to(value.reshape(()), tuple(tensor.dims))

    numpy_helper.from_array, numpy_helper.to_array = array_or_header, header_or_array
    try:
        yield
    finally:
        numpy_helper.from_array, numpy_helper.to_array = from_array, to_array
