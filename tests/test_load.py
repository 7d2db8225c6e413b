"""Loading: large inline initializers come back as headers (name, dims, dtype) without their bytes;
everything else is what onnx.load reads from the same file."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from helpers import model, node, weight
from onnxflops.errors import OnnxFlopsError
from onnxflops.load.reader import load_model

# More than 4096 elements each: loaded as headers.
LARGE = {"conv.w": (64, 32, 3, 3), "fc.w": (10, 4096 + 1)}


def inline_model() -> onnx.ModelProto:
    conv_w = weight("conv.w", LARGE["conv.w"])  # raw_data
    fc_w = helper.make_tensor("fc.w", TensorProto.FLOAT, LARGE["fc.w"],  # packed float_data
                              np.arange(10 * 4097, dtype=np.float32) / 1000)
    described = weight("fc.b", (10,))
    described.doc_string = "a bias " * 300  # a record over 1 KiB that holds only 10 values
    shape = weight("shape", (2,), np.int64, [1, -1])
    return model([node("Conv", ["x", "conv.w", "conv.b"], ["c"], kernel_shape=[3, 3]),
                  node("Reshape", ["c", "shape"], ["flat"]),
                  node("Gemm", ["flat", "fc.w", "fc.b"], ["y"], transB=1)],
                 {"x": ["batch", 32, 3, 3]},
                 # large and small interleaved: the order must survive
                 [conv_w, weight("conv.b", (64,)), fc_w, shape, described])


def assert_loaded_without_large_weights(loaded: onnx.ModelProto, reference: onnx.ModelProto):
    assert loaded.ir_version == reference.ir_version
    assert list(loaded.opset_import) == list(reference.opset_import)
    for field in ("node", "input", "output", "value_info"):
        assert list(getattr(loaded.graph, field)) == list(getattr(reference.graph, field)), field
    assert [t.name for t in loaded.graph.initializer] == \
        [t.name for t in reference.graph.initializer]
    for got, want in zip(loaded.graph.initializer, reference.graph.initializer):
        if want.name in LARGE:
            assert tuple(got.dims) == LARGE[want.name] and got.data_type == want.data_type
            assert not got.raw_data and not got.float_data
            assert got.data_location == TensorProto.EXTERNAL
        else:
            assert got == want


def test_a_file_loads_as_onnx_reads_it_but_for_the_bytes_of_large_weights(tmp_path):
    path = tmp_path / "inline.onnx"
    onnx.save(inline_model(), str(path))
    loaded = load_model(path)
    reference = onnx.load(str(path))
    assert_loaded_without_large_weights(loaded, reference)
    small = {t.name: onnx.numpy_helper.to_array(t) for t in loaded.graph.initializer
             if t.name not in LARGE}
    assert small["shape"].tolist() == [1, -1]
    assert small["fc.b"].shape == (10,)


def test_a_proto_is_loaded_likewise_and_left_untouched():
    proto = inline_model()
    before = proto.SerializeToString()
    assert_loaded_without_large_weights(load_model(proto), proto)
    assert proto.SerializeToString() == before


def test_records_in_any_order_and_a_graph_split_in_two_records_merge_as_protobuf_does(tmp_path):
    full = inline_model()
    # Initializers first, then the rest of the graph in a second graph record, after the opsets.
    first = onnx.ModelProto(ir_version=full.ir_version)
    first.graph.initializer.extend(full.graph.initializer)
    rest = onnx.ModelProto(opset_import=full.opset_import)
    rest.graph.CopyFrom(full.graph)
    del rest.graph.initializer[:]
    path = tmp_path / "split.onnx"
    path.write_bytes(first.SerializeToString() + rest.SerializeToString())
    reference = onnx.load(str(path))
    assert [t.name for t in reference.graph.initializer] == [t.name for t in full.graph.initializer]
    assert_loaded_without_large_weights(load_model(path), reference)


@pytest.mark.parametrize("inside", ["a_large_weight", "the_last_record"])
def test_a_file_cut_short_is_one_error(tmp_path, inside):
    full = inline_model()
    data, conv_w = full.SerializeToString(), full.graph.initializer[0].raw_data
    at = data.index(conv_w) + len(conv_w) // 2 if inside == "a_large_weight" else len(data) - 3
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[:at])
    with pytest.raises(OnnxFlopsError, match=f"{path}: not a readable ONNX model .truncated"):
        load_model(path)
