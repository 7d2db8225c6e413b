"""The backward-pass cost table: what computing the gradients of one node costs in training.

Keyed like the forward table, by (domain, op type). A backward rule receives the node and `grads`,
the input slots whose gradient training needs (weights always; activations when something upstream
needs them; never the model's inputs or non-trainable constants), and returns a `Cost`. Each
rule's first docstring line is its formula. Contractions compute exactly the products that
`torch.utils.flop_counter.FlopCounterMode` counts for `loss.backward()`; other ops count the
arithmetic of their gradient formula, a copy or a broadcast being free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable

from onnxflops.costs import REGISTRY
from onnxflops.costs.contraction import conv, conv_transpose, einsum, gemm, matmul
from onnxflops.costs.control_flow import trip_count
from onnxflops.costs.elementwise import per_element
from onnxflops.costs.functions import expanded
from onnxflops.costs.node import Node
from onnxflops.costs.recurrent import gru, lstm, rnn
from onnxflops.costs.registry import ZERO, Cost
from onnxflops.errors import Uncostable
from onnxflops.graph import domain_key

Grads = frozenset  # input slots whose gradient is needed
BackwardFn = Callable[[Node, Grads], Cost]


@dataclass(frozen=True, slots=True)
class Gradient:
    domain: str
    op_type: str
    fn: BackwardFn
    formula: str


GRADIENTS: dict[tuple[str, str], Gradient] = {}


def backward(op_types: str | Iterable[str], *, domain: str = "",
             formula: str | None = None) -> Callable[[BackwardFn], BackwardFn]:
    """Decorator: register `fn` as the backward rule of each op type (which must have a forward rule)."""
    names = [op_types] if isinstance(op_types, str) else list(op_types)

    def wrap(fn: BackwardFn) -> BackwardFn:
        text = formula or (fn.__doc__ or "").strip().splitlines()[0]
        for name in names:
            if REGISTRY.lookup(domain, name) is None:
                raise ValueError(f"backward rule for {domain or 'ai.onnx'}::{name}, "
                                 "which has no forward rule")
            if (domain, name) in GRADIENTS:
                raise ValueError(f"duplicate backward rule for {domain or 'ai.onnx'}::{name}")
            GRADIENTS[(domain, name)] = Gradient(domain, name, fn, text)
        return fn

    return wrap


def lookup_backward(domain: str, op_type: str) -> Gradient | None:
    return GRADIENTS.get((domain_key(domain), op_type))


# --- contractions --------------------------------------------------------------------------------

@backward(["Conv", "ConvTranspose"])
def conv_backward(n: Node, grads: Grads) -> Cost:
    """dX and dW: MACs as the forward each (a transposed conv, a conv); dB: numel(Y) − C_out adds"""
    forward_macs = (conv if n.op_type == "Conv" else conv_transpose)(n).macs
    macs = dots = 0
    for slot in (0, 1):
        if slot in grads:
            macs += forward_macs
            dots += n.input(slot).numel
    y = n.output()
    bias = y.numel - y.dims[1] if 2 in grads else 0
    return Cost(macs=macs, dot_products=dots, flops=bias)


@backward("Gemm")
def gemm_backward(n: Node, grads: Grads) -> Cost:
    """dA = α·dY·op(B)ᵀ, dB = α·op(A)ᵀ·dY: M·N·K MACs each (+M·N if α≠1); dC: numel(Y) − numel(C)"""
    forward_macs = gemm(n).macs
    y = n.output().numel
    products = [slot for slot in (0, 1) if slot in grads]
    flops = y if products and n.attr("alpha", 1.0) != 1.0 else 0
    if 2 in grads:
        c = n.input(2).numel
        flops += y - c + (c if n.attr("beta", 1.0) != 1.0 else 0)
    return Cost(macs=forward_macs * len(products),
                dot_products=sum(n.input(slot).numel for slot in products), flops=flops)


@backward("MatMul")
def matmul_backward(n: Node, grads: Grads) -> Cost:
    """dA = dY·Bᵀ, dB = Aᵀ·dY: MACs as the forward each (broadcast batch dims fold into the sum)"""
    return _operand_products(matmul(n).macs, n, grads)


@backward("Einsum")
def einsum_backward(n: Node, grads: Grads) -> Cost:
    """two operands: each gradient an einsum of dY and the other, MACs as the forward; one: a copy"""
    if n.num_inputs == 1:
        return ZERO
    if n.num_inputs > 2:
        raise Uncostable("backward of an einsum of more than two operands")
    return _operand_products(einsum(n).macs, n, grads)


def _operand_products(forward_macs, n: Node, grads: Grads) -> Cost:
    slots = [slot for slot in (0, 1) if slot in grads]
    return Cost(macs=forward_macs * len(slots),
                dot_products=sum(n.input(slot).numel for slot in slots))


@backward(["RNN", "GRU", "LSTM"])
def recurrent_backward(n: Node, grads: Grads) -> Cost:
    """dX, dW: the input products again; dR, dH: the recurrent ones; 2× gates' elementwise; dB: Σ"""
    forward = {"RNN": rnn, "GRU": gru, "LSTM": lstm}[n.op_type](n)
    x = n.input(0).dims
    steps, batch = (x[1], x[0]) if n.attr("layout", 0) else (x[0], x[1])
    directions, gate_rows, inputs = n.input(1).dims
    hidden = n.input(2).dims[-1]
    rows = steps * directions * batch
    input_products, recurrent_products = rows * gate_rows * inputs, rows * gate_rows * hidden
    macs = recurrent_products  # dH(t−1) = dGates·R, needed at every step of backpropagation
    dots = rows * hidden
    if 0 in grads:
        macs, dots = macs + input_products, dots + rows * inputs
    if 1 in grads:
        macs, dots = macs + input_products, dots + directions * gate_rows * inputs
    if 2 in grads:
        macs, dots = macs + recurrent_products, dots + directions * gate_rows * hidden
    bias = rows * gate_rows if 3 in grads else 0  # dB: the gate gradients summed over steps, batch
    return Cost(macs=macs, dot_products=dots, flops=2 * forward.flops + bias)


