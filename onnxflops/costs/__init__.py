"""The op-cost table. Importing this package registers every rule in REGISTRY.

Each family file registers an op's forward rule (`@rule`) and, directly after it, its backward
rule (`@backward`): one table, forward and backward side by side. `register_rule` adds a rule for
a custom op; `with_rules` gives a copy of the table with rules for one count.
"""

from __future__ import annotations

from typing import Callable, Mapping

from onnxflops.costs import (  # noqa: F401  (imported for their registrations)
    activation,
    attention,
    contraction,
    contrib,
    control_flow,
    data_movement,
    detection,
    elementwise,
    functions,
    linalg,
    ml,
    normalization,
    optimizers,
    pooling,
    quantization,
    recurrent,
    reduction,
    sampling,
    selection,
    signal,
    spatial,
    text,
)
# fvcore's per-op figures go on the rules registered above: imported after every family.
from onnxflops.costs import fvcore  # noqa: F401,E402  isort: skip
from onnxflops.costs.node import Engine, Node, check_node
from onnxflops.costs.registry import (
    ALL_INPUTS,
    CONTRACTION,
    CONVENTIONS,
    OTHER,
    PER_OP_CONVENTIONS,
    RECURRENT,
    REGISTRY,
    ZERO,
    Backward,
    Cost,
    Grads,
    Registry,
    Rule,
    first_line,
)
from onnxflops.errors import OnnxFlopsError
from onnxflops.graph import domain_key

__all__ = ["ALL_INPUTS", "CONTRACTION", "CONVENTIONS", "OTHER", "PER_OP_CONVENTIONS", "RECURRENT",
           "REGISTRY", "ZERO",
           "Backward", "Cost", "Engine", "Grads", "Node", "Registry", "Rule", "RuleOverrides",
           "check_node", "register_rule", "with_rules"]

ForwardFn = Callable[[Node], Cost]
BackwardFn = Callable[[Node, Grads], Cost]
RuleOverrides = Mapping[tuple[str, str], ForwardFn | tuple[ForwardFn, BackwardFn]]


def register_rule(domain: str, op_type: str, fn: ForwardFn, *, backward: BackwardFn | None = None,
                  category: str | None = None, weights: tuple[int, ...] | str | None = None,
                  replace: bool = False) -> Rule:
    """Register `fn(node) -> Cost` as the rule of `domain::op_type` for every later count.

    `backward(node, grads) -> Cost` prices its gradients in training counts. Each function's
    docstring's first line is its formula. `weights` lists the input slots holding learned
    parameters. Omitted, `backward`, `category` and `weights` are those of the rule replaced, or
    none, "other" and none for a new op. An op that has a rule already needs `replace=True`.
    """
    if REGISTRY.lookup(domain, op_type) is not None and not replace:
        raise OnnxFlopsError(f"{domain or 'ai.onnx'}::{op_type} has a cost rule already: pass "
                             "replace=True to replace it")
    made = _custom_rule(REGISTRY, domain, op_type, fn, backward, category, weights)
    REGISTRY.add(made, replacing=True)
    return made


def with_rules(rules: RuleOverrides | None, table: Registry = REGISTRY) -> Registry:
    """`table`, or a copy of it where each (domain, op type) in `rules` has the rule given: a
    forward function, or a (forward, backward) pair. The table itself is left as it is."""
    if not rules:
        return table
    made = []
    for key, given in rules.items():
        if not (isinstance(key, tuple) and len(key) == 2 and all(isinstance(k, str) for k in key)):
            raise OnnxFlopsError(f"rules: key {key!r} is not a (domain, op_type) pair of strings")
        if isinstance(given, tuple) and len(given) != 2:
            raise OnnxFlopsError(f"rules: {key!r} maps to a tuple of length {len(given)}: give "
                                 "a function, or a (forward, backward) pair")
        forward, back = given if isinstance(given, tuple) else (given, None)
        made.append(_custom_rule(table, *key, forward, back, None, None))
    return table.overlaid(made)


def _custom_rule(table: Registry, domain: str, op_type: str, fn: ForwardFn,
                 backward: BackwardFn | None, category: str | None,
                 weights: tuple[int, ...] | str | None) -> Rule:
    """A rule for `domain::op_type` from user functions; what is not given follows the table's
    rule for the op, if it has one."""
    label = f"{domain or 'ai.onnx'}::{op_type}"
    for role, f in (("rule", fn), ("backward rule", backward or fn)):
        if not callable(f):
            raise OnnxFlopsError(f"the {role} given for {label} is not a function")
    try:
        formula = first_line(fn)
        back = Backward(backward, first_line(backward)) if backward is not None else None
    except ValueError as e:
        raise OnnxFlopsError(f"{label}: {e}") from None
    base = table.lookup(domain, op_type)
    if back is None and base is not None:
        back = base.backward
    return Rule(domain_key(domain), op_type,
                category if category is not None else (base.category if base else OTHER),
                fn, formula,
                weights if weights is not None else (base.weights if base else ()),
                base.buffers if base else (), base.packed if base else None, back,
                base.conventions if base else ())
