"""Params and buffers: which weights each node is credited with (`WeightCredit`, the one place the
count attributes them), and which initializers a node reads as learned weights: what `params`
counts and training updates.

Where a converter recorded the framework's own roles (`onnxflops.load.weight_roles`), the record
decides, each framework weight credited once and whole to the first node that reads it. Where no
converter recorded them, the graph decides. A cost rule names the input slots that hold weights; of the constants read there, these
hold no learned value and count as buffers:
- a table of sinusoids: a constant computed through Cos or Sin (rotary and sinusoidal position
  tables), a constant multiplied with positions (a Range, or integers) into angles that only
  Cos and Sin read (rotary's inverse frequencies), and the tables of x·cos + rotate_half(x)·sin
  folded into constants (rotate_half(x) = Concat(−x₂, x₁), x's halves);
- an attention mask: a constant added to query·key scores on their way to a Softmax, stored as
  it is (Swin's shifted-window masks, a causal mask, a zero bias); a learned bias reaches the
  scores through a lookup or a product (a relative-position table read by a Gather);
- a condition: a constant read by a node whose result is only ever compared (a causal mask
  merged with a padding mask, then tested by Greater).
"""

from __future__ import annotations


from typing import Any

import onnx

from onnxflops.costs import ALL_INPUTS, CONTRACTION, RECURRENT, Registry, Rule
from onnxflops.graph import GraphView, NodeRow, TensorInfo, is_float, is_standard_domain
from onnxflops.load import weight_roles
from onnxflops.load.weight_roles import CONSTANT, PARAMETER
from onnxflops.ops import (
    ANGLE_PRODUCTS,
    COMPARISONS,
    CUTS,
    GATHERS,
    MOVES,
    SCORE_STEPS,
    SHIFTS,
    SINUSOIDS,
    SOFTMAXES,
    TENSOR_PRODUCTS,
    VIEWS,
)

# Steps between query·key scores and their Softmax, moves among them.
_SCORE_STEPS = MOVES | SCORE_STEPS
_SEARCH_DEPTH = 12  # steps walked from a node; attention and rotary patterns are a few steps long
_NOT_PARAM_DTYPES = {onnx.TensorProto.INT64, onnx.TensorProto.BOOL, onnx.TensorProto.STRING,
                     onnx.TensorProto.UNDEFINED}


class WeightCredit:
    """The params and buffers each node of one count is credited with, each weight once: by the
    converter's record where `model` holds one, else by the weight slots of the node's rule."""

    def __init__(self, table: Registry, model: onnx.ModelProto):
        self.table = table
        self.roles = weight_roles(model)
        self.seen: set[str] = set()
        self.learned = LearnedWeights(table)
        # Weights met inside subgraphs, credited to the node that owns the subgraph.
        self.inner_params = self.inner_buffers = 0

    @property
    def recorded(self) -> bool:
        """Whether a converter recorded the framework's roles (then reads are credited too)."""
        return self.roles is not None

    @property
    def unused(self) -> dict[str, int]:
        """The framework's parameters that no node reads, by name (params + these = its own)."""
        return dict(self.roles.unused) if self.roles is not None else {}

    def of_node(self, rule: Rule, row: NodeRow, scope: GraphView) -> tuple[int, int]:
        """(params, buffers) a costed node reads, with what the subgraphs costed before it held."""
        params, buffers = self.read(rule, row, scope)
        params, buffers = params + self.inner_params, buffers + self.inner_buffers
        self.inner_params = self.inner_buffers = 0
        return params, buffers

    def of_inner_node(self, rule: Rule, row: NodeRow, scope: GraphView) -> None:
        """A node of a subgraph or function body: its weights go to the node that owns it."""
        params, buffers = self.read(rule, row, scope)
        self.inner_params += params
        self.inner_buffers += buffers

    def credit_unread(self, nodes: list, reads: list[list[str]], graph: GraphView,
                      folded_reads: list[str] = ()) -> None:
        """Recorded parameters and buffers that no costed node read as a weight (a class token
        reaching a Concat through an Expand, a table a Gather reads in part): each is credited
        whole to the first node that reads something computed from it; state the graph holds no
        copy of (`unread_buffers`) to the first node."""
        for entry, names in zip(nodes, reads):
            params, buffers = self._recorded(names, graph)
            entry.params += params
            entry.buffers += buffers
        if nodes:
            nodes[0].buffers += sum(self.roles.unread_buffers.values())
            # Read only by work the canonical forms folded to a value (a scalar factor moved
            # onto a product: CLIP-like logit_scale.clamp().exp()): the graph reads them still.
            params, buffers = self._recorded(folded_reads, graph)
            nodes[0].params += params
            nodes[0].buffers += buffers

    def read(self, rule: Rule, row: NodeRow, scope: GraphView) -> tuple[int, int]:
        """(params, buffers) read by a node not credited before: recorded weights read through
        any input; other initializers read at the rule's weight or buffer slots, as the graph
        rules judge them (a scalar hyperparameter is neither; a table no learned value)."""
        params = buffers = 0
        if self.roles is not None:
            params, buffers = self._recorded(row[3], scope)
        if not rule.weights and not rule.buffers:
            return params, buffers
        proto = row.proto
        packed = rule.packed(_attributes(proto)) if rule.packed else {}
        for slot, name in enumerate(row.inputs):
            if not name or not scope.holds_value(name):
                continue
            is_buffer = slot in rule.buffers
            if not (is_buffer or rule.is_weight_slot(slot)):
                continue
            unlearned = None
            for source in scope.weight_sources(name):
                info = scope.info(source)
                if self.roles is not None and self.roles.role(source) is not None:
                    continue  # counted by the record
                if source in self.seen or info is None or not _is_weight(info):
                    continue
                if is_hyperparameter(self.table, scope, proto, rule, info):
                    continue
                self.seen.add(source)
                # A packed slot's count holds where the slot reads the packed tensor itself.
                count = packed[slot] if slot in packed and source == name else info.numel
                if unlearned is None and not is_buffer:
                    unlearned = self.learned.unlearned(scope, proto, name)
                if is_buffer or source in unlearned:
                    buffers += count
                else:
                    params += count
        return params, buffers

    def _recorded(self, names: list[str], scope: GraphView) -> tuple[int, int]:
        """Params and buffers read through `names`, by the converter's record, each framework
        weight once and whole. Initializers the record does not name count by the graph rules."""
        params = buffers = 0
        for name in names:
            for source in scope.weight_sources(name) if name else ():
                role = self.roles.role(source)
                if role is None or role[0] == CONSTANT or role[1] in self.seen:
                    continue
                info = scope.info(source)
                count = self.roles.sizes.get(role[1])
                if count is None:
                    if info is None or not info.known:
                        continue
                    count = info.numel
                self.seen.add(role[1])
                if role[0] == PARAMETER:
                    params += count
                else:
                    buffers += count
        return params, buffers