# --- elementwise ---------------------------------------------------------------------------------

@backward(["Add", "Sum"])
def add_backward(n: Node, grads: Grads) -> Cost:
    """dXi = dY: numel(Y) − numel(Xi) adds to sum dY over each operand's broadcast dims"""
    return per_element_backward(n, grads, 0)


@backward("Sub")
def sub_backward(n: Node, grads: Grads) -> Cost:
    """dA = dY, dB = −dY: numel(Y) negations for dB, plus the broadcast sums"""
    return per_element_backward(n, grads, 0) + (per_element(n, 1) if 1 in grads else ZERO)


def one_op_per_operand(n: Node, grads: Grads) -> Cost:
    return per_element_backward(n, grads, 1)


for _ops, _formula in (
    (["Mul"], "dA = dY·B, dB = dY·A: numel(Y) each, plus the broadcast sums"),
    (["Max", "Min"], "numel(Y) comparisons per operand to route dY to it, plus the broadcast sums"),
    (["Mean"], "dXi = dY/n: numel(Y) per operand, plus the broadcast sums"),
):
    backward(_ops, formula=_formula)(one_op_per_operand)


@backward("Div")
def div_backward(n: Node, grads: Grads) -> Cost:
    """dA = dY/B: numel(Y); dB = −dY·Y/B: 3·numel(Y); plus the broadcast sums"""
    per_slot = {0: 1, 1: 3}
    return per_element_backward(n, grads, 0) + per_element(n, sum(per_slot[s] for s in grads))


@backward("Pow")
def pow_backward(n: Node, grads: Grads) -> Cost:
    """dA = dY·B·A^(B−1): 4·numel(Y); dB = dY·Y·ln A: 3·numel(Y); plus the broadcast sums"""
    per_slot = {0: 4, 1: 3}
    return per_element_backward(n, grads, 0) + per_element(n, sum(per_slot[s] for s in grads))


@backward("Mod")
def mod_backward(n: Node, grads: Grads) -> Cost:
    """dA = dY; dB = −dY·floor(A/B): 3·numel(Y); plus the broadcast sums"""
    return per_element_backward(n, grads, 0) + (per_element(n, 3) if 1 in grads else ZERO)


def per_element_backward(n: Node, grads: Grads, per_operand: int) -> Cost:
    """`per_operand`·numel(Y) for each operand needing a gradient, plus its broadcast sum."""
    work = sum(per_operand * n.output().numel + n.output().numel - n.input(s).numel for s in grads)
    return Cost(flops=work)


def _unary(ops_per_element: int) -> BackwardFn:
    def unary_backward(n: Node, grads: Grads) -> Cost:
        return Cost(flops=ops_per_element * n.output().numel)
    return unary_backward


backward(["Floor", "Ceil", "Round", "Sign", "Hardmax"],
         formula="0: the gradient is zero almost everywhere")(_unary(0))
