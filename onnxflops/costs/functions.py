"""Ops that ONNX defines by a function body cost exactly what their expansion costs.

So LayerNormalization costs the same as its ReduceMean/Sub/Mul/... decomposition, Gelu as its Erf
chain, Softmax as ReduceMax/Sub/Exp/ReduceSum/Div.
"""

from __future__ import annotations

from onnxflops.costs.node import Node
from onnxflops.costs.registry import (
    ACTIVATION,
    ATTENTION,
    CONTRACTION,
    DATA_MOVEMENT,
    ELEMENTWISE,
    LOSS,
    NORMALIZATION,
    QUANTIZATION,
    RANDOM,
    REDUCTION,
    SIGNAL,
    Cost,
    Grads,
    backward,
    rule,
)

_EXPANSION = "cost of the ONNX function body that defines the op"
_EXPANSION_BACKWARD = "backward of the ONNX function body that defines the op"


def expanded(n: Node) -> Cost:
    return n.function_cost()


def expansion_backward(n: Node, grads: Grads) -> Cost:
    return n.function_backward(grads)


for _ops, _category, _weights in (
    (["Relu", "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Gelu", "Mish",
      "Softplus", "Softsign", "Swish", "ThresholdedRelu", "Shrink", "SwiGLU"], ACTIVATION, ()),
    (["PRelu"], ACTIVATION, (1,)),
    (["Softmax", "LogSoftmax"], ACTIVATION, ()),
    (["LayerNormalization", "GroupNormalization"], NORMALIZATION, (1, 2)),
    (["RMSNormalization"], NORMALIZATION, (1,)),
    (["MeanVarianceNormalization"], NORMALIZATION, ()),
    (["Clip", "GreaterOrEqual", "LessOrEqual"], ELEMENTWISE, ()),
    (["ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"], REDUCTION, ()),
    (["DepthToSpace", "SpaceToDepth", "CastLike", "CenterCropPad"], DATA_MOVEMENT, ()),
    (["Attention", "RotaryEmbedding", "LinearAttention"], ATTENTION, ()),
    (["CausalConvWithState"], CONTRACTION, (1, 2)),
    (["HannWindow", "HammingWindow", "BlackmanWindow"], SIGNAL, ()),
    (["SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"], LOSS, (2,)),
    (["DynamicQuantizeLinear"], QUANTIZATION, ()),
    (["Bernoulli"], RANDOM, ()),
):
    rule(_ops, category=_category, weights=_weights, formula=_EXPANSION)(expanded)
    backward(_ops, formula=_EXPANSION_BACKWARD)(expansion_backward)
