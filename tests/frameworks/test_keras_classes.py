"""Keras model classes that once counted wrong, each on a tiny model derived by hand and checked
against the Keras oracle (tests/helpers/oracles.py), which never goes through ONNX."""

from __future__ import annotations

import pytest

import onnxflops
from helpers import keras_oracle

keras = pytest.importorskip("keras")
L = keras.layers


def counted_and_oracle(model, inputs=None):
    report = onnxflops.count(model, inputs, strict=True)
    return report.total, keras_oracle(model, inputs)


def assert_agree(total, oracle):
    assert (total.macs, total.params, total.unused_params, total.buffers) == \
        (oracle.macs, oracle.params - oracle.unused_params, oracle.unused_params, oracle.buffers)


def test_batch_norm_without_its_scale_or_offset_keeps_the_convolutions_weights():
    """Inception-style scale=False: left to arithmetic, TensorFlow folded the normalization into
    the convolution before it, and both convolutions' weights were lost."""
    i = keras.Input((8, 8, 3))
    x = L.Conv2D(4, 3, use_bias=False)(i)  # 6·6·4 outputs · 3·3·3 = 3,888 MACs; 108 params
    x = L.BatchNormalization(scale=False)(x)  # beta 4; mean, variance 4 + 4
    x = L.Conv2D(5, 1)(x)  # 6·6·5 · 4 = 720 MACs; 20 + 5 params
    x = L.BatchNormalization(center=False)(x)  # gamma 5; mean, variance 5 + 5
    total, oracle = counted_and_oracle(keras.Model(i, x))
    assert (total.macs, total.params, total.buffers) == (3888 + 720, 108 + 4 + 25 + 5, 8 + 10)
    assert_agree(total, oracle)


def test_a_grouped_convolution_converts():
    """Keras compiles grouped convolutions with XLA, a call tf2onnx could not convert."""
    i = keras.Input((8, 8, 4))
    x = L.Conv2D(6, 3, groups=2, padding="same")(i)  # 8·8·6 outputs · (4/2)·3·3 = 6,912
    x = L.Conv1D(4, 3, groups=2)(L.Reshape((64, 6))(x))  # 62·4 outputs · (6/2)·3 = 2,232
    total, oracle = counted_and_oracle(keras.Model(i, x))
    # params: 3·3·2·6 + 6 = 114; 3·3·4 + 4 = 40
    assert (total.macs, total.params) == (6912 + 2232, 114 + 40)
    assert_agree(total, oracle)


def test_fourier_transforms_convert_to_dft_and_compute_what_keras_does():
    """FNet mixes tokens with the real part of keras.ops.fft2: TensorFlow's Complex, FFT2D and
    Real, none of which tf2onnx converted. As ONNX DFTs over (real, imaginary) pairs they count
    an FFT's FLOPs (no MACs) and compute what Keras does."""
    import numpy as np
    import onnxruntime

    from onnxflops.converters import keras_to_onnx

    class Mixing(L.Layer):
        def call(self, x):
            real, _ = keras.ops.fft2((x, keras.ops.zeros_like(x)))
            return real

    i = keras.Input((8, 4))
    model = keras.Model(i, Mixing()(i))
    proto = keras_to_onnx(model, keep_weights=True)
    assert sorted(n.op_type for n in proto.graph.node if n.op_type == "DFT") == ["DFT", "DFT"]
    report = onnxflops.count(proto, strict=True)
    # two transforms: 4 of length 8 (5·8·3 FLOPs each), then 8 of length 4 (5·4·2)
    assert [n.flops for n in report.nodes if n.op_type == "DFT"] == [4 * 120, 8 * 40]
    assert report.total.macs == 0
    x = np.random.default_rng(0).standard_normal((1, 8, 4)).astype("float32")
    session = onnxruntime.InferenceSession(proto.SerializeToString())
    (out,) = session.run(None, {session.get_inputs()[0].name: x})
    np.testing.assert_allclose(out, np.real(np.fft.fft2(x)), rtol=1e-4, atol=1e-4)


class _Recurrence(L.Layer):
    """s_t = s_(t-1) @ W + x_t, each s_t written to a TensorArray by a Python loop over the
    `steps` it writes (RWKV-7's time mixing in keras-hub is written so), then stacked."""

    def __init__(self, steps=None, **kwargs):
        super().__init__(**kwargs)
        self.steps = steps

    def build(self, shape):
        self.w = self.add_weight(shape=(shape[-1], shape[-1]), name="w")

    def call(self, x):
        import tensorflow as tf

        steps = self.steps or range(x.shape[1])
        state = keras.ops.zeros_like(x[:, 0, :])
        out = tf.TensorArray(x.dtype, size=x.shape[1])
        for t in steps:
            state = keras.ops.matmul(state, self.w) + x[:, t, :]
            out = out.write(t, state)
        return keras.ops.transpose(out.stack(), [1, 0, 2])


