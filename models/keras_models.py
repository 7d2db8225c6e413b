"""The Keras half of each reference pair (channels-last, as Keras writes them).

Each builder returns a fresh keras.Model; its twin of the same name is in models/torch_models.py.
"""

from __future__ import annotations

from onnxflops.converters.common import keras_imported

keras = keras_imported()
layers = keras.layers


def seed003_conv_gru_dense() -> keras.Model:
    """Conv2D(32, 4×4, strides (1, 2), channels_first) → Reshape → GRU(96) → Dense(256)."""
    x = keras.Input((1, 100, 256), name="x")
    y = layers.Conv2D(32, (4, 4), strides=(1, 2), activation="relu", data_format="channels_first",
                      name="conv")(x)
    y = layers.Reshape((97, 32 * 127), name="reshape")(y)
    y = layers.GRU(96, reset_after=True, return_sequences=True, name="gru")(y)
    y = layers.Dense(256, activation="sigmoid", name="dense")(y)
    return keras.Model(x, y, name="seed003_conv_gru_dense")


def _on_32x32(name: str, *stack: layers.Layer) -> keras.Model:
    """Seed 001's models: a 32×32×1 input through `stack`."""
    return keras.Sequential([keras.Input((32, 32, 1), name="x"), *stack], name=name)


def seed001_input_only() -> keras.Model:
    x = keras.Input((32, 32, 1), name="x")
    return keras.Model(x, x, name="seed001_input_only")


def seed001_dense_softmax() -> keras.Model:
    return _on_32x32("seed001_dense_softmax", layers.Flatten(name="flatten"),
                     layers.Dense(1, activation="softmax", name="dense"))


def seed001_conv_dense_softmax() -> keras.Model:
    return _on_32x32("seed001_conv_dense_softmax", layers.Conv2D(1, 5, padding="same", name="conv"),
                     layers.Flatten(name="flatten"),
                     layers.Dense(1, activation="softmax", name="dense"))


def seed001_conv3() -> keras.Model:
    return _on_32x32("seed001_conv3", layers.Conv2D(1, 3, padding="same", name="conv"))


def seed001_two_convs() -> keras.Model:
    return _on_32x32("seed001_two_convs", layers.Conv2D(32, 3, padding="same", name="conv1"),
                     layers.Conv2D(1, 3, padding="same", name="conv2"))


def seed002_conv_bn_relu() -> keras.Model:
    """Conv2d(3, 2, 7, stride 2, padding 3, no bias) → BatchNorm → ReLU on 500×500."""
    x = keras.Input((500, 500, 3), name="x")
    y = layers.ZeroPadding2D(3, name="pad")(x)
    y = layers.Conv2D(2, 7, strides=2, use_bias=False, name="conv")(y)
    y = layers.BatchNormalization(epsilon=1e-5, name="bn")(y)
    y = layers.ReLU(name="relu")(y)
    return keras.Model(x, y, name="seed002_conv_bn_relu")


def mlp() -> keras.Model:
    x = keras.Input((64,), name="x")
    y = layers.Dense(128, activation="relu", name="fc1")(x)
    y = layers.Dense(64, activation="relu", name="fc2")(y)
    y = layers.Dense(10, name="fc3")(y)
    return keras.Model(x, y, name="mlp")


def lenet() -> keras.Model:
    x = keras.Input((32, 32, 1), name="x")
    y = layers.Conv2D(6, 5, activation="relu", name="conv1")(x)
    y = layers.MaxPooling2D(2, name="pool1")(y)
    y = layers.Conv2D(16, 5, activation="relu", name="conv2")(y)
    y = layers.MaxPooling2D(2, name="pool2")(y)
    y = layers.Flatten(name="flatten")(y)
    y = layers.Dense(120, activation="relu", name="fc1")(y)
    y = layers.Dense(84, activation="relu", name="fc2")(y)
    y = layers.Dense(10, name="fc3")(y)
    return keras.Model(x, y, name="lenet")


