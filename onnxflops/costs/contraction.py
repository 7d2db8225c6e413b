"""Contractions: every multiply-accumulate (MAC) of a model lives here and in recurrent/attention.

Each backward computes exactly the products that `torch.utils.flop_counter.FlopCounterMode`
counts for `loss.backward()`.
"""

from __future__ import annotations

import math

from onnxflops.costs.node import Node
from onnxflops.costs.registry import CONTRACTION, ZERO, Cost, Grads, backward, rule
from onnxflops.errors import Uncostable


@rule("Conv", category=CONTRACTION, weights=(1, 2))
def conv(n: Node) -> Cost:
    """MACs = N·C_out·prod(out spatial)·(C_in/group)·prod(kernel); +N·C_out·prod(out) per bias add"""
    y = n.output().numel
    w = n.input(1).dims
    per_output = math.prod(w[1:])  # (C_in/group)·prod(kernel)
    bias = y if n.has_input(2) else 0
    return Cost(macs=y * per_output, dot_products=y, flops=bias)


@rule("ConvTranspose", category=CONTRACTION, weights=(1, 2))
def conv_transpose(n: Node) -> Cost:
    """MACs = N·C_in·prod(in spatial)·(C_out/group)·prod(kernel); +numel(Y) per bias add"""
    x = n.input(0).numel
    w = n.input(1).dims
    y = n.output().numel
    bias = y if n.has_input(2) else 0
    return Cost(macs=x * math.prod(w[1:]), dot_products=y, flops=bias)


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


@rule("Gemm", category=CONTRACTION, weights=(0, 1, 2))
def gemm(n: Node) -> Cost:
    """MACs = M·N·K; +M·N for alpha≠1, +M·N for the C add, +numel(C) for beta≠1"""
    a = n.input(0).dims
    k = a[0] if n.attr("transA", 0) else a[1]
    y = n.output().numel
    flops = y if n.attr("alpha", 1.0) != 1.0 else 0
    if n.has_input(2):
        flops += y + (n.input(2).numel if n.attr("beta", 1.0) != 1.0 else 0)
    return Cost(macs=y * k, dot_products=y, flops=flops)


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


@rule("MatMul", category=CONTRACTION, weights=(0, 1))
def matmul(n: Node) -> Cost:
    """MACs = numel(Y)·K, K the shared inner dim (batch dims broadcast)"""
    k = n.input(0).dims[-1]
    y = n.output().numel
    return Cost(macs=y * k, dot_products=y)


@backward("MatMul")
def matmul_backward(n: Node, grads: Grads) -> Cost:
    """dA = dY·Bᵀ, dB = Aᵀ·dY: MACs as the forward each (broadcast batch dims fold into the sum)"""
    return _operand_products(matmul(n).macs, n, grads)


def _operand_products(forward_macs, n: Node, grads: Grads) -> Cost:
    """The gradient of each of two operands: a product as big as the forward's."""
    slots = [slot for slot in (0, 1) if slot in grads]
    return Cost(macs=forward_macs * len(slots),
                dot_products=sum(n.input(slot).numel for slot in slots))


# A grouped matmul (a mixture-of-experts kernel): Y[r] = X[r]·W[group(r)], the S rows of X (S×K)
# sorted by group and the groups' ends in `offs`. As torch's converter exports the kernels of
# transformers' experts (its fallback) and torch's own (see onnxflops.converters.torch_ops).
_GROUPED_MATMULS = (("transformers", "grouped_mm_fallback"), ("aten", "_grouped_mm"))


def grouped_matmul(n: Node) -> Cost:
    """MACs = S·K·N: each group g's GEMM is n_g·K·N and the n_g sum to S (X S×K, W G×K×N)"""
    # transformers' _grouped_mm_fallback (integrations/moe.py) runs torch.mm(X[start:end], W[g])
    # per group: sum_g n_g·K·N = S·K·N. Its experts give X the T tokens' k routed copies, S = T·k
    # (grouped_mm_experts_forward): MACs = T·k·d·f over all E experts, whatever the routing.
    x, w = n.input(0).dims, n.input(1).dims
    if len(x) != 2 or len(w) != 3:
        raise Uncostable(f"grouped matmul of a rank-{len(x)} X and a rank-{len(w)} W "
                         "(2 and 3 are costed)")
    return Cost(macs=x[0] * x[1] * w[2], dot_products=x[0] * w[2], detail={"routed": True})


