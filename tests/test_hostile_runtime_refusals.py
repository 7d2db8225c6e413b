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
    onnxruntime = pytest.importorskip("onnxruntime")

    data = _if_whose_branches_differ_in_rank(imports).SerializeToString()
    if refused:
        with pytest.raises(Exception, match="inferred=3 declared=4"):
            onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    else:
        onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])


# Attribute values onnxruntime 1.32's CPU kernels refuse in their constructors, at load, though
# ONNX's checker and strict inference take them (issue 23; the fuzz run found storage_order and
# auto_pad one at a time): (op, opset, inputs, initializers, output types, bad attributes, good
# attributes, our words after "node 'n' (op): ", onnxruntime's words).
_F, _I64 = TensorProto.FLOAT, TensorProto.INT64
_IMAGE = [("x", _F, [1, 4, 6, 6])]
_ROIS = [("x", _F, [1, 4, 6, 6]), ("r", _F, [2, 4]), ("b", _I64, [2])]
_GRID = [("x", _F, [1, 4, 6, 6]), ("grid", _F, [1, 3, 3, 2])]
_COLUMNS = [("x", _F, [1, 4, 9])]
_COL2IM_SIZES = {"size": np.array([4, 4], np.int64), "block": np.array([2, 2], np.int64)}
_UNPOOL = [("x", _F, [1, 1, 2, 2]), ("i", _I64, [1, 1, 2, 2])]
_RESIZE = {"roi": np.array([], np.float32), "scales": np.array([1, 1, 2, 2], np.float32)}
_TFIDF = dict(mode="TF", min_gram_length=1, max_gram_length=1, max_skip_count=0, ngram_counts=[0],
              ngram_indexes=[0], pool_int64s=[1])
_SEQUENCE = [("x", _F, [2, 1, 3])]
_SCAN_BODY = helper.make_graph([helper.make_node("Identity", ["state"], ["next"])], "body",
                               [helper.make_tensor_value_info("state", _F, [3])],
                               [helper.make_tensor_value_info("next", _F, [3])])


def _recurrent(gates: int, directions: int = 1) -> dict:
    return {"W": np.ones((directions, gates * 2, 3), np.float32),
            "R": np.ones((directions, gates * 2, 2), np.float32)}


