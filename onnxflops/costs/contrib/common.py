"""What the com.microsoft families share: the domain, tensors described by their type, and the
standard ops they sum (Node.cost_of).
"""

from __future__ import annotations

from onnxflops.costs.node import Node
from onnxflops.costs.registry import ZERO, Cost, rule
from onnxflops.graph import TensorInfo

MS = "com.microsoft"
UINT8 = 2


def ms_rule(op_types, **kwargs):
    return rule(op_types, domain=MS, **kwargs)


def like(info: TensorInfo, dims) -> TensorInfo:
    """A tensor of `info`'s dtype with other dims."""
    return TensorInfo("", info.dtype, tuple(dims))


def scalar(info: TensorInfo) -> TensorInfo:
    return like(info, ())


def added(n: Node, x: TensorInfo, *others: TensorInfo) -> Cost:
    """Sum of `x` and `others` broadcast to x's shape: one standard Add per operand."""
    return n.cost_of("Sum", [x, *others], [x]) if others else ZERO


def present(n: Node, *slots: int) -> list[TensorInfo]:
    return [n.input(i) for i in slots if n.has_input(i)]


def nchw(x: TensorInfo, channels_last: bool) -> TensorInfo:
    return like(x, (x.dims[0], x.dims[-1], *x.dims[1:-1])) if channels_last else x


def attributes(n: Node, exclude=()) -> dict:
    return {a.name: n.attr(a.name) for a in n.proto.attribute if a.name not in exclude}
