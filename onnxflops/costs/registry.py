"""The op-cost table: one registry of small pure rules keyed by (domain, op type).

A rule sees only a node's op type, attributes, input/output shapes and dtypes (and the values of
small constant inputs such as axes or pads), never weight values or names, and returns a `Cost`.
Rules use plain arithmetic on dims (`*`, `+`, `prod`) so that symbolic dims flow through them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping

# Re-exported: with `rule` and the categories, what a family file imports.
from onnxflops.costs.cost import CONVENTIONS, PER_OP_CONVENTIONS, ZERO, Cost  # noqa: F401
from onnxflops.costs.node import Node
from onnxflops.graph import domain_key

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


Grads = frozenset  # the input slots whose gradient training needs


@dataclass(frozen=True, slots=True)
class Backward:
    """What computing the gradients of one node costs in training.

    `fn` receives the node and `grads`, the input slots whose gradient training needs (weights
    always; activations when something upstream needs them; never the model's inputs or
    non-trainable constants), and returns a `Cost`; `formula` is its docstring's first line.
    Contractions count the products `torch.utils.flop_counter.FlopCounterMode` counts for
    `loss.backward()`; other ops the arithmetic of their gradient formula, a copy or a broadcast
    being free.
    """

    fn: Callable[[Node, Grads], Cost]
    formula: str


@dataclass(frozen=True, slots=True)
class ConventionRule:
    """The FLOPs of one node under a convention that prices ops one by one, as another tool does
    (fvcore), rather than reading the node's `Cost`: `fn(node)` gives them; `formula` is its
    docstring's first line."""

    fn: Callable[[Node], Any]
    formula: str


@dataclass(frozen=True, slots=True)
class Rule:
    """The cost of one op: its forward rule (`fn`, `formula`), the input slots holding weights and
    buffers, and its backward rule where it has one."""

    domain: str
    op_type: str
    category: str
    fn: Callable[[Node], Cost]
    formula: str
    weights: tuple[int, ...] | str = ()
    buffers: tuple[int, ...] = ()
    # For weights packed several to an element: the weights each packed slot holds, from the
    # node's attributes (MatMulNBits packs two 4-bit weights a byte).
    packed: Callable[[Mapping[str, Any]], Mapping[int, Any]] | None = None
    backward: Backward | None = None
    # Per-op conventions (name, rule): under such a convention an op without one costs 0 FLOPs.
    conventions: tuple[tuple[str, ConventionRule], ...] = ()

    def is_weight_slot(self, i: int) -> bool:
        return self.weights == ALL_INPUTS or i in self.weights

    def convention(self, name: str) -> ConventionRule | None:
        return next((r for n, r in self.conventions if n == name), None)


@dataclass
class Registry:
    """Rules by (domain, op type), each with its backward beside its forward."""

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
        def wrap(fn: Callable) -> Callable:
            text = formula or first_line(fn)
            for name in _names(op_types):
                self.add(Rule(domain_key(domain), name, category, fn, text, weights, buffers,
                              packed))
            return fn

        return wrap

    def register_backward(self, op_types: str | Iterable[str], *, domain: str = "",
                          formula: str | None = None) -> Callable:
        """Decorator: register `fn(node, grads)` as the backward rule of each op type in
        `op_types`, which must have a forward rule and no backward one yet."""
        def wrap(fn: Callable) -> Callable:
            text = formula or first_line(fn)
            for name in _names(op_types):
                forward = self.lookup(domain, name)
                label = f"{domain or 'ai.onnx'}::{name}"
                if forward is None:
                    raise ValueError(f"backward rule for {label}, which has no forward rule")
                if forward.backward is not None:
                    raise ValueError(f"duplicate backward rule for {label}")
                self.add(replace(forward, backward=Backward(fn, text)), replacing=True)
            return fn

        return wrap

    def register_convention(self, convention: str, op_types: str | Iterable[str], *,
                            domain: str = "", formula: str | None = None) -> Callable:
        """Decorator: register `fn(node) -> FLOPs` as what each op type in `op_types` costs under
        the per-op `convention` (one of PER_OP_CONVENTIONS); the op must have a forward rule."""
        def wrap(fn: Callable) -> Callable:
            text = formula or first_line(fn)
            for name in _names(op_types):
                forward = self.lookup(domain, name)
                label = f"{domain or 'ai.onnx'}::{name}"
                if forward is None:
                    raise ValueError(f"{convention} rule for {label}, which has no forward rule")
                if forward.convention(convention) is not None:
                    raise ValueError(f"duplicate {convention} rule for {label}")
                made = (*forward.conventions, (convention, ConventionRule(fn, text)))
                self.add(replace(forward, conventions=made), replacing=True)
            return fn

        return wrap

    def add(self, rule: Rule, replacing: bool = False) -> None:
        """Put `rule` in the table; an op that has one already needs `replacing`."""
        key = (rule.domain, rule.op_type)
        if key in self.rules and not replacing:
            raise ValueError(f"duplicate cost rule for {rule.domain or 'ai.onnx'}::{rule.op_type}")
        self.rules[key] = rule

    def lookup(self, domain: str, op_type: str) -> Rule | None:
        return self.rules.get((domain_key(domain), op_type))

    def overlaid(self, rules: Iterable[Rule]) -> "Registry":
        """A copy of this table with `rules` in place of the ones of their ops."""
        table = Registry(dict(self.rules))
        for r in rules:
            table.add(r, replacing=True)
        return table


def first_line(fn: Callable) -> str:
    """A rule's formula: the first line of its docstring."""
    doc = (fn.__doc__ or "").strip()
    if not doc:
        raise ValueError(f"cost rule {getattr(fn, '__name__', fn)!r} has no formula: give it a "
                         "docstring whose first line is the formula, or pass formula=")
    return doc.splitlines()[0]


def _names(op_types: str | Iterable[str]) -> list[str]:
    return [op_types] if isinstance(op_types, str) else list(op_types)


REGISTRY = Registry()
rule = REGISTRY.register
backward = REGISTRY.register_backward
convention = REGISTRY.register_convention
