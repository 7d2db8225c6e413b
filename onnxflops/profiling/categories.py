"""Plain categories of executed work: what a reader calls the work behind each executed row.

Decided from the counted ops behind a row, never from onnxruntime's kernel names (NchwcConv,
FusedConv, ...): each counted op's cost-rule category (costs/registry.py) says what kind of work
it is, and a convolution is told apart by its shapes (ops.CONVOLUTION_WEIGHTS). A row that stands
for several counted ops (a Conv, its BatchNorm and its activation fused) takes the category of the
op with the most FLOPs.
"""

from __future__ import annotations

from typing import Sequence

from onnxflops.costs import registry
from onnxflops.ops import (
    CHANNELS_LAST_CONVOLUTIONS,
    CONVOLUTION_WEIGHTS,
    TRANSPOSED_CONVOLUTIONS,
)
from onnxflops.results import NodeReport

DENSE_CONV = "dense conv"
DEPTHWISE_CONV = "depthwise conv"
POINTWISE_CONV = "pointwise conv"
MATMUL = "matmul/attention"
NORMALIZATION = "normalization"
POOLING = "pooling/reduction"
ELEMENTWISE = "elementwise"
DATA_MOVEMENT = "data movement"
OTHER = "other"
# Every category; where a row's ops tie on FLOPs (none has any), the first in this order wins.
CATEGORIES = (DENSE_CONV, DEPTHWISE_CONV, POINTWISE_CONV, MATMUL, NORMALIZATION, POOLING,
              ELEMENTWISE, DATA_MOVEMENT, OTHER)

# The cost rules' categories, in plain words (a convolution's contraction is split by shape).
_BY_RULE = {registry.CONTRACTION: MATMUL, registry.ATTENTION: MATMUL, registry.RECURRENT: MATMUL,
            registry.ELEMENTWISE: ELEMENTWISE, registry.ACTIVATION: ELEMENTWISE,
            registry.QUANTIZATION: ELEMENTWISE, registry.NORMALIZATION: NORMALIZATION,
            registry.POOLING: POOLING, registry.REDUCTION: POOLING,
            registry.DATA_MOVEMENT: DATA_MOVEMENT}


def of_row(counted: Sequence[NodeReport]) -> str:
    """category(row) = category of argmax over its counted ops of FLOPs; a row with no counted
    op is onnxruntime's own layout change or copy: data movement."""
    if not counted:
        return DATA_MOVEMENT
    return max(map(of_op, counted), key=lambda ranked: ranked[0])[1]


def of_op(n: NodeReport) -> tuple[tuple[float, int], str]:
    """((FLOPs, rank), category) of one counted op: its cost rule's category in plain words, a
    convolution's by conv_kind."""
    if n.op_type in CONVOLUTION_WEIGHTS:
        category = conv_kind(n.op_type, n.input_shapes, n.output_shapes)
    else:
        category = _BY_RULE.get(n.category, OTHER)
    return (n.flops, -CATEGORIES.index(category)), category


def conv_kind(op_type: str, input_shapes: Sequence, output_shapes: Sequence) -> str:
    """depthwise if group = C_in > 1, else pointwise if every kernel dim is 1, else dense; group =
    C_in / W[1] (a transposed convolution: C_out / W[1]). Unknown dims: dense."""
    slot = CONVOLUTION_WEIGHTS[op_type]
    x = _dims(input_shapes, 0)
    w = _dims(input_shapes, slot)
    y = _dims(output_shapes, 0)
    if w is None or len(w) < 3 or x is None or len(x) < 3:
        return DENSE_CONV
    channels = x[-1] if op_type in CHANNELS_LAST_CONVOLUTIONS else x[1]
    split = y[1] if op_type in TRANSPOSED_CONVOLUTIONS and y is not None and len(y) > 1 \
        else channels
    if _known(channels, split, w[1]) and w[1] > 0 and split % w[1] == 0:
        groups = split // w[1]
        if groups > 1 and groups == channels:
            return DEPTHWISE_CONV
    if all(_known(k) and k == 1 for k in w[2:]):
        return POINTWISE_CONV
    return DENSE_CONV


def _dims(shapes: Sequence, slot: int) -> list | None:
    return list(shapes[slot]) if slot < len(shapes) and shapes[slot] is not None else None


def _known(*dims) -> bool:
    return all(isinstance(d, int) for d in dims)
