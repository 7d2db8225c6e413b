"""The Keras oracle walks a model's layers, nested ones included, and derives each contraction's
MACs from its config and shapes: checked here by hand on tiny models, never through ONNX."""

from __future__ import annotations

import pytest

from helpers import keras_oracle

keras = pytest.importorskip("keras")
L = keras.layers


def test_convolutions_of_every_kind():
    i = keras.Input((16, 16, 8))
    x = L.Conv2D(16, 3, groups=2, padding="same", name="conv2d")(i)  # 16·16·16 outputs · (8/2)·9
    x = L.DepthwiseConv2D(3, name="depthwise_conv2d")(x)  # 14·14·16 outputs · 9
    x = L.SeparableConv2D(8, 3, name="separable_conv2d")(x)  # 12·12 · (16·9 depthwise + 16·8 pointwise)
    x = L.Conv2DTranspose(4, 2, strides=2, name="conv2d_transpose")(x)  # 12·12·8 inputs · 4 · 2·2
    x = L.Conv1D(6, 3, name="conv1d")(L.Reshape((24 * 24, 4))(x))  # 574·6 outputs · 4·3
    oracle = keras_oracle(keras.Model(i, x))
    assert oracle.by_layer == {
        "conv2d": 4096 * 4 * 9, "depthwise_conv2d": 14 * 14 * 16 * 9,
        "separable_conv2d": 144 * (16 * 9 + 16 * 8), "conv2d_transpose": 1152 * 4 * 4,
        "conv1d": 574 * 6 * 12}
    # params: 3·3·4·16 + 16, 3·3·16 + 16, 3·3·16 + 16·8 + 8, 2·2·8·4 + 4, 3·4·6 + 6
    assert oracle.params == 592 + 160 + 280 + 132 + 78 and oracle.buffers == 0


def test_dense_attention_and_recurrent_layers_nested_in_a_model():
    i = keras.Input((10, 4))
    x = L.Dense(8)(i)  # 10 rows · 4 · 8
    x = L.MultiHeadAttention(2, 4, value_dim=3, name="attention")(x, x)  # projections: EinsumDense layers
    inner = keras.Sequential([keras.Input((10, 8)), L.LSTM(5, return_sequences=True)])
    x = inner(x)  # a model inside the model: 10 steps · 4 gates · 5 · (8 + 5)
    x = L.Bidirectional(L.GRU(3))(x)  # two GRUs: 10 steps · 3 gates · 3 · (5 + 3)
    x = L.BatchNormalization()(x)
    oracle = keras_oracle(keras.Model(i, x))
    heads = 2 * (10 * 10 * 4 + 10 * 10 * 3)  # scores with key dim 4, context with value dim 3
    projections = 10 * 8 * 2 * 4 * 2 + 10 * 8 * 2 * 3 + 10 * 2 * 3 * 8  # q, k; v; output
    lstm, gru = 10 * 4 * 5 * 13, 10 * 3 * 3 * 8
    assert oracle.macs == 320 + heads + projections + lstm + 2 * gru
    assert oracle.by_layer["attention"] == heads
    assert oracle.buffers == 2 * 6  # BatchNormalization's moving mean and variance
    assert oracle.unused_params == 0


def test_products_inside_a_custom_layer_and_weights_it_never_reads():
    class Scores(L.Layer):
        def build(self, shape):
            self.spare = self.add_weight(shape=(7, 3), name="spare")  # never read

        def call(self, x):
            return keras.ops.einsum("btd,bsd->bts", x, x)  # 6·6·4 per batch row

    i = keras.Input((6, 4))
    oracle = keras_oracle(keras.Model(i, Scores()(i)), {i.name: (2, 6, 4)})
    assert oracle.macs == 2 * 6 * 6 * 4
    assert (oracle.params, oracle.unused_params) == (21, 21)


def test_products_taken_with_the_matmul_operator():
    """ViTDet's and SAM's attention take their scores with `@` on the traced tensors: a product
    no keras.ops call sees."""
    class Scores(L.Layer):
        def call(self, x):
            return (x @ keras.ops.transpose(x, (0, 2, 1))) @ x  # 6·4·6, then 6·6·4 per row

    i = keras.Input((6, 4))
    oracle = keras_oracle(keras.Model(i, Scores(name="scores")(i)), {i.name: (2, 6, 4)})
    assert oracle.macs == 2 * (6 * 4 * 6 + 6 * 6 * 4)
    assert oracle.by_layer == {"scores/__matmul__": oracle.macs}


def test_work_no_output_uses_is_not_counted_nor_the_weights_only_it_reads():
    """Qwen3.5's gated delta rule updates its state after the last chunk and returns it only on
    request; DeepLabV3 reads its encoder up to P4 and the stage past it is never run."""
    class StateAfterTheLastStep(L.Layer):
        def build(self, shape):
            self.state = self.add_weight(shape=(4, 3), name="state")  # read only by dead work

        def call(self, x):
            final_state = keras.ops.matmul(x, self.state)  # 6·4·3, never returned
            del final_state
            return keras.ops.einsum("btd,bsd->bts", x, x)  # 6·6·4

    i = keras.Input((6, 4))
    unused_stage = L.Dense(5, name="dense")  # 6·4·5, its output unused
    unused_stage(i)
    oracle = keras_oracle(keras.Model(i, StateAfterTheLastStep(name="step")(i)))
    assert oracle.by_layer == {"step/einsum": 6 * 6 * 4}
    assert (oracle.params, oracle.unused_params) == (12, 12)