def _conv(filters: int, kernel: int, name: str) -> layers.Layer:
    return layers.Conv2D(filters, kernel, padding="same", use_bias=False, name=f"{name}_conv")


def _bn(name: str) -> layers.Layer:
    return layers.BatchNormalization(epsilon=1e-5, name=f"{name}_bn")


def resnet_bottleneck() -> keras.Model:
    """1×1 reduce → 3×3 → 1×1 expand, each with BatchNorm, plus the identity skip."""
    x = keras.Input((8, 8, 32), name="x")
    y = layers.ReLU(name="relu1")(_bn("reduce")(_conv(8, 1, "reduce")(x)))
    y = layers.ReLU(name="relu2")(_bn("spatial")(_conv(8, 3, "spatial")(y)))
    y = _bn("expand")(_conv(32, 1, "expand")(y))
    y = layers.Add(name="skip")([y, x])
    y = layers.ReLU(name="relu3")(y)
    return keras.Model(x, y, name="resnet_bottleneck")


def mobilenet_v2_block() -> keras.Model:
    """Expand 1×1 (×6) → depthwise 3×3 → project 1×1, ReLU6, with the residual add."""
    x = keras.Input((16, 16, 8), name="x")
    y = layers.ReLU(6.0, name="relu6_1")(_bn("expand")(_conv(48, 1, "expand")(x)))
    depthwise = layers.DepthwiseConv2D(3, padding="same", use_bias=False, name="depthwise_conv")
    y = layers.ReLU(6.0, name="relu6_2")(_bn("depthwise")(depthwise(y)))
    y = _bn("project")(_conv(8, 1, "project")(y))
    y = layers.Add(name="residual")([y, x])
    return keras.Model(x, y, name="mobilenet_v2_block")


def gru2() -> keras.Model:
    x = keras.Input((12, 10), name="x")
    y = layers.GRU(16, return_sequences=True, name="gru1")(x)
    y = layers.GRU(16, name="gru2")(y)
    return keras.Model(x, y, name="gru2")


def lstm2() -> keras.Model:
    x = keras.Input((12, 10), name="x")
    y = layers.LSTM(16, return_sequences=True, name="lstm1")(x)
    y = layers.LSTM(16, name="lstm2")(y)
    return keras.Model(x, y, name="lstm2")


def transformer_encoder() -> keras.Model:
    """Post-norm encoder layer: MHA(2 heads) + Add + LayerNorm, GELU FFN + Add + LayerNorm."""
    x = keras.Input((10, 32), name="x")
    attended = layers.MultiHeadAttention(num_heads=2, key_dim=16, name="attention")(x, x)
    y = layers.LayerNormalization(epsilon=1e-5, name="norm1")(layers.Add(name="add1")([x, attended]))
    hidden = layers.Dense(64, activation="gelu", name="ff1")(y)
    z = layers.Dense(32, name="ff2")(hidden)
    y = layers.LayerNormalization(epsilon=1e-5, name="norm2")(layers.Add(name="add2")([y, z]))
    return keras.Model(x, y, name="transformer_encoder")


def text_cnn() -> keras.Model:
    x = keras.Input((40,), dtype="int64", name="tokens")
    y = layers.Embedding(1000, 32, name="embedding")(x)
    y = layers.Conv1D(64, 5, activation="relu", name="conv")(y)
    y = layers.GlobalMaxPooling1D(name="pool")(y)
    y = layers.Dense(4, name="classifier")(y)
    return keras.Model(x, y, name="text_cnn")


def upsampling_decoder() -> keras.Model:
    x = keras.Input((8, 8, 16), name="x")
    y = layers.Conv2DTranspose(8, 3, strides=2, padding="same", activation="relu", name="deconv")(x)
    y = layers.UpSampling2D(2, interpolation="nearest", name="upsample")(y)
    y = layers.Conv2D(3, 3, padding="same", name="conv")(y)
    return keras.Model(x, y, name="upsampling_decoder")