def test_a_tensor_array_a_python_loop_fills_converts_and_computes_what_keras_does():
    """tf2onnx converted TensorLists only as a While loop's state: a TensorArray written at
    constant indices and stacked (RWKV-7) was refused. It is the stack of what was written."""
    import numpy as np
    import onnxruntime

    from onnxflops.converters import keras_to_onnx

    i = keras.Input((3, 4))
    model = keras.Model(i, L.Dense(2)(_Recurrence()(i)))
    total, oracle = counted_and_oracle(model)
    # 3 steps of (1·4)·(4·4) = 16 MACs; the dense layer 3 rows · 4 · 2 = 24; params 16 + 8 + 2
    assert (total.macs, total.params) == (3 * 16 + 24, 16 + 10)
    assert_agree(total, oracle)
    proto = keras_to_onnx(model, keep_weights=True)
    x = np.random.default_rng(0).standard_normal((1, 3, 4)).astype("float32")
    session = onnxruntime.InferenceSession(proto.SerializeToString())
    (out,) = session.run(None, {session.get_inputs()[0].name: x})
    np.testing.assert_allclose(out, keras.ops.convert_to_numpy(model(x)), rtol=1e-5, atol=1e-5)


def test_a_tensor_array_stacked_before_every_item_is_written_is_refused_by_name():
    """Item 1 never written: TensorFlow stacks zeros there; the rewrite leaves such a list alone
    and the refusal names its op."""
    i = keras.Input((3, 4))
    model = keras.Model(i, _Recurrence(steps=(0, 2))(i))
    with pytest.raises(onnxflops.OnnxFlopsError, match="TensorList.* has no ONNX conversion"):
        onnxflops.count(model, strict=True)


@pytest.mark.parametrize("value, dtype, want", [
    (7, "int32", 7), (7, "int64", 7), (-3, "int32", -3), (0, "int32", 0), (2.0, "float32", None),
    ([1, 2], "int32", None)])
def test_a_list_index_is_read_from_a_scalar_integer_constant_only(value, dtype, want):
    """A TensorList's index or size is a scalar integer Const, however TensorFlow writes it
    (int_val, int64_val, raw bytes, or no value for zero); a float or a vector is no index."""
    import numpy as np
    from tensorflow.core.framework import node_def_pb2
    from tensorflow.python.framework import tensor_util

    from onnxflops.converters.tensor_lists import _constant_int

    node = node_def_pb2.NodeDef(name="c", op="Const")
    node.attr["value"].tensor.CopyFrom(tensor_util.make_tensor_proto(np.array(value, dtype)))
    raw = node_def_pb2.NodeDef(name="raw", op="Const")
    raw.attr["value"].tensor.CopyFrom(tensor_util.make_tensor_proto(np.array(value, dtype)))
    raw.attr["value"].tensor.tensor_content = np.array(value, dtype).tobytes()
    raw.attr["value"].tensor.ClearField("int_val")
    raw.attr["value"].tensor.ClearField("int64_val")
    raw.attr["value"].tensor.ClearField("float_val")
    nodes = {"c": node, "raw": raw}
    assert _constant_int(nodes, "c:0") == _constant_int(nodes, "raw") == want


def test_a_layer_applied_twice_to_one_tensor_is_computed_twice():
    """tf2onnx merged nodes of one op on the same inputs: PARSeq's decoder projects the same
    keys for both of its streams, and the count was one projection short of Keras's (and of
    torch's exporter, which keeps both)."""
    i = keras.Input((3, 4))
    dense = L.Dense(5)
    total, oracle = counted_and_oracle(keras.Model(i, dense(i) * dense(i)))
    # twice 3 rows · 4 · 5 = 60 MACs; 2 × 15 bias adds + 15 products; params 20 + 5
    assert (total.macs, total.flops, total.params) == (2 * 60, 2 * 120 + 2 * 15 + 15, 25)
    assert_agree(total, oracle)


def test_normalization_statistics_are_buffers_and_unread_weights_unused_params():
    """A Normalization layer reads its mean and variance from a snapshot TensorFlow folds into
    constants, and never its count: all three are buffers, as Keras's non-trainable weights. A
    weight the forward pass never reads is an unused param."""
    class Spare(L.Layer):
        def build(self, shape):
            self.spare = self.add_weight(shape=(7, 3), name="spare")  # never read
            self.kernel = self.add_weight(shape=(shape[-1], 2), name="kernel")

        def call(self, x):
            return keras.ops.matmul(x, self.kernel)

    i = keras.Input((4, 4, 3))
    x = Spare()(L.Normalization()(i))  # 16 rows · 3 · 2 = 96 MACs
    total, oracle = counted_and_oracle(keras.Model(i, x))
    assert (total.macs, total.params, total.unused_params, total.buffers) == (96, 6, 21, 3 + 3 + 1)
    assert_agree(total, oracle)