def test_convolutions_a_custom_layer_takes_with_keras_ops():
    """Qwen3.5's causal conv is `keras.ops.depthwise_conv` inside its attention layer."""
    class Convolutions(L.Layer):
        def call(self, x):
            depthwise = keras.ops.depthwise_conv(x, keras.ops.ones((3, 4, 2)))  # 8·8 out · 3
            return keras.ops.conv(depthwise, keras.ops.ones((2, 8, 5)))  # 7·5 out · 2·8

    i = keras.Input((10, 4))
    oracle = keras_oracle(keras.Model(i, Convolutions(name="convs")(i)))
    assert oracle.by_layer == {"convs/depthwise_conv": 8 * 8 * 3, "convs/conv": 7 * 5 * 2 * 8}


def test_an_attention_subclass_with_its_own_attention_step_is_counted_as_it_computes():
    """XLNet's relative attention subclasses MultiHeadAttention and scores against a longer key
    (relative positions): the formula over the key it is given would count half of it."""
    class TwiceTheKeys(L.MultiHeadAttention):
        def _compute_attention(self, query, key, value, *args, **kwargs):
            key = keras.ops.concatenate([key, key], axis=1)  # 2·4 keys per query
            value = keras.ops.concatenate([value, value], axis=1)
            scores = keras.ops.softmax(keras.ops.einsum(self._dot_product_equation, key, query))
            return keras.ops.einsum(self._combine_equation, scores, value), scores

    i = keras.Input((4, 16))
    layer = TwiceTheKeys(2, 8, name="attention")
    oracle = keras_oracle(keras.Model(i, layer(i, i)))
    # scores and context: batch 1 · heads 2 · 4 queries · 8 keys · head dim 8, each
    assert oracle.by_layer["attention/einsum"] == 2 * (2 * 4 * 8 * 8)
    # query, key, value: 4 rows · 16 · 2·8 each; output: 4 rows · 2·8 · 16
    assert oracle.macs == 1024 + 4 * 4 * 16 * 16


def test_an_outer_product_of_a_weight_is_the_matmul_of_inner_size_1_keras_runs():
    """Moonshine's rotary angles: `einsum("i,j->ij", positions, inv_freq)`, which Keras's
    TensorFlow backend runs as a (16, 1) @ (1, 4) matmul: 16 · 4 MACs where it reads a weight.
    The same product of constants alone (keras-hub's rotary table from literals) is folded
    before anything runs: 0, as the count leaves it."""
    class Angles(L.Layer):
        def __init__(self, from_weight, **kwargs):
            super().__init__(**kwargs)
            self.from_weight = from_weight

        def build(self, shape):
            self.inv_freq = self.add_weight(shape=(4,), trainable=False, name="inv_freq")

        def call(self, x):
            positions = keras.ops.cast(keras.ops.arange(keras.ops.shape(x)[1]), "float32")
            freq = self.inv_freq if self.from_weight else keras.ops.arange(4, dtype="float32")
            return x + keras.ops.sum(keras.ops.einsum("i,j->ij", positions, freq))

    i = keras.Input((16,))
    weighed = keras_oracle(keras.Model(i, Angles(True, name="angles")(i)), {i.name: (1, 16)})
    literal = keras_oracle(keras.Model(i, Angles(False, name="angles")(i)), {i.name: (1, 16)})
    assert (weighed.macs, weighed.buffers) == (16 * 4, 4)
    assert literal.macs == 0


def test_a_matmul_of_constants_alone_is_folded_free():
    """D-FINE's sin-cos position table: `ops.matmul` of (16, 1) positions, a range as long as
    the input's static side, by (1, 4) frequencies from literals, is folded before anything
    runs: 0 MACs, as the count leaves it. The same product of the input's own values is the
    (16, 1) @ (1, 4) matmul: 16 · 1 · 4 MACs."""
    class Table(L.Layer):
        def __init__(self, of_input, **kwargs):
            super().__init__(**kwargs)
            self.of_input = of_input

        def call(self, x):
            rows = x[0] if self.of_input else keras.ops.cast(
                keras.ops.arange(keras.ops.shape(x)[1]), "float32")
            freq = keras.ops.reshape(keras.ops.arange(4, dtype="float32") / 4, (1, -1))
            return x + keras.ops.sum(keras.ops.matmul(keras.ops.reshape(rows, (-1, 1)), freq))

    i = keras.Input((16,))
    assert keras_oracle(keras.Model(i, Table(False, name="table")(i)), {i.name: (1, 16)}).macs == 0
    assert keras_oracle(keras.Model(i, Table(True, name="table")(i)),
                        {i.name: (1, 16)}).macs == 16 * 1 * 4
