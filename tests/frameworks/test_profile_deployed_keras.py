"""profile runs a Keras model as tf2onnx's default conversion gives it to a user."""

from __future__ import annotations

import onnxflops

QUICK = dict(runs=3, warmup=1, profile_runs=2, threads=1, ceilings=False)


def _conv_bn():
    import keras

    keras.utils.set_random_seed(0)
    x = keras.Input((8, 8, 3), batch_size=1)
    y = keras.layers.Conv2D(8, 3, use_bias=False)(x)
    y = keras.layers.BatchNormalization()(y)
    y = keras.layers.ReLU()(y)
    y = keras.layers.Conv2D(4, 1)(y)
    return keras.Model(x, y)


def test_a_keras_conv_without_bias_and_batchnorm_runs_as_tf2onnx_deploys_it():
    model = _conv_bn()
    counted = onnxflops.count(model)
    deployed = onnxflops.profile(model, **QUICK)
    as_counted = onnxflops.profile(model, graph="counted", **QUICK)
    ops = " ".join(n.op_type for n in deployed.nodes)
    assert "BatchNormalization" not in ops
    assert deployed.flops == counted.total.flops
    # Every counted FLOP is on exactly one executed row or listed as folded.
    assert sum(n.flops for n in deployed.nodes) + sum(u.flops for u in deployed.unattributed) \
        == counted.total.flops
    # conv 3→8, 3×3 on 8×8 (6×6 out, no bias) with its ReLU runs; the BatchNorm was folded.
    bn = next(e for e in counted.nodes if e.op_type == "BatchNormalization")
    assert [u.flops for u in deployed.unattributed if u.op_type == "BatchNormalization"] \
        == [bn.flops]
    conv = max(deployed.nodes, key=lambda n: n.flops)
    assert conv.flops >= 2 * 8 * 36 * 27
    # The counted graph runs its BatchNorm (onnxruntime fuses it into the conv's row).
    assert not as_counted.unattributed
    assert any(bn.name in n.original_nodes for n in as_counted.nodes)