_KERNEL_ATTRIBUTE_CASES = [
    ("LRN", 20, _IMAGE, {}, [_F], dict(size=2), dict(size=3),
     "size 2 is not a positive odd number", r"size_ % 2 == 1"),
    ("LRN", 20, _IMAGE, {}, [_F], dict(size=-1), dict(size=1),
     "size -1 is not a positive odd number", r"size_ > 0"),
    ("LRN", 20, _IMAGE, {}, [_F], dict(size=3, alpha=0.0), dict(size=3, alpha=1e-4),
     "alpha 0 is not positive", r"alpha_ > 0"),
    ("LRN", 20, _IMAGE, {}, [_F], dict(size=3, beta=-0.5), dict(size=3, beta=0.75),
     "beta -0.5 is not positive", r"beta_ > 0"),
    ("LpNormalization", 20, _IMAGE, {}, [_F], dict(p=3), dict(p=1),
     "p 3 is neither 1 nor 2", r"p_ == 1 \|\| p_ == 2"),
    ("Mod", 20, [("a", _F, [4]), ("b", _F, [4])], {}, [_F], dict(fmod=2), dict(fmod=1),
     "fmod 2 is neither 0 nor 1", "fmod must have value either 0 or 1"),
    ("BitShift", 20, [("a", TensorProto.UINT8, [4]), ("b", TensorProto.UINT8, [4])], {},
     [TensorProto.UINT8], dict(direction="left"), dict(direction="LEFT"),
     "direction 'left' is neither 'LEFT' nor 'RIGHT'", "Invalid direction value of 'left'"),
    ("NonMaxSuppression", 20, [("boxes", _F, [1, 3, 4]), ("scores", _F, [1, 1, 3])], {}, [_I64],
     dict(center_point_box=2), dict(center_point_box=1),
     "center_point_box 2 is neither 0 nor 1", "center_point_box only support 0 or 1"),
    ("RoiAlign", 20, _ROIS, {}, [_F], dict(mode="mean"), dict(mode="max"),
     "mode 'mean' is neither 'avg' nor 'max'", "Invalid mode of value mean"),
    ("RoiAlign", 20, _ROIS, {}, [_F], dict(sampling_ratio=-1), dict(sampling_ratio=0),
     "sampling_ratio -1 is negative", "Sampling ratio should be >=0"),
    ("MaxRoiPool", 20, [("x", _F, [1, 4, 6, 6]), ("r", _F, [2, 5])], {}, [_F],
     dict(pooled_shape=[2, 2], spatial_scale=0.0), dict(pooled_shape=[2, 2], spatial_scale=0.5),
     "spatial_scale 0 is not positive", r"spatial_scale_ > 0"),
    ("DepthToSpace", 20, _IMAGE, {}, [_F], dict(blocksize=2, mode="dcr"),
     dict(blocksize=2, mode="CRD"), "mode 'dcr' is neither 'DCR' nor 'CRD'",
     "only 'DCR' and 'CRD' modes are supported"),
    ("Resize", 19, _IMAGE, _RESIZE, [_F], dict(mode="LINEAR"), dict(mode="linear"),
     "mode 'LINEAR' is none of 'nearest', 'linear' and 'cubic'", "mode attribute is LINEAR"),
    ("Resize", 19, _IMAGE, _RESIZE, [_F], dict(coordinate_transformation_mode="half"),
     dict(coordinate_transformation_mode="half_pixel_symmetric"),
     "coordinate_transformation_mode 'half' is not a mode onnxruntime knows",
     r"coordinate_transform_mode:\[half\] is not supported"),
    ("Resize", 19, _IMAGE, _RESIZE, [_F], dict(nearest_mode="simple"),
     dict(mode="linear", nearest_mode="simple"),
     "nearest_mode 'simple' is not a mode onnxruntime knows",
     r"nearest_mode:\[simple\] is not supported"),
    ("Resize", 19, _IMAGE, _RESIZE, [_F], dict(antialias=1), dict(mode="cubic", antialias=-1),
     "antialias 1 is set though its mode is neither 'linear' nor 'cubic'",
     "when anti-aliasing is set, Resize only supports mode `LINEAR` and `CUBIC`"),
    ("Resize", 19, _IMAGE, _RESIZE, [_F], dict(mode="linear", exclude_outside=1),
     dict(mode="linear", exclude_outside=1, antialias=1),
     "exclude_outside 1 is set though its mode is neither 'cubic' nor an antialiased 'linear'",
     "exclude_outside can be set to 1 when"),
    ("Upsample", 9, _IMAGE, {"scales": np.array([1, 1, 2, 2], np.float32)}, [_F],
     dict(mode="bilinear"), dict(mode="linear"),
     "mode 'bilinear' is none of 'nearest', 'linear' and 'cubic'", "mode attribute is bilinear"),
    ("Upsample", 7, _IMAGE, {}, [_F], dict(scales=[1.0, 1.0, 0.5, 2.0]),
     dict(scales=[1.0, 1.0, 1.0, 2.0]), "scales [1, 1, 0.5, 2] has a scale below 1",
     "Scale value should be greater than or equal to 1"),
    ("Upsample", 7, _IMAGE, {}, [_F], dict(mode="linear", scales=[2.0, 1.0, 2.0, 2.0]),
     dict(mode="linear", scales=[1.0, 2.0, 2.0, 1.0]),
     "scales [2, 1, 2, 2] are not ones onnxruntime's Upsample takes in its mode",
     "'Linear' mode only supports"),
    ("Upsample", 7, _IMAGE, {}, [_F], dict(mode="cubic", scales=[1.0, 2.0, 2.0, 2.0]),
     dict(mode="cubic", scales=[1.0, 1.0, 2.0, 2.0]),
     "scales [1, 2, 2, 2] are not ones onnxruntime's Upsample takes in its mode",
     "'Cubic' mode only supports"),
    ("Pad", 18, _IMAGE, {"pads": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)}, [_F],
     dict(mode="symmetric"), dict(mode="wrap"),
     "mode 'symmetric' is none of 'constant', 'reflect', 'edge' and 'wrap'",
     "Invalid 'mode' attribute value"),
    ("GridSample", 16, _GRID, {}, [_F], dict(mode="linear"), dict(mode="bicubic"),
     "mode 'linear' is none of 'bilinear', 'nearest' and 'bicubic'",
     'mode "linear" not supported, expect bilinear, nearest or bicubic'),
    ("GridSample", 20, _GRID, {}, [_F], dict(mode="bilinear"), dict(mode="cubic"),
     "mode 'bilinear' is none of 'linear', 'nearest' and 'cubic'",
     'mode "bilinear" not supported, expect linear, nearest or cubic'),
    ("GridSample", 20, _GRID, {}, [_F], dict(padding_mode="zero"), dict(padding_mode="border"),
     "padding_mode 'zero' is none of 'zeros', 'border' and 'reflection'",
     'padding_mode "zero" not supported'),
    ("CumSum", 20, [("x", _F, [4])], {"axis": np.array(0, np.int64)}, [_F], dict(exclusive=2),
     dict(exclusive=1), "exclusive 2 is neither 0 nor 1", "attribute exclusive can only be 0 or 1"),
    ("CumSum", 20, [("x", _F, [4])], {"axis": np.array(0, np.int64)}, [_F], dict(reverse=-1),
     dict(reverse=1), "reverse -1 is neither 0 nor 1", "attribute reverse can only be 0 or 1"),
    ("CumProd", 26, [("x", _F, [4])], {"axis": np.array(0, np.int64)}, [_F], dict(exclusive=2),
     dict(exclusive=1), "exclusive 2 is neither 0 nor 1", "exclusive attribute must be 0 or 1"),
    ("TensorScatter", 24, [("past", _F, [1, 2, 4, 3]), ("update", _F, [1, 2, 1, 3])], {}, [_F],
     dict(mode="ring"), dict(mode="circular"), "mode 'ring' is neither 'linear' nor 'circular'",
     "mode must be 'linear' or 'circular'"),
    ("ReverseSequence", 20, [("x", _F, [3, 4, 5]), ("lengths", _I64, [4])], {}, [_F],
     dict(batch_axis=2, time_axis=0), dict(batch_axis=1, time_axis=0),
     "batch_axis 2 is neither 0 nor 1", "Invalid batch_axis of 2"),
    ("ReverseSequence", 20, [("x", _F, [3, 4, 5]), ("lengths", _I64, [3])], {}, [_F],
     dict(batch_axis=0), dict(batch_axis=0, time_axis=1),
     "batch_axis 0 is its time_axis as well", "time_axis and batch_axis must have different values"),
    ("Col2Im", 18, _COLUMNS, _COL2IM_SIZES, [_F], dict(dilations=[0, 1]), dict(dilations=[1, 1]),
     "dilations [0, 1] are not all positive", "All dilation values must be positive"),
    ("Col2Im", 18, _COLUMNS, _COL2IM_SIZES, [_F], dict(strides=[1, 0]), dict(strides=[1, 1]),
     "strides [1, 0] are not all positive", "All stride values must be positive"),
    ("MaxUnpool", 20, _UNPOOL, {}, [_F], dict(kernel_shape=[2, 2], strides=[0, 2]),
     dict(kernel_shape=[2, 2], strides=[2, 2]), "strides [0, 2] are not all positive",
     "All stride values must be positive"),
    ("MaxUnpool", 20, _UNPOOL, {}, [_F], dict(kernel_shape=[2, 2], pads=[2, 0, 0, 0]),
     dict(kernel_shape=[2, 2], pads=[1, 0, 0, 0]),
     "pads [2, 0, 0, 0] are not all smaller than its kernel_shape [2, 2]",
     "Pad should be smaller than kernel"),
    ("Scan", 16, [("x", _F, [2, 3])], {}, [_F],
     dict(body=_SCAN_BODY, num_scan_inputs=1, scan_input_directions=[2]),
     dict(body=_SCAN_BODY, num_scan_inputs=1, scan_input_directions=[1]),
     "scan_input_directions [2] are not all 0 (forward) or 1 (reverse)",
     "Invalid values in 'scan_input_directions'"),
    ("Scan", 16, [("x", _F, [2, 3])], {}, [_F],
     dict(body=_SCAN_BODY, num_scan_inputs=1, scan_output_directions=[-1]),
     dict(body=_SCAN_BODY, num_scan_inputs=1, scan_output_directions=[0]),
     "scan_output_directions [-1] are not all 0 (forward) or 1 (reverse)",
     "Invalid values in 'scan_output_directions'"),
    ("StringNormalizer", 20, [("x", TensorProto.STRING, [3])], {}, [TensorProto.STRING],
     dict(case_change_action="lower"), dict(case_change_action="NONE"),
     "case_change_action 'lower' is none of 'LOWER', 'UPPER' and 'NONE'",
     "attribute case_change_action has invalid value"),
    ("TfIdfVectorizer", 20, [("x", _I64, [4])], {}, [_F], {**_TFIDF, "mode": "TF-IDF"}, _TFIDF,
     "mode 'TF-IDF' is none of 'TF', 'IDF' and 'TFIDF'", "mode: TF-IDF is unrecognized"),
    ("TfIdfVectorizer", 20, [("x", _I64, [4])], {}, [_F], {**_TFIDF, "min_gram_length": 0},
     _TFIDF, "min_gram_length 0 is not positive", "min_gram_length must be positive"),
    ("TfIdfVectorizer", 20, [("x", _I64, [4])], {}, [_F], {**_TFIDF, "min_gram_length": 2},
     _TFIDF, "max_gram_length 1 is below its min_gram_length", "min_gram_length >= max_gram_length"),
    ("TfIdfVectorizer", 20, [("x", _I64, [4])], {}, [_F], {**_TFIDF, "max_skip_count": -1},
     _TFIDF, "max_skip_count -1 is negative", "max_skip_count must be non-negative"),
    ("TfIdfVectorizer", 20, [("x", _I64, [4])], {}, [_F], {**_TFIDF, "weights": [1.0, 2.0]},
     {**_TFIDF, "weights": [2.0]}, "weights [1, 2] are not as many as its ngram_indexes",
     "Got weights of size: 2 but ngram_indexes size: 1"),
    ("DequantizeLinear", 21, [("x", TensorProto.UINT8, [4, 4])],
     {"scale": np.ones((2, 4), np.float32)}, [_F], dict(axis=0, block_size=-1),
     dict(axis=0, block_size=2), "block_size -1 is negative", "'block_size' must be non-negative"),
    ("QuantizeLinear", 21, [("x", _F, [4, 4])], {"scale": np.ones((2, 4), np.float32)},
     [TensorProto.UINT8], dict(axis=0, block_size=-2), dict(axis=0, block_size=2),
     "block_size -2 is negative", "'block_size' must be non-negative"),
    ("ConstantOfShape", 20, [("shape", _I64, [1])], {}, [_F],
     dict(value=numpy_helper.from_array(np.array([1, 2], np.float32))),
     dict(value=numpy_helper.from_array(np.array([1], np.float32))),
     "value (a tensor of shape [2]) is not a tensor of one element",
     "must be a single-element tensor"),
    ("RNN", 14, _SEQUENCE, _recurrent(1), [_F], dict(hidden_size=2, direction="forwards"),
     dict(hidden_size=2, direction="reverse"),
     "direction 'forwards' is none of 'forward', 'reverse' and 'bidirectional'",
     "allowed_directions"),
    ("RNN", 14, _SEQUENCE, _recurrent(1), [_F], dict(hidden_size=2, activations=["tanh"]),
     dict(hidden_size=2, activations=["Tanh"]),
     "activations ['tanh'] names an activation onnxruntime does not know",
     "Invalid activation attribute - tanh"),
    ("RNN", 14, _SEQUENCE, _recurrent(1, 2), [_F],
     dict(hidden_size=2, direction="bidirectional", activations=["Tanh"]),
     dict(hidden_size=2, direction="bidirectional", activations=["Tanh", "Relu"]),
     "activations ['Tanh'] are not 1 per direction", r"activations_.size\(\)"),
    ("GRU", 14, _SEQUENCE, _recurrent(3), [_F], dict(hidden_size=-2), dict(hidden_size=2),
     "hidden_size -2 is not positive", r'GetAttr\("hidden_size", &int64_value\).IsOK\(\) && int64_value > 0'),
    ("LSTM", 14, _SEQUENCE, _recurrent(4), [_F], dict(hidden_size=0), dict(hidden_size=2),
     "hidden_size 0 is not positive", "int64_value > 0"),
    ("GRU", 14, _SEQUENCE, _recurrent(3), [_F], dict(hidden_size=2, clip=0.0),
     dict(hidden_size=2, clip=1.0), "clip 0 is not positive", r"clip_ > 0"),
    ("GRU", 14, _SEQUENCE, _recurrent(3), [_F], dict(hidden_size=2, activations=["Junk", "Tanh"]),
     dict(hidden_size=2, activations=["sigmoid", "Tanh"]),
     "activations ['Junk', 'Tanh'] names an activation onnxruntime does not know", "Got Junk"),
    ("LSTM", 14, _SEQUENCE, _recurrent(4), [_F], dict(hidden_size=2, activations=["Tanh"] * 2),
     dict(hidden_size=2, activations=["Sigmoid", "Tanh", "Tanh"]),
     "activations ['Tanh', 'Tanh'] are not 3 per direction", r"activation_func_names.size\(\)"),
]