# Clip's and Relu's function bodies compare before they select (Where).
backward(["Less", "Greater", "Equal", "IsNaN", "IsInf", "Not", "And", "Or", "Xor"],
         formula="0: a boolean output carries no gradient")(_unary(0))
for _op, _ops_per_element, _gradient in (
    ("Neg", 1, "−dY"), ("Exp", 1, "dY·Y"), ("Log", 1, "dY/X"),
    ("Abs", 2, "dY·sign(X)"), ("Sqrt", 2, "dY/(2·Y)"), ("Sin", 2, "dY·cos(X)"),
    ("Sinh", 2, "dY·cosh(X)"), ("Cosh", 2, "dY·sinh(X)"),
    ("Reciprocal", 3, "−dY·Y²"), ("Cos", 3, "−dY·sin(X)"), ("Tan", 3, "dY·(1 + Y²)"),
    ("Atan", 3, "dY/(1 + X²)"), ("Atanh", 3, "dY/(1 − X²)"), ("Sigmoid", 3, "dY·Y·(1 − Y)"),
    ("Tanh", 3, "dY·(1 − Y²)"),
    ("Asin", 4, "dY/√(1 − X²)"), ("Asinh", 4, "dY/√(X² + 1)"), ("Acosh", 4, "dY/√(X² − 1)"),
    ("Erf", 4, "dY·(2/√π)·exp(−X²)"), ("Acos", 5, "−dY/√(1 − X²)"),
):
    _times = "" if _ops_per_element == 1 else f"{_ops_per_element}·"
    backward(_op, formula=f"{_times}numel(X): dX = {_gradient}")(_unary(_ops_per_element))


# --- normalization, pooling, reduction -----------------------------------------------------------

@backward(["BatchNormalization", "InstanceNormalization"])
def batch_norm_backward(n: Node, grads: Grads) -> Cost:
    """5·numel(X) for x̂, Σ dY, Σ dY·x̂ (training statistics); +4·numel(X) for dX = γ/σ·(dY − …)"""
    # dX = γ/σ·(dY − mean(dY) − x̂·mean(dY·x̂)); dγ = Σ dY·x̂; dβ = Σ dY.
    x = n.input(0).numel
    return Cost(flops=5 * x + (4 * x if 0 in grads else 0))


@backward("LpNormalization")
def lp_norm_backward(n: Node, grads: Grads) -> Cost:
    """5·numel(X): s = Σ dY·Y along the axis, dX = (dY − Y·s)/‖x‖"""
    return Cost(flops=5 * n.input(0).numel)


@backward("LRN")
def lrn_backward(n: Node, grads: Grads) -> Cost:
    """(size + 7)·numel(X): dX = dY·s^−β − (2αβ/size)·X·Σ_window(dY·Y/s), s the forward's scale"""
    return Cost(flops=(n.attr("size") + 7) * n.input(0).numel)


@backward("MaxPool")
def max_pool_backward(n: Node, grads: Grads) -> Cost:
    """numel(Y): each dY is added at its window's argmax"""
    return Cost(flops=n.output().numel)


@backward("AveragePool")
def average_pool_backward(n: Node, grads: Grads) -> Cost:
    """numel(Y) divides, + prod(kernel)·numel(Y) − numel(X) adds where windows overlap"""
    kernel = n.attr("kernel_shape")
    strides = n.attr("strides") or [1] * len(kernel)
    y = n.output().numel
    overlap = any(s < k for s, k in zip(strides, kernel))
    return Cost(flops=y + (math.prod(kernel) * y - n.input(0).numel if overlap else 0))


@backward("LpPool")
def lp_pool_backward(n: Node, grads: Grads) -> Cost:
    """4·prod(kernel)·numel(Y): dY·(|x|/y)^(p−1)·sign(x) for each window element"""
    return Cost(flops=4 * math.prod(n.attr("kernel_shape")) * n.output().numel)


@backward(["GlobalAveragePool", "ReduceMean"])
def mean_backward(n: Node, grads: Grads) -> Cost:
    """numel(Y): dY/k per output, broadcast back over the k reduced elements (a copy)"""
    return Cost(flops=n.output().numel)


@backward(["GlobalMaxPool", "ReduceMax", "ReduceMin"])
def extremum_backward(n: Node, grads: Grads) -> Cost:
    """numel(X) comparisons: dY goes where the input equals the extremum"""
    return Cost(flops=n.input(0).numel)


@backward("GlobalLpPool")
def global_lp_pool_backward(n: Node, grads: Grads) -> Cost:
    """4·numel(X): dY·(|x|/y)^(p−1)·sign(x) per element"""
    return Cost(flops=4 * n.input(0).numel)