def grouped_matmul_backward(n: Node, grads: Grads) -> Cost:
    """dX = dY·W[g]ᵀ per group, dW[g] = X_gᵀ·dY_g: MACs as the forward each"""
    return _operand_products(grouped_matmul(n).macs, n, grads)


for _domain, _op in _GROUPED_MATMULS:
    rule(_op, category=CONTRACTION, domain=_domain, weights=(1,))(grouped_matmul)
    backward(_op, domain=_domain)(grouped_matmul_backward)


@rule("Einsum", category=CONTRACTION, weights="all")
def einsum(n: Node) -> Cost:
    """MACs = Σ over pairwise contractions (left to right) of prod(sizes of all indices involved);
    a pair that sums no index (an outer product, "i,d->id") is prod(sizes) multiplies, no MACs"""
    terms, out = _spelled_out(n.attr("equation"), [n.input(i).rank for i in range(n.num_inputs)])
    sizes: dict[str, int] = {}
    for i, term in enumerate(terms):
        for letter, d in zip(term, n.input(i).dims):
            sizes[letter] = _broadcast(sizes.get(letter, 1), d)
    macs = products = 0
    current = terms[0]
    for i, term in enumerate(terms[1:], start=1):
        involved = set(current) | set(term)
        needed = set(out).union(*terms[i + 1:])
        # Nothing summed: each output a product alone, as torch computes it (a broadcast mul).
        if involved <= needed:
            products += math.prod(sizes[c] for c in involved)
        else:
            macs += math.prod(sizes[c] for c in involved)
        current = "".join(c for c in sorted(involved) if c in needed)
    if len(terms) == 1:  # a single operand: a sum over the dropped indices
        return Cost(flops=math.prod(sizes.values()) - n.output().numel)
    return Cost(macs=macs, dot_products=n.output().numel if macs else 0, flops=products)


def _broadcast(a, b):
    """The size two dims of one index broadcast to: the other where one is 1, else the larger;
    symbolic dims too (Mamba2's einsum over batch: max(1, batch) asked sympy for batch > 1)."""
    if a == 1 or a == b:
        return b
    if b == 1:
        return a
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    import sympy

    return sympy.Max(a, b)


def _spelled_out(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """Each term's and the output's indices, one letter per dim: '...' and an implicit output
    written out as ONNX's Einsum defines them.

    An ellipsis stands for the dims its operand has beyond its letters; the ellipses of all
    operands broadcast, aligned on their last dims (numpy's rule), so each gets the last of one
    shared run of fresh letters. Without '->' the output is the ellipsis dims, then the letters
    that occur once, sorted.
    """
    equation = equation.replace(" ", "")
    lhs, arrow, out = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise Uncostable(f"einsum equation '{equation}' names {len(terms)} operands, "
                         f"the node has {len(ranks)}")
    widths = [rank - len(term.replace("...", "")) for term, rank in zip(terms, ranks)
              if "..." in term]
    if any(w < 0 for w in widths):
        raise Uncostable(f"einsum equation '{equation}' names more dims than an operand has")
    # Fresh labels outside ONNX's [a-zA-Z], so none can collide with the equation's own.
    broadcast = "".join(chr(0x100 + k) for k in range(max(widths, default=0)))

    def spell(term: str, width: int) -> str:
        return term.replace("...", broadcast[len(broadcast) - width:] if width else "")

    spelled = [spell(term, rank - len(term.replace("...", ""))) for term, rank in zip(terms, ranks)]
    if arrow:
        return spelled, spell(out, len(broadcast))
    letters = "".join(spelled)
    once = sorted(c for c in set(letters) if letters.count(c) == 1 and c not in broadcast)
    return spelled, broadcast + "".join(once)


@backward("Einsum")
def einsum_backward(n: Node, grads: Grads) -> Cost:
    """two operands: each gradient an einsum of dY and the other, MACs as the forward's products
    (an outer product's gradient sums over the other operand's indices); one: a copy"""
    if n.num_inputs == 1:
        return ZERO
    if n.num_inputs > 2:
        raise Uncostable("backward of an einsum of more than two operands")
    forward = einsum(n)
    return _operand_products(forward.macs + forward.flops, n, grads)