def _attributes(proto: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in proto.attribute}


def _is_weight(info: TensorInfo) -> bool:
    return info.dtype not in _NOT_PARAM_DTYPES and info.shape is not None and len(info.shape) > 0


def is_hyperparameter(table: Registry, view: GraphView, proto: onnx.NodeProto, rule: Rule,
                      info: TensorInfo) -> bool:
    """A one-element operand of elementwise arithmetic is a scale or an epsilon, not a weight,
    unless it is the bias added to a contraction's output (a Dense(1) layer)."""
    if rule.weights != ALL_INPUTS or info.numel != 1:
        return False
    return proto.op_type != "Add" or not any(_is_contraction_output(table, view, name)
                                             for name in proto.input if name)


def _is_contraction_output(table: Registry, view: GraphView, name: str) -> bool:
    producer = view.producer(name)
    rule = table.lookup(producer.domain, producer.op_type) if producer is not None else None
    return rule is not None and rule.category in (CONTRACTION, RECURRENT)


ROUTED = "routed"  # a NodeReport detail: a routed expert's product (tokens × k in all)


def reads_routed_weights(view: GraphView, proto: onnx.NodeProto) -> bool:
    """Whether a contraction reads a weight table's rows gathered by runtime indices and no whole
    weight: each token's routed experts (a mixture-of-experts layer exported as gathered weights,
    T·k products over all experts), not an embedding lookup projected by a weight."""
    gathered = False
    for name in proto.input:
        if not name:
            continue
        source = name
        for _ in range(_SEARCH_DEPTH):  # through reshapes to the gather
            producer = view.producer(source) if source else None
            if producer is None or producer.op_type not in VIEWS:
                break
            source = producer.input[0]
        if view.holds_value(name):
            return False  # a whole weight: a plain product
        if producer is not None and producer.op_type in GATHERS \
                and view.weight_sources(producer.input[0]) \
                and not view.holds_value(producer.input[1]):
            gathered = True
    return gathered


class LearnedWeights:
    """Which sources of a node's constant inputs the graph shows to hold no learned value (see the
    module's docstring); what it finds of each graph is kept for the count."""

    def __init__(self, table: Registry):
        self.table = table
        self._graphs: dict[int, _GraphFacts] = {}

    def unlearned(self, view: GraphView, proto: onnx.NodeProto, name: str) -> frozenset[str]:
        """The initializers behind `name`, a constant input of `proto`, that are not learned."""
        facts = self._graphs.get(id(view))
        if facts is None:
            facts = self._graphs[id(view)] = _GraphFacts(self.table, view)
        if not facts.may_hold_tables:
            return frozenset()
        if facts.is_mask_addend(proto, name) or facts.makes_angles(proto, name) or \
                facts.rotates(proto, name) or facts.is_only_compared(proto):
            return view.weight_sources(name)
        return facts.tabulated(name)