def test_a_scale_read_as_one_plus_it_is_a_param():
    """RMSNorm written x·(1 + scale) (keras-hub's Gemma): 1 + scale is work on a weight that the
    model does in every call, as HF's Gemma does; tf2onnx's optimizer folded it into a new
    constant (its values followed the scale's stand-ins, so the param was kept, not the work)."""
    class OnePlusScale(L.Layer):
        def build(self, shape):
            self.scale = self.add_weight(shape=(shape[-1],), initializer="zeros", name="scale")

        def call(self, x):
            return x * (1 + self.scale)

    i = keras.Input((5, 16))
    x = L.Dense(3)(OnePlusScale()(i))  # 5 rows · 16 · 3 = 240 MACs
    total, oracle = counted_and_oracle(keras.Model(i, x))
    assert (total.macs, total.params, total.unused_params) == (240, 16 + 48 + 3, 0)
    assert_agree(total, oracle)
    # 16 adds of 1 + scale (foldable), 5 · 16 products, 15 bias adds, 2 · 240 of the dense layer
    assert (total.flops, onnxflops.count(keras.Model(i, x)).foldable.flops) == (
        16 + 80 + 15 + 480, 16)


def test_an_open_input_binds_by_its_layers_name_or_its_tensors():
    """A builder that names no input (MobileNetV3) leaves 'input_layer' in model.summary() and
    'keras_tensor' on the tensor: either binds it."""
    i = keras.Input((None, None, 3))
    model = keras.Model(i, L.Conv2D(2, 3)(i))
    layer_name = model.layers[0].name
    assert layer_name != i.name
    for name in (layer_name, i.name):  # 6·6·2 outputs · 3·3·3 = 1,944
        assert onnxflops.count(model, {name: (1, 8, 8, 3)}).total.macs == 1944
    with pytest.raises(onnxflops.OnnxFlopsError, match=f"input '{i.name}' \\(its layer: "
                       f"'{layer_name}'\\) has unknown dim 1"):
        onnxflops.count(model)


def test_weight_only_work_keeps_its_work_and_its_weights():
    """A relative-position table projected by a weight depends on weights only: Grappler folded it
    into one constant, and its MACs and both weights were lost (DeBERTa-v3, XLNet). Kept, the
    work is counted and reported as foldable."""
    class Positions(L.Layer):
        def build(self, shape):
            self.table = self.add_weight(shape=(8, 16), name="table")
            self.kernel = self.add_weight(shape=(16, 16), name="kernel")

        def call(self, x):
            return x + keras.ops.matmul(self.table, self.kernel)  # 8 rows · 16 · 16 = 2,048

    i = keras.Input((8, 16))
    report = onnxflops.count(keras.Model(i, Positions()(i)), strict=True)
    assert (report.total.macs, report.foldable.macs) == (2048, 2048)
    assert report.total.params == 8 * 16 + 16 * 16
    assert_agree(report.total, keras_oracle(keras.Model(i, Positions()(i))))


def test_two_weights_of_one_path_are_both_params():
    """keras-hub's T5 names its encoder's and its decoder's relative-position tables alike: keyed
    by path, one hid the other (128 params short)."""
    class Table(L.Layer):
        def build(self, shape):
            self.table = self.add_weight(shape=(shape[-1], 3), name="table")

        def call(self, x):
            return keras.ops.matmul(x, self.table)  # 4 rows · 5 · 3 = 60 MACs

    class Twice(L.Layer):  # a layer may hold two of one name; a functional model may not
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.first, self.second = Table(name="same"), Table(name="same")
            self.dense = L.Dense(5, bias_initializer="random_normal")  # values name it

        def call(self, x):
            return self.second(self.dense(self.first(x)))  # Dense: 4 · 3 · 5 = 60, 15 + 5 params

    i = keras.Input((4, 5))
    model = keras.Model(i, Twice()(i))
    tables = [w.path for w in model.weights if w.path.endswith("table")]
    assert len(tables) == 2 and len(set(tables)) == 1
    total, oracle = counted_and_oracle(model)
    assert (total.macs, total.params, total.unused_params) == (180, 15 + 20 + 15, 0)
    assert_agree(total, oracle)
    # Converted with its real weights (`convert`, `profile`), the record keys them alike too.
    from onnxflops.converters import keras_to_onnx

    kept = onnxflops.count(keras_to_onnx(model, keep_weights=True), strict=True).total
    assert (kept.macs, kept.params, kept.unused_params) == (180, 15 + 20 + 15, 0)


def test_a_concatenation_of_weights_keeps_both_weights():
    """SAM3's decoder concatenates its query and presence embeddings into one table: tf2onnx's
    optimizer folded the Concat of the two into a new constant, and the weights' roles were
    lost (here 16 params and 8 unused were counted). Kept, the table is the two weights:
    2·8 + 1·8 = 24 params, none unused; 4 rows · 8 · 3 = 96 MACs against it. No fast test
    reaches it: tf2onnx imports TensorFlow."""
    class Table(L.Layer):
        def build(self, shape):
            self.queries = self.add_weight(shape=(2, shape[-1]), name="queries")
            self.presence = self.add_weight(shape=(1, shape[-1]), name="presence")

        def call(self, x):
            table = keras.ops.concatenate([self.queries, self.presence], axis=0)
            return keras.ops.matmul(x, keras.ops.transpose(table))

    i = keras.Input((4, 8))
    total, oracle = counted_and_oracle(keras.Model(i, Table()(i)))
    assert (total.macs, total.params, total.unused_params) == (96, 24, 0)
    assert_agree(total, oracle)
