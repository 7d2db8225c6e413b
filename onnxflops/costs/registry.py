"""The op-cost table: one registry of small pure rules keyed by (domain, op type).

A rule sees only a node's op type, attributes, input/output shapes and dtypes (and the values of
small constant inputs such as axes or pads), never weight values or names, and returns a `Cost`.
Rules use plain arithmetic on dims (`*`, `+`, `prod`) so that symbolic dims flow through them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from onnxflops.graph import domain_key

if TYPE_CHECKING:
    from onnxflops.costs.node import Node

CONTRACTION = "contraction"
ELEMENTWISE = "elementwise"
ACTIVATION = "activation"
NORMALIZATION = "normalization"
POOLING = "pooling"
REDUCTION = "reduction"
DATA_MOVEMENT = "data movement"
RECURRENT = "recurrent"
ATTENTION = "attention"
CONTROL_FLOW = "control flow"
QUANTIZATION = "quantization"
SIGNAL = "signal"
DETECTION = "detection"
RANDOM = "random"
LOSS = "loss"
TEXT = "text"
CLASSICAL_ML = "classical ml"
OTHER = "other"

ALL_INPUTS = "all"


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
}


@dataclass(frozen=True, slots=True)
class Rule:
    domain: str
    op_type: str
    category: str
    fn: Callable[["Node"], Cost]
    formula: str
    weights: tuple[int, ...] | str = ()
    buffers: tuple[int, ...] = ()
    # For weights packed several to an element: the weights each packed slot holds, from the
    # node's attributes (MatMulNBits packs two 4-bit weights a byte).
    packed: Callable[[Mapping[str, Any]], Mapping[int, Any]] | None = None

    def is_weight_slot(self, i: int) -> bool:
        return self.weights == ALL_INPUTS or i in self.weights


@dataclass
class Registry:
    rules: dict[tuple[str, str], Rule] = field(default_factory=dict)

    def register(self, op_types: str | Iterable[str], *, category: str, domain: str = "",
                 weights: tuple[int, ...] | str = (), buffers: tuple[int, ...] = (),
                 packed: Callable[[Mapping[str, Any]], Mapping[int, Any]] | None = None,
                 formula: str | None = None) -> Callable:
        """Decorator: register `fn` as the rule for each op type in `op_types`.

        `weights` lists the input slots whose initializers are learned parameters (ALL_INPUTS for
        elementwise ops, whose initializer operands are biases and scales); `buffers` lists slots
        holding non-learned state (BatchNormalization's running statistics); `packed` gives the
        weights held by slots that pack several to an element. The formula defaults to the first
        line of the rule's docstring.
        """
        names = [op_types] if isinstance(op_types, str) else list(op_types)

        def wrap(fn: Callable) -> Callable:
            text = formula or (fn.__doc__ or "").strip().splitlines()[0]
            for name in names:
                key = (domain, name)
                if key in self.rules:
                    raise ValueError(f"duplicate cost rule for {domain or 'ai.onnx'}::{name}")
                self.rules[key] = Rule(domain, name, category, fn, text, weights, buffers, packed)
            return fn

        return wrap

    def lookup(self, domain: str, op_type: str) -> Rule | None:
        return self.rules.get((domain_key(domain), op_type))


REGISTRY = Registry()
rule = REGISTRY.register