def _one_node(op, opset, inputs, initializers, outputs, attributes) -> onnx.ModelProto:
    inits = [numpy_helper.from_array(array, name) for name, array in initializers.items()]
    node = helper.make_node(op, [name for name, _, _ in inputs] + list(initializers),
                            [f"y{i}" for i in range(len(outputs))], name="n", **attributes)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(*i) for i in inputs],
        [helper.make_tensor_value_info(f"y{i}", t, None) for i, t in enumerate(outputs)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
    # The outputs declared as ONNX infers them (onnx's full check wants their shapes declared).
    model.graph.ClearField("output")
    model.graph.output.extend(onnx.shape_inference.infer_shapes(model).graph.output)
    return model


_CASE_IDS = [f"{case[0]}-{case[7].split(' ')[0]}-{i}" for i, case in enumerate(_KERNEL_ATTRIBUTE_CASES)]


@pytest.mark.parametrize("op, opset, inputs, inits, outputs, bad, good, ours, theirs",
                         _KERNEL_ATTRIBUTE_CASES, ids=_CASE_IDS)
def test_an_attribute_value_onnxruntime_s_kernel_refuses_at_load_is_refused_naming_the_node(
        op, opset, inputs, inits, outputs, bad, good, ours, theirs, tmp_path, capsys):
    if opset > onnx.defs.onnx_opset_version():  # the floor's onnx (1.19) knows no CumProd
        pytest.skip(f"onnx {onnx.__version__} has no opset {opset}")
    path = tmp_path / "m.onnx"
    onnx.save(_one_node(op, opset, inputs, inits, outputs, bad), path)
    assert main(["count", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"onnxflops: error: node 'n' ({op}): {ours}, which onnxruntime refuses at load"]
    onnx.save(_one_node(op, opset, inputs, inits, outputs, good), path)
    assert main(["count", str(path)]) in (0, 1)  # counted, or a partial count; never refused
    assert "error" not in capsys.readouterr().err


@pytest.mark.parametrize("op, opset, inputs, inits, outputs, bad, good, ours, theirs",
                         _KERNEL_ATTRIBUTE_CASES, ids=_CASE_IDS)
def test_onnxruntime_s_kernel_refuses_the_attribute_value_and_onnx_takes_it(
        op, opset, inputs, inits, outputs, bad, good, ours, theirs):
    ort = pytest.importorskip("onnxruntime")
    model = _one_node(op, opset, inputs, inits, outputs, bad)
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)
    options = ort.SessionOptions()
    options.log_severity_level = 4
    with pytest.raises(Exception, match=theirs):
        ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    ort.InferenceSession(_one_node(op, opset, inputs, inits, outputs, good).SerializeToString(),
                         options, providers=["CPUExecutionProvider"])
