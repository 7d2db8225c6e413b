"""What one node computes (`Cost`) and the FLOP conventions that read it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True, slots=True)
class Cost:
    """What one node computes.

    `macs` are multiply-accumulates of contractions, whatever the dtype; `int_macs` is the part of
    them done in integer arithmetic (their 2 ops each go to int_ops, not flops). `dot_products` is
    how many float accumulation chains the float MACs form: the `exact` convention counts a length-p
    dot product as 2p−1, i.e. 2·macs − dot_products. `flops` is floating-point work outside
    contractions (bias adds, elementwise, ...); `int_ops` integer and boolean work.
    """

    macs: Any = 0
    dot_products: Any = 0
    flops: Any = 0
    int_ops: Any = 0
    int_macs: Any = 0
    detail: Mapping[str, Any] | None = field(default=None, compare=False)

    def __add__(self, other: "Cost") -> "Cost":
        return Cost(self.macs + other.macs, self.dot_products + other.dot_products,
                    self.flops + other.flops, self.int_ops + other.int_ops,
                    self.int_macs + other.int_macs)

    def scaled(self, k: Any) -> "Cost":
        return Cost(self.macs * k, self.dot_products * k, self.flops * k, self.int_ops * k,
                    self.int_macs * k, self.detail)

    def flops_under(self, convention: str) -> Any:
        """FLOPs under a named convention (see CONVENTIONS)."""
        if convention in PER_OP_CONVENTIONS:
            return 0  # such a convention prices only the ops it has a rule for (Rule.convention)
        contraction = 2 * (self.macs - self.int_macs)
        if convention == "macs":
            return contraction
        if convention == "exact":
            return contraction - self.dot_products + self.flops
        return contraction + self.flops

    @property
    def all_int_ops(self) -> Any:
        return self.int_ops + 2 * self.int_macs


ZERO = Cost()

CONVENTIONS = {
    "default": "2·MACs, plus 1 per element for each bias add and elementwise arithmetic op, "
               "plus the documented per-op figure for activations, reductions, normalization, pooling",
    "exact": "like default, but a length-p dot product costs 2p−1 (multiplies plus p−1 adds)",
    "macs": "contractions only: 2·MACs (what papers that quote MACs as 'FLOPs' mean, doubled)",
    "fvcore": "fvcore's FlopCountAnalysis: contractions as MACs, its fixed per-element terms for "
              "normalization, batch norm, upsampling and adaptive pooling, every other op 0",
}
# Conventions that price op by op, as another tool does, rather than from a node's Cost: each op's
# figure is its rule's (onnxflops.costs.fvcore); an op without one costs 0 FLOPs, as there.
PER_OP_CONVENTIONS = frozenset({"fvcore"})