@backward("ReduceSum")
def sum_backward(n: Node, grads: Grads) -> Cost:
    """0: dY broadcast back over the reduced elements (a copy)"""
    return ZERO


@backward("ReduceProd")
def prod_backward(n: Node, grads: Grads) -> Cost:
    """2·numel(X): dX = dY·Y/X"""
    return Cost(flops=2 * n.input(0).numel)


@backward("CumSum")
def cumsum_backward(n: Node, grads: Grads) -> Cost:
    """numel(X): dX is the reverse cumulative sum of dY"""
    return Cost(flops=n.input(0).numel)


@backward("CumProd")
def cumprod_backward(n: Node, grads: Grads) -> Cost:
    """3·numel(X): dX = reverse-cumsum(dY·Y)/X"""
    return Cost(flops=3 * n.input(0).numel)


# --- data movement -------------------------------------------------------------------------------

@backward(["Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice",
           "Pad", "Identity", "Cast", "Where", "Compress", "Trilu", "ReverseSequence", "Dropout",
           "TopK", "MaxUnpool", "Optional",
           "OptionalGetElement", "SequenceAt", "SequenceConstruct", "SequenceInsert",
           "SplitToSequence", "ConcatFromSequence"])
def view_backward(n: Node, grads: Grads) -> Cost:
    """0: the gradient of a view, copy or selection is dY put back in place (or selected)"""
    return ZERO


@backward(["Expand", "Tile"])
def repeat_backward(n: Node, grads: Grads) -> Cost:
    """numel(Y) − numel(X) adds: dY summed back over the repeated dims"""
    return Cost(flops=n.output().numel - n.input(0).numel) if 0 in grads else ZERO


@backward(["Gather", "GatherElements", "GatherND"])
def gather_backward(n: Node, grads: Grads) -> Cost:
    """numel(Y) adds: dY scatter-added into the gathered tensor (an Embedding's table gradient)"""
    return Cost(flops=n.output().numel) if 0 in grads else ZERO


@backward(["ScatterElements", "ScatterND", "Scatter"])
def scatter_backward(n: Node, grads: Grads) -> Cost:
    """0 for reduction none/add: dData is dY (scattered positions zeroed), dUpdates gathers dY"""
    if n.attr("reduction", "none") not in ("none", "add"):
        raise Uncostable(f"backward of a scatter with reduction '{n.attr('reduction')}'")
    return ZERO


@backward(["Resize", "Upsample"])
def resize_backward(n: Node, grads: Grads) -> Cost:
    """nearest: numel(Y) − numel(X) adds; linear/cubic: 2·taps^d·numel(Y), a weighted scatter-add"""
    x, y = n.input(0), n.output()
    mode = n.attr("mode", "nearest")
    if mode == "nearest":
        return Cost(flops=y.numel - x.numel)
    resized = sum(1 for a, b in zip(x.dims, y.dims) if a != b)
    taps = 4 if mode == "cubic" else 2
    return Cost(flops=2 * taps ** resized * y.numel)


# --- composite ops -------------------------------------------------------------------------------

def expansion_backward(n: Node, grads: Grads) -> Cost:
    return n.function_backward(grads)


for (_domain, _op_type), _rule in list(REGISTRY.rules.items()):
    if _rule.fn is expanded:
        backward(_op_type, domain=_domain,
                 formula="backward of the ONNX function body that defines the op")(
            expansion_backward)


@backward("Loop")
def loop_backward(n: Node, grads: Grads) -> Cost:
    """backward of the body × trip count, every loop-carried value carrying a gradient"""
    return n.subgraph_backward("body", frozenset(range(2, n.num_inputs))).scaled(trip_count(n))


@backward("Scan")
def scan_backward(n: Node, grads: Grads) -> Cost:
    """backward of the body × iterations; states carry a gradient, scanned inputs as the model's"""
    states = n.num_inputs - n.attr("num_scan_inputs")
    first = n.input(states)
    axis = (n.attr("scan_input_axes") or [0])[0] % first.rank
    body = n.subgraph_backward("body", frozenset(range(states)) | grads)
    return body.scaled(first.dims[axis])


@backward("If")
def if_backward(n: Node, grads: Grads) -> Cost:
    """the more expensive of the two branches' backward"""
    branches = [n.subgraph_backward(b, frozenset()) for b in ("then_branch", "else_branch")]
    return max(branches, key=lambda c: (c.flops_under("default"), c.all_int_ops))
