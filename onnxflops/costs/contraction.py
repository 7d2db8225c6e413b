"""Contractions: every multiply-accumulate (MAC) of a model lives here and in recurrent/attention."""

from __future__ import annotations

import math

from onnxflops.costs.node import Node
from onnxflops.costs.registry import CONTRACTION, Cost, rule
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


@rule("MatMul", category=CONTRACTION, weights=(0, 1))
def matmul(n: Node) -> Cost:
    """MACs = numel(Y)·K, K the shared inner dim (batch dims broadcast)"""
    k = n.input(0).dims[-1]
    y = n.output().numel
    return Cost(macs=y * k, dot_products=y)


@rule("Einsum", category=CONTRACTION, weights="all")
def einsum(n: Node) -> Cost:
    """MACs = Σ over pairwise contractions (left to right) of prod(sizes of all indices involved)"""
    equation = n.attr("equation").replace(" ", "")
    lhs, _, out = equation.partition("->")
    terms = lhs.split(",")
    if "..." in equation or not out and "->" not in equation:
        raise Uncostable(f"einsum equation '{equation}' with ellipsis or implicit output")
    sizes: dict[str, int] = {}
    for i, term in enumerate(terms):
        for letter, d in zip(term, n.input(i).dims):
            sizes[letter] = d
    macs = 0
    current = terms[0]
    for i, term in enumerate(terms[1:], start=1):
        involved = set(current) | set(term)
        macs += math.prod(sizes[c] for c in involved)
        needed = set(out).union(*terms[i + 1:])
        current = "".join(c for c in sorted(involved) if c in needed)
    if len(terms) == 1:  # a single operand: a sum over the dropped indices
        return Cost(flops=math.prod(sizes.values()) - n.output().numel)
    return Cost(macs=macs, dot_products=n.output().numel)
