"""Every standard ONNX op has a cost rule, and every op ONNX defines by a function body costs
exactly what its body costs."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.defs
import pytest
from onnx import TensorProto, helper

from onnxflops.costs import REGISTRY
from onnxflops.costs.functions import expanded
from onnxflops.counting.counter import count_model
from onnxflops.analysis.expand import expansion_model
from onnxflops.graph import TensorInfo
from onnxflops.analysis.analyze import analyze
from onnxflops.canonical import canonicalize
from helpers import FLOAT, INT64, costed, typed_model

OPSET = onnx.defs.onnx_opset_version()
DEFAULT_DOMAIN_OPS = sorted(s.name for s in onnx.defs.get_all_schemas() if s.domain == "")


def test_the_installed_onnx_is_no_newer_than_the_one_the_table_was_written_for():
    # Opset 28 (onnx 1.23) defines 203 standard ops; an older onnx (down to pyproject's floor)
    # defines a subset of them, each checked below. A newer one may define ops with no rule yet.
    assert OPSET <= 28
    if OPSET == 28:
        assert len(DEFAULT_DOMAIN_OPS) == 203


@pytest.mark.parametrize("op_type", DEFAULT_DOMAIN_OPS)
def test_every_default_domain_op_has_a_rule_with_a_formula(op_type):
    rule = REGISTRY.lookup("", op_type)
    assert rule is not None, f"no cost rule for {op_type}"
    assert rule.formula.strip()


def _has_body(schema: onnx.defs.OpSchema) -> bool:
    return schema.has_function or schema.has_context_dependent_function


FUNCTION_OPS = sorted(s.name for s in onnx.defs.get_all_schemas()
                      if s.domain == "" and _has_body(s))
# Bodies our engine cannot run on a sample without the values that only run time has; their
# explicit rules are tested against hand-derived formulas instead.
NOT_EXPANDABLE = {
    "Range": "its body is a Loop whose trip count is computed from the input values",
    "AffineGrid": "its body branches (If) on the length of `size`",
    "SequenceMap": "its body loops over a sequence, whose length is not known statically",
}

F, I = FLOAT, INT64
X = (F, [2, 3, 4])
# op type: (inputs {name: (dtype, shape)}, constants {name: array}, attributes, outputs)
SAMPLES = {
    "Attention": ({"q": (F, [2, 4, 5, 8]), "k": (F, [2, 4, 6, 8]), "v": (F, [2, 4, 6, 8])},
                  {}, {"is_causal": 1}, 1),
    "Bernoulli": ({"x": X}, {}, {}, 1),
    "CastLike": ({"x": X, "t": (TensorProto.FLOAT16, [1])}, {}, {}, 1),
    "CausalConvWithState": ({"x": (F, [2, 6, 5]), "w": (F, [6, 1, 3]), "b": (F, [6])},
                            {}, {"activation": "silu"}, 2),
    "CenterCropPad": ({"x": (F, [4, 6])}, {"shape": np.array([3, 8])}, {}, 1),
    "Clip": ({"x": X, "lo": (F, []), "hi": (F, [])}, {}, {}, 1),
    "DepthToSpace": ({"x": (F, [1, 8, 2, 3])}, {}, {"blocksize": 2}, 1),
    "DynamicQuantizeLinear": ({"x": (F, [4, 5])}, {}, {}, 3),
    "GreaterOrEqual": ({"a": X, "b": X}, {}, {}, 1),
    "LessOrEqual": ({"a": X, "b": X}, {}, {}, 1),
    "GroupNormalization": ({"x": (F, [2, 6, 4, 4]), "s": (F, [6]), "b": (F, [6])}, {},
                           {"num_groups": 2}, 1),
    "LayerNormalization": ({"x": (F, [2, 5, 8]), "s": (F, [8]), "b": (F, [8])}, {}, {}, 1),
    "LinearAttention": ({"q": (F, [2, 5, 32]), "k": (F, [2, 5, 16]), "v": (F, [2, 5, 16]),
                         "": None, "g": (F, [2, 5, 2]), "beta": (F, [2, 5, 2])}, {},
                        {"q_num_heads": 4, "kv_num_heads": 2}, 2),
    "MeanVarianceNormalization": ({"x": (F, [2, 3, 4, 4])}, {}, {}, 1),
    "NegativeLogLikelihoodLoss": ({"x": (F, [4, 10]), "t": (I, [4])}, {}, {}, 1),
    "PRelu": ({"x": X, "slope": (F, [4])}, {}, {}, 1),
    "RMSNormalization": ({"x": (F, [2, 5, 8]), "s": (F, [8])}, {}, {}, 1),
    "RotaryEmbedding": ({"x": (F, [2, 4, 5, 8]), "cos": (F, [16, 4]), "sin": (F, [16, 4]),
                         "pos": (I, [2, 5])}, {}, {}, 1),
    "SoftmaxCrossEntropyLoss": ({"x": (F, [4, 10]), "t": (I, [4])}, {}, {}, 1),
    "SpaceToDepth": ({"x": (F, [1, 2, 4, 6])}, {}, {"blocksize": 2}, 1),
    "SwiGLU": ({"a": X, "b": X}, {}, {}, 1),
    **{op: ({}, {"size": np.array(10)}, {}, 1)
       for op in ("BlackmanWindow", "HammingWindow", "HannWindow")},
    **{op: ({"x": X}, {"axes": np.array([1])}, {}, 1)
       for op in ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare")},
}


def _sample(op_type):
    inputs, constants, attrs, outputs = SAMPLES.get(op_type, ({"x": X}, {}, {}, 1))
    names = list(inputs) + list(constants)
    node = helper.make_node(op_type, names, [f"y{i}" for i in range(outputs)], **attrs)
    return node, {k: v for k, v in inputs.items() if k}, constants


@pytest.mark.parametrize("op_type", [op for op in FUNCTION_OPS if op not in NOT_EXPANDABLE])
def test_function_ops_cost_their_body(op_type):
    node, inputs, constants = _sample(op_type)
    as_op = costed(typed_model([node], inputs, constants, outputs=list(node.output)))
    infos = [None if not name else
             TensorInfo(name, *inputs[name]) if name in inputs else
             TensorInfo(name, helper.np_dtype_to_tensor_dtype(constants[name].dtype),
                        constants[name].shape) for name in node.input]
    values = [constants.get(name) for name in node.input]
    # The body as the counter sees it: analyzed and canonicalized, as the model's own graph is
    # (Attention's scale on both operands is one scale of the product then).
    body = count_model(canonicalize(analyze(expansion_model(node, OPSET, infos, values))))
    assert not body.uncosted, body.uncosted
    assert as_op.total.flops > 0 or op_type in {"CastLike", "CenterCropPad", "DepthToSpace",
                                                "SpaceToDepth", "BlackmanWindow",
                                                "HammingWindow", "HannWindow"}
    for field in ("macs", "flops", "int_ops"):
        assert getattr(as_op.total, field) == getattr(body.total, field), field


@pytest.mark.parametrize("op_type", sorted(NOT_EXPANDABLE))
def test_ops_whose_body_cannot_run_here_have_an_explicit_rule(op_type):
    assert op_type in FUNCTION_OPS
    assert REGISTRY.lookup("", op_type).fn is not expanded