class _GraphFacts:
    """What one graph shows of its constants' origins, found as questions come and kept."""

    def __init__(self, table: Registry, view: GraphView):
        self.table = table
        self.view = view
        # By constant tensor: the sources that reach it through a sinusoid, and whether a lookup
        # or a product of weights computed it (a learned value).
        self._origins: dict[str, tuple[frozenset[str], bool]] = {}
        op_types = {row.op_type for row in view.rows()}
        self.has_softmax = not op_types.isdisjoint(SOFTMAXES)
        self.has_sinusoids = not op_types.isdisjoint(SINUSOIDS)
        self.has_negation = "Neg" in op_types
        self.has_comparisons = not op_types.isdisjoint(COMPARISONS)
        # Most graphs (a CNN) hold none of the ops that masks and position tables meet.
        self.may_hold_tables = self.has_softmax or self.has_sinusoids or self.has_negation or \
            self.has_comparisons

    @property
    def consumers(self) -> dict[str, list[onnx.NodeProto]]:
        return self.view.consumers()

    def tabulated(self, name: str) -> frozenset[str]:
        """The sources that reach constant `name` through a Cos or a Sin."""
        return self._origin(name)[0] if self.has_sinusoids else frozenset()

    def computed(self, name: str) -> bool:
        """Whether a lookup or a product of weights computed constant `name`."""
        return self._origin(name)[1]

    def _origin(self, name: str) -> tuple[frozenset[str], bool]:
        origins, view = self._origins, self.view
        pending = [name]
        while pending:  # up the constant nodes that computed `name`, each once
            tensor = pending[-1]
            if tensor in origins:
                pending.pop()
                continue
            producer = view.producer(tensor) if view.is_constant(tensor) else None
            inputs = [i for i in producer.input if i] if producer is not None else []
            unknown = [i for i in inputs if i not in origins]
            if unknown:
                pending += unknown
                continue
            pending.pop()
            origins[tensor] = self._follow(producer, inputs) if producer is not None \
                else (frozenset(), False)
        return origins[name]

    def _follow(self, producer: onnx.NodeProto, inputs: list[str]) -> tuple[frozenset[str], bool]:
        op_type, standard = producer.op_type, is_standard_domain(producer.domain)
        if op_type in SINUSOIDS and standard:
            tabulated = frozenset().union(*map(self.view.weight_sources, inputs))
        else:
            tabulated = frozenset().union(*(self._origins[i][0] for i in inputs))
        rule = self.table.lookup(producer.domain, op_type)
        computed = (op_type in GATHERS and standard) or (
            rule is not None and rule.category in (CONTRACTION, RECURRENT)) or any(
            self._origins[i][1] for i in inputs)
        return tabulated, computed

    def is_mask_addend(self, proto: onnx.NodeProto, name: str) -> bool:
        """`name` is stored as it is (no lookup, no product) and added onto attention scores
        that go on to a Softmax."""
        if not self.has_softmax or proto.op_type != "Add" or not is_standard_domain(proto.domain):
            return False
        info = self.view.info(name)
        if info is None or info.shape is None or len(info.shape) < 2:
            return False  # a mask spans the query and the key axes; a bias does not
        others = [i for i in proto.input if i and i != name]
        return (len(others) == 1 and not self.view.is_constant(others[0])
                and self._are_scores(others[0]) and not self.computed(name)
                and self._reaches_softmax(proto.output[0]))

    def _are_scores(self, name: str) -> bool:
        """Computed from a product of two activations (query·key) by elementwise steps."""
        def is_product_of_activations(producer: onnx.NodeProto) -> bool:
            return producer.op_type in TENSOR_PRODUCTS and sum(
                1 for i in producer.input if i and not self.view.is_constant(i)) == 2

        return self._computed_from(name, is_product_of_activations, _SCORE_STEPS)

    def _reaches_softmax(self, name: str) -> bool:
        frontier = [name]
        for _ in range(_SEARCH_DEPTH):
            following = []
            for tensor in frontier:
                for consumer in self.consumers.get(tensor, ()):
                    if not is_standard_domain(consumer.domain):
                        continue
                    if consumer.op_type in SOFTMAXES:
                        return True
                    if consumer.op_type in _SCORE_STEPS:
                        following.extend(o for o in consumer.output if o)
            if not following:
                return False
            frontier = following
        return False

    def makes_angles(self, proto: onnx.NodeProto, name: str) -> bool:
        """`proto` multiplies `name` with positions into angles that only Cos and Sin read
        (rotary's inverse frequencies times the positions)."""
        if not self.has_sinusoids or proto.op_type not in ANGLE_PRODUCTS or \
                not is_standard_domain(proto.domain):
            return False
        others = [i for i in proto.input if i and i != name]
        return (len(others) == 1 and self._are_positions(others[0])
                and self._only_read_by(proto.output[0], SINUSOIDS))

    def _are_positions(self, name: str) -> bool:
        """Counted positions: a Range, or integers made float, through moves and offsets."""
        def counts(producer: onnx.NodeProto) -> bool:
            if producer.op_type == "Cast":
                source = self.view.info(producer.input[0])
                return source is not None and bool(source.dtype) and not is_float(source.dtype)
            return producer.op_type == "Range"

        return self._computed_from(name, counts, MOVES | SHIFTS)

    def _computed_from(self, name: str, is_origin, steps: frozenset[str]) -> bool:
        """Whether `name` was computed by a node `is_origin` accepts, through `steps` only, each
        followed up its first varying input (its first input where none varies)."""
        view = self.view
        for _ in range(_SEARCH_DEPTH):
            producer = view.producer(name)
            if producer is None or not is_standard_domain(producer.domain):
                return False
            if is_origin(producer):
                return True
            if producer.op_type not in steps:
                return False
            varying = [i for i in producer.input if i and not view.is_constant(i)]
            name = varying[0] if varying else producer.input[0]
        return False

    def rotates(self, proto: onnx.NodeProto, name: str) -> bool:
        """`proto` multiplies `name` onto x or onto rotate_half(x) in x·cos + rotate_half(x)·sin:
        a rotary table folded into a constant."""
        if not self.has_negation or proto.op_type != "Mul" or not is_standard_domain(proto.domain):
            return False
        others = [i for i in proto.input if i and i != name]
        if len(others) != 1:
            return False
        if self._rotated_half_of(others[0]) is not None:
            return True  # the sines
        for consumer in self.consumers.get(proto.output[0], ()):
            if consumer.op_type != "Add" or not is_standard_domain(consumer.domain):
                continue
            for sibling in (i for i in consumer.input if i and i != proto.output[0]):
                product = self.view.producer(sibling)
                if product is not None and product.op_type == "Mul" and any(
                        self._rotated_half_of(i) == others[0] for i in product.input if i):
                    return True  # the cosines
        return False

    def _rotated_half_of(self, name: str) -> str | None:
        """x where `name` is rotate_half(x): Concat(−x₂, x₁) of x's two halves (Slices or one
        Split; moves between them allowed, as a stack and a reshape)."""
        joined = self._producer_past_moves(name)
        if joined is None or joined.op_type != "Concat" or len(joined.input) != 2:
            return None
        negated = self._producer_past_moves(joined.input[0])
        if negated is None or negated.op_type != "Neg":
            return None
        second = self._producer_past_moves(negated.input[0])
        first = self._producer_past_moves(joined.input[1])
        if second is None or first is None or second.op_type != first.op_type or \
                second.op_type not in CUTS or second.input[0] != first.input[0]:
            return None
        return second.input[0]

    def _producer_past_moves(self, name: str) -> onnx.NodeProto | None:
        """The node that computed `name`, past reshapes and transposes."""
        view = self.view
        for _ in range(_SEARCH_DEPTH):
            producer = view.producer(name)
            if producer is None or not is_standard_domain(producer.domain) or \
                    producer.op_type not in VIEWS:
                return producer
            name = producer.input[0]
        return None

    def is_only_compared(self, proto: onnx.NodeProto) -> bool:
        """Whatever `proto` computes is only ever compared (through moves): a condition."""
        if not self.has_comparisons or not is_standard_domain(proto.domain):
            return False
        return self._only_read_by(proto.output[0], COMPARISONS)

    def _only_read_by(self, name: str, readers: frozenset[str]) -> bool:
        """Every use of `name`, past moves, is by one of `readers` (and there is one)."""
        frontier, read = [name], False
        for _ in range(_SEARCH_DEPTH):
            following = []
            for tensor in frontier:
                for consumer in self.consumers.get(tensor, ()):
                    standard = is_standard_domain(consumer.domain)
                    if consumer.op_type in readers and standard:
                        read = True
                    elif consumer.op_type in MOVES and standard:
                        following.extend(o for o in consumer.output if o)
                    else:
                        return False
            if not following:
                return read
            frontier = following
        return False
