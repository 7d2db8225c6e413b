"""Stage 5: apply the op-cost table to every node of an analyzed model and build the report."""

from __future__ import annotations

import contextlib
from typing import Any, NamedTuple

import numpy as np
import onnx

from onnxflops.analysis import (
    AnalyzedModel,
    ConstantWork,
    analyze,
    analyzed_function_body,
    attribute_key,
    body_input_names,
    coefficient_values,
    coefficients_shape_body,
    expansion_model,
    has_unknown_outputs,
    is_foldable_cost,
    local_function_model,
    mark_constants,
    refine_subgraph,
    sequence_bytes,
)
from onnxflops.canonical import canonicalize
from onnxflops.costs import (
    ALL_INPUTS,
    CONTRACTION,
    OTHER,
    REGISTRY,
    ZERO,
    Backward,
    Cost,
    Node,
    Registry,
    Rule,
    check_node,
)
from onnxflops.counting.training import GradientFlow
from onnxflops.counting.weights import ROUTED, WeightCredit, reads_routed_weights
from onnxflops.dims import SYMBOL_MARK, is_symbolic
from onnxflops.errors import OnnxFlopsError, Uncostable, first_line
from onnxflops.graph import (GraphView, NodeRow, TensorInfo, bodies, domain_key, free_names,
                             holds_subgraph, is_standard_domain, write_declared_shapes)
from onnxflops.ops import CONCATENATIONS, SEQUENCE_OPS
from onnxflops.results import NodeReport, Report, Totals, Uncosted

def count_model(analyzed: AnalyzedModel, convention: str = "default", name: str = "model",
                inputs: dict[str, list] | None = None, training: bool = False,
                table: Registry = REGISTRY) -> Report:
    """The report of `analyzed`, each node costed by its rule in `table`."""
    return _Counter(analyzed, convention, training, table).run(name, inputs or {})


class _Counter:
    """Costs every node by the table's rules; the `Engine` that rules of composite ops call."""

    def __init__(self, analyzed: AnalyzedModel, convention: str, training: bool = False,
                 table: Registry = REGISTRY):
        self.analyzed = analyzed
        self.convention = convention
        # Calls of the model's local functions, where normalize left them calls (too many nodes
        # to inline): each costs its body's cost, analysed once per signature (function_cost).
        self.local_functions = {(f.domain, f.name) for f in analyzed.model.functions}
        if self.local_functions:
            table = table.overlaid(_local_function_rule(domain, name)
                                   for domain, name in self.local_functions
                                   if table.lookup(domain, name) is None)
        self.table = table
        # Training: the gradient flow of each graph met (by id of its view), for the backward pass.
        self.flows: dict[int, GradientFlow] | None = None
        if training:
            self.flows = {id(analyzed.graph): GradientFlow(table, analyzed.graph)}
        self.bodies: dict[tuple, GraphView] = {}  # by (scope, node outputs, attribute)
        # By (expansion key, canonical): the analyzed body (see _expansion).
        self.expansions: dict[tuple, tuple[AnalyzedModel, tuple[str, ...]]] = {}
        # Function-body costs by node signature: a model repeats the same LayerNorm or Gelu many
        # times. Kept for one count: the signatures hold shapes, unbounded across models, and a
        # count may bring a table of its own.
        self.expansion_costs: dict[tuple, Cost] = {}
        self.expansion_backwards: dict[tuple, Cost] = {}
        self.expanding: set[tuple] = set()  # keys whose canonical bodies are being costed
        # Expansion keys whose bodies' costs were found to read the node's coefficients.
        self.coefficient_keys: set[tuple] = set()
        self.opsets = analyzed.opsets
        self.weights = WeightCredit(table, analyzed.model)  # each node's params and buffers
        self.outcomes: dict[tuple, _Outcome | object] = {}  # by node signature
        self.uncosted: list[Uncosted] = []
        self.warnings: list[str] = list(analyzed.warnings)

    def run(self, name: str, inputs: dict[str, list]) -> Report:
        graph = self.analyzed.graph
        nodes: list[NodeReport] = []
        total, constant_work, foldable = Totals(), Totals(), Totals()
        constant_nodes = foldable_nodes = 0
        policy = None  # the constant-work policy, made where the graph has constant nodes
        bounded = set(graph.bounds)  # tensors whose sizes are upper bounds, and what they reach
        shares = set(graph.routed)  # parts of a split by data, and what is computed from them
        # tensors whose sizes are read from data with no bound, and what they reach: why
        unbounded = dict(graph.unbounded)
        reads: list[list[str]] = []  # each node's inputs, where recorded weights are credited
        folded_reads: list[str] = []  # what constant nodes read (their work folded or free)
        for position, row in enumerate(graph.rows()):
            constant = graph.is_constant_row(row)
            if constant:
                if row.op_type == "Constant":
                    continue
                policy = policy or ConstantWork(graph)
                # Noise drawn at each forward and run through the weights: the network's work.
                constant = not policy.works_on_a_draw(row)
            if constant:
                if self.weights.recorded:
                    folded_reads.extend(row.inputs)
                may_fold = policy.may_fold(row)
                entry = self._report(row, graph, graph.kinds.get(position), count_params=False,
                                     report_uncosted=may_fold)
                if may_fold and is_foldable_cost(entry.macs, entry.flops):
                    # Work on weights alone: the network's (its weights credited downstream).
                    entry.foldable = True
                    foldable_nodes += 1
                    foldable.add(entry)
                    nodes.append(entry)
                    if self.weights.recorded:
                        reads.append([])
                else:
                    constant_nodes += 1
                    constant_work.add(entry)
                continue
            before = len(self.uncosted)
            entry = self._report(row, graph, graph.kinds.get(position))
            if unbounded:
                _explain_unbounded(row, unbounded, self.uncosted[before:])
            if (_reads_share(row, shares) or reads_routed_weights(graph, row.proto)) \
                    and entry.category == CONTRACTION:
                entry.detail = {**(entry.detail or {}), ROUTED: True}  # details may be shared
            nodes.append(entry)
            if self.weights.recorded:
                reads.append(row[3])
            if bounded and _reads_bound(row, bounded, graph.bounds):
                nodes[-1].bound = True
        if bounded:
            self._warn_bounds(nodes, graph.bounds)
        if self.weights.recorded:
            self.weights.credit_unread(nodes, reads, graph, folded_reads)
        for entry in nodes:
            total.add(entry)
        unused = self.weights.unused
        total.unused_params = sum(unused.values())
        missing = sorted({u.op_type for u in self.uncosted if u.reason.startswith("no cost rule")})
        if missing:
            self.warnings.append(f"no cost rule for {', '.join(missing)}: those nodes are uncosted "
                                 "and the totals exclude them")
        elif self.uncosted:
            self.warnings.append(f"{len(self.uncosted)} node(s) could not be costed: the totals "
                                 "exclude them")
        return Report(name, self.convention, inputs, total, nodes, constant_work, constant_nodes,
                      self.uncosted, self.warnings, foldable, foldable_nodes, unused)

    def _warn_bounds(self, nodes: list[NodeReport], bounds: dict[str, str]) -> None:
        count = sum(entry.bound for entry in nodes)
        if count:
            why = "; ".join(f"'{name}': {reason}" for name, reason in list(bounds.items())[:3])
            more = f"; and {len(bounds) - 3} more" if len(bounds) > 3 else ""
            self.warnings.append(f"{count} node(s) counted at an upper bound, as sizes that "
                                 f"depend on data are taken at their largest ({why}{more})")

    def _report(self, row: NodeRow, scope: GraphView, kind: int | None = None,
                count_params: bool = True, report_uncosted: bool | None = None) -> NodeReport:
        """`kind`: what analysis found the node alike in with others (see GraphView.kinds).
        `count_params` False: a constant node's, whose weights the nodes reading it count;
        `report_uncosted` (by default as `count_params`) lists the node in `uncosted` if its rule
        cannot cost it."""
        proto, op_type, domain, input_names, output_names = row
        opset = self.opsets.get(domain, 0)
        # Training counts each node's backward from its own Node: no reuse then; nor where the
        # bytes depend on a sequence's elements, which the signature does not hold.
        on_sequences = op_type in SEQUENCE_OPS and not domain
        reuse = scope is self.analyzed.graph and self.flows is None and not on_sequences
        inputs = outputs = signature = outcome = node = None
        if reuse and kind is not None:
            signature = (_KIND, kind)
        elif reuse:
            inputs, outputs = _infos(row, scope)
            signature = self._signature(row, inputs, outputs, opset)
        refined = set()  # the refinements the signature took: by coefficients, by constants
        while signature is not None:
            outcome = self.outcomes.get(signature)
            if outcome is _READS_FLOATS or outcome is _VALUE_DEPENDENT:
                refined.add(outcome)
                signature = (signature, _refinement(outcome, row, scope))
                continue
            break
        if outcome is None:
            rule = self.table.lookup(domain, op_type)
            if inputs is None:
                inputs, outputs = _infos(row, scope)
            node = Node(proto, scope, opset, self)
            listed = count_params if report_uncosted is None else report_uncosted
            cost = self._cost(rule, node, listed)
            flops = self._flops(rule, node, cost, listed)
            outcome = _Outcome.of(rule, cost if flops is not None else None, flops, inputs,
                                  outputs)
            if signature is not None and cost is not None:
                # What the rule read beyond the signature: nodes alike in it too cost alike.
                for reads, refinement in ((node.read_floats, _READS_FLOATS),
                                          (node.read_values, _VALUE_DEPENDENT)):
                    if reads and refinement not in refined:
                        self.outcomes[signature] = refinement
                        signature = (signature, _refinement(refinement, row, scope))
                self.outcomes[signature] = outcome
        entry = NodeReport(proto.name, op_type, domain, proto, *outcome.entry_fields)
        if on_sequences and outcome.costed:
            read, written = sequence_bytes(scope, row)
            entry.bytes_read += read
            entry.bytes_written += written
        if self.flows is not None and count_params:
            backward = self._backward(outcome.rule, node) if outcome.costed else None
            backward = backward or ZERO  # uncosted: reported, and left out of the totals
            entry.backward_macs = backward.macs
            entry.backward_flops = backward.flops_under(self.convention)
        if outcome.costed and count_params:
            entry.params, entry.buffers = self.weights.of_node(outcome.rule, row, scope)
        return entry

    @staticmethod
    def _signature(row: NodeRow, inputs: list[TensorInfo | None], outputs: list[TensorInfo | None],
                   opset: int) -> tuple | None:
        """What a rule's result can depend on, short of constant values: nodes alike in it cost
        alike (graphs repeat a few kinds of node thousands of times). None: never reuse (a
        subgraph's cost credits its weights to the node that owns it)."""
        proto, op_type, domain, input_names, output_names = row
        if proto.attribute and holds_subgraph(proto):
            return None
        return (op_type, domain, opset, attribute_key(proto, opset),
                _type_keys(input_names, inputs), _type_keys(output_names, outputs))

    def _cost(self, rule: Rule | None, node: Node, report_uncosted: bool) -> Cost | None:
        if rule is None:
            domain = f"{node.domain}::" if domain_key(node.domain) else ""
            self.uncosted.append(Uncosted(node.name, node.op_type,
                                          f"no cost rule for {domain}{node.op_type}"))
            return None
        try:
            return apply_rule(rule.fn, node)
        except Uncostable as e:
            if report_uncosted:
                label = node.name or f"{node.op_type} node"
                self.uncosted.append(Uncosted(label, node.op_type, str(e)))
            return None

    def _flops(self, rule: Rule | None, node: Node, cost: Cost | None,
               count_params: bool) -> object | None:
        """The node's FLOPs under the count's convention: from its Cost, or by the rule's own
        figure under a per-op convention (fvcore); None where it cannot be costed."""
        if cost is None:
            return None
        per_op = rule.convention(self.convention)
        if per_op is None:
            return cost.flops_under(self.convention)
        try:
            return apply_rule(lambda n: Cost(flops=per_op.fn(n)), node).flops
        except Uncostable as e:
            if count_params:
                label = node.name or f"{node.op_type} node"
                self.uncosted.append(Uncosted(label, node.op_type, f"{self.convention}: {e}"))
            return None

    def _backward(self, rule: Rule, node: Node) -> Cost | None:
        flow = self.flows[id(node.scope)]
        if not flow.needs_backward(node.proto):
            return ZERO
        label = node.name or f"{node.op_type} node"
        gradient = rule.backward
        if gradient is None:
            self.uncosted.append(Uncosted(label, node.op_type, f"no backward rule for "
                                          f"{node.op_type}: the backward totals exclude it"))
            return None
        try:
            return apply_rule(gradient.fn, node, flow.grads(node.proto))
        except Uncostable as e:
            self.uncosted.append(Uncosted(label, node.op_type, f"backward: {e}"))
            return None

    def op_cost(self, node: Node) -> Cost:
        rule = self.table.lookup(node.domain, node.op_type)
        if rule is None:
            raise Uncostable(f"no cost rule for {node.op_type}")
        return rule.fn(node)

    def subgraph_cost(self, node: Node, attr: str, inputs: list[TensorInfo | None],
                      values: dict[int, np.ndarray] | None = None) -> Cost:
        body = next((a.g for a in node.proto.attribute if a.name == attr), None)
        if body is None:
            raise Uncostable(f"has no subgraph '{attr}'")
        view = GraphView(body, parent=node.scope)
        for formal, given in zip(body.input, inputs):
            declared = view.info(formal.name)
            # a size the call gives replaces a dim the body names (FlexAttention's score_mod
            # declares its scores BxHxLxS)
            if given is not None and given.shape is not None and (
                    declared is None or not declared.concrete):
                view.tensors[formal.name] = TensorInfo(formal.name, given.dtype, given.shape)
        for slot, value in (values or {}).items():
            view.values[body.input[slot].name] = value
        if has_unknown_outputs(view):
            # the body's standard ops run at the model's opset, whatever domain holds the node
            running = {"": node.opset} if is_standard_domain(node.domain) else {}
            refine_subgraph(view, {**self.opsets, **running})
        mark_constants(view)
        self.bodies[_body_key(node, attr, values)] = view
        return self._sum_graph(view, self.opsets, f"subgraph '{attr}'")[0]

    def subgraph_backward(self, node: Node, attr: str, formal_grads: frozenset[int],
                          values: dict[int, np.ndarray] | None = None) -> Cost:
        view = self.bodies.get(_body_key(node, attr, values))
        if view is None:
            raise Uncostable(f"subgraph '{attr}' has no forward count")
        carrying = [f.name for i, f in enumerate(view.graph.input) if i in formal_grads]
        flow = GradientFlow(self.table, view, carrying, parent=self.flows[id(node.scope)])
        self.flows[id(view)] = flow
        return self._sum_backward(view, self.opsets, flow, f"subgraph '{attr}'")

    def function_cost(self, node: Node) -> Cost:
        key = self._function_key(node)
        cost = self.expansion_costs.get(key)
        if cost is None:
            with self._expanding(key) as canonical:
                analyzed, _ = self._expansion(node, key, canonical)
                cost, read = self._sum_graph(analyzed.graph, analyzed.opsets,
                                             f"the function body of {node.op_type}")
            if read and not node.read_floats and coefficient_values(node.proto):
                # A rule of the body read a value or a coefficient: the node's may count.
                self.coefficient_keys.add(key)
                key = self._function_key(node)
            if canonical:
                self.expansion_costs[key] = cost
        return cost

    def _function_key(self, node: Node) -> tuple:
        """What the cost of the node's function body depends on: _expansion_key, and the node's
        coefficients where they may change it (then the node's cost reads them)."""
        key = _expansion_key(node)
        if key in self.coefficient_keys or coefficients_shape_body(node.op_type, node.domain,
                                                                   node.opset):
            node.read_floats = True
            return key, coefficient_values(node.proto)
        return key

    def function_backward(self, node: Node, grads: frozenset[int]) -> Cost:
        key = self._function_key(node)
        cost = self.expansion_backwards.get((key, grads))
        if cost is None:
            with self._expanding(key) as canonical:
                analyzed, formal_inputs = self._expansion(node, key, canonical)
                flow = GradientFlow(self.table, analyzed.graph, [formal_inputs[i] for i in grads])
                cost = self._sum_backward(analyzed.graph, analyzed.opsets, flow,
                                          f"the function body of {node.op_type}")
            if canonical:
                self.expansion_backwards[(key, grads)] = cost
        return cost

    def differentiated_backward(self, node: Node, xs: list[str], y: str) -> Cost:
        view = node.scope
        producers = view.producers()
        if y not in producers and y not in xs and view.info(y) is None:
            raise Uncostable(f"y '{y}' is no tensor of its graph")
        flow = GradientFlow(self.table, view, xs, weights_learn=False)
        return self._sum_backward(view, self.opsets, flow, f"the gradient of '{y}'",
                                  among=_computing(view, y, producers))

    @contextlib.contextmanager
    def _expanding(self, key: tuple):
        """While a body of `key` is costed: yields whether to take its canonical form. Not where
        that body is being costed already: an op met inside its own canonical body is what the
        canonical forms fused its definition into (Gelu's erf chain into Gelu), costed then by
        its body as written."""
        if key in self.expanding:
            yield False
            return
        self.expanding.add(key)
        try:
            yield True
        finally:
            self.expanding.discard(key)

    def _expansion(self, node: Node, key: tuple,
                   canonical: bool) -> tuple[AnalyzedModel, tuple[str, ...]]:
        """The analyzed function body for nodes like `node` (canonical, or as written), and the
        names its inputs have there (those of the first such node: the body is shared)."""
        found = self.expansions.get((key, canonical))
        if found is None:
            local = (node.proto.domain, node.op_type) in self.local_functions
            try:
                inputs, values = _expansion_inputs(node)
                body = local_function_model(node.proto, inputs, values, self.analyzed.model) \
                    if local else expansion_model(node.proto, node.opset, inputs, values)
                if not local:  # what the body's inference cannot find (a Reduce of axes read
                    # from data), its outputs' shapes as the node has them
                    write_declared_shapes(body, _known_outputs(node))
                weights = _weight_inputs(node, body_input_names(node.proto) if local
                                         else node.proto.input)
                analyzed = _staged(body, canonical, local, weights)
                if canonical and any(row.op_type == node.op_type for row in analyzed.graph.rows()):
                    # The op's own definition, which the canonical forms fuse back into the op.
                    analyzed = _staged(body, False, local, weights)
            except (RuntimeError, ValueError, onnx.checker.ValidationError,
                    onnx.shape_inference.InferenceError) as e:  # what onnx's inliner raises
                if local:
                    raise
                raise Uncostable(f"its function body cannot be expanded: {first_line(e)}") \
                    from None
            except OnnxFlopsError as e:
                if local:
                    raise
                # The node passed its own op's inference; the body, ONNX's definition at the
                # first opset that gives one (PRelu-6's is PRelu-16's, whose slope broadcasts as
                # numpy's, not per channel), may not take its shapes: the node is uncosted.
                why = str(e).replace(", as onnxruntime would", "")  # the body's, not the model's
                raise Uncostable(f"ONNX's function body of {node.op_type}, by which it is "
                                 f"costed, refuses its shapes: {why}") from None
            found = self.expansions[(key, canonical)] = analyzed, tuple(node.proto.input)
        return found

    def _sum_graph(self, view: GraphView, opsets: dict[str, int], where: str) -> tuple[Cost, bool]:
        """Cost of one run of an inner graph, and whether some rule read a constant's value or a
        coefficient; weights it reads are credited to the outer node."""
        total, read = ZERO, False
        policy = None  # the constant-work policy, made where the graph has constant nodes
        for row in view.rows():
            folding = view.is_constant_row(row)
            if folding:
                # Free but for the float work a body runs on its own tables (a window's Range).
                policy = policy or ConstantWork(view)
                if row.op_type == "Constant" or not policy.may_fold(row):
                    continue
            proto = row.proto
            rule = self.table.lookup(proto.domain, proto.op_type)
            if rule is None:
                raise Uncostable(f"{where} holds {proto.op_type}, which has no cost rule")
            inner = Node(proto, view, opsets.get(domain_key(proto.domain), 0), self)
            try:
                cost = apply_rule(rule.fn, inner)
            except Uncostable as e:
                raise Uncostable(f"in {where}, node '{proto.name}' ({proto.op_type}): {e}") from None
            if folding and not is_foldable_cost(cost.macs, cost.flops):
                continue
            total = total + cost
            read = read or inner.read_values or inner.read_floats
            if not folding:  # a folded node's weights go to the node reading its result
                self.weights.of_inner_node(rule, row, view)
        return total, read

    def _sum_backward(self, view: GraphView, opsets: dict[str, int], flow: GradientFlow,
                      where: str, among: set[int] | None = None) -> Cost:
        """Backward cost of one run of an inner graph, its gradients flowing as `flow` says;
        `among`: only the nodes of these ids (those a differentiated tensor is computed by)."""
        total = ZERO
        for proto in view.nodes():
            if not flow.needs_backward(proto) or among is not None and id(proto) not in among:
                continue
            gradient = _backward_rule(self.table.lookup(proto.domain, proto.op_type))
            if gradient is None:
                raise Uncostable(f"{where} holds {proto.op_type}, which has no backward rule")
            inner = Node(proto, view, opsets.get(domain_key(proto.domain), 0), self)
            try:
                total = total + apply_rule(gradient.fn, inner, flow.grads(proto))
            except Uncostable as e:
                raise Uncostable(f"in {where}, node '{proto.name}' ({proto.op_type}): {e}") from None
        return total


def _computing(view: GraphView, tensor: str,
               producers: dict[str, onnx.NodeProto]) -> set[int]:
    """Ids of the nodes `tensor` is computed by, directly or not (a subgraph's outer reads
    included)."""
    found: set[int] = set()
    pending = [tensor]
    while pending:
        proto = producers.get(pending.pop())
        if proto is None or id(proto) in found:
            continue
        found.add(id(proto))
        pending.extend(name for name in proto.input if name)
        pending.extend(set().union(*map(free_names, bodies(proto))))
    return found


def _staged(body: onnx.ModelProto, canonical: bool, validate: bool,
            weights: list[str]) -> AnalyzedModel:
    """A composite's body model (normalized already: one level of calls inlined) through the
    stages after normalize that a top-level model goes through: analyze, then canonicalize, its
    `weights` (inputs constant where it is called) read as weights, so a form the canonical rules
    fuse costs inside a function what it costs in the graph."""
    if not canonical:
        return analyzed_function_body(body) if validate else analyze(body, validate=False)
    return canonicalize(analyze(body, validate=validate), weights)  # on a copy: `body` stays


def _local_function_rule(domain: str, name: str) -> Rule:
    """The rule of calls of a model-local function: its body's cost, forward and backward."""
    return Rule(domain_key(domain), name, OTHER, _function_body_cost,
                "cost of the model's local function body, analysed once per signature",
                weights=ALL_INPUTS,
                backward=Backward(_function_body_backward, "backward of the function's body"))


def _function_body_cost(node: Node) -> Cost:
    return node.function_cost()


def _function_body_backward(node: Node, grads) -> Cost:
    return node.function_backward(grads)


def _reads_share(row: NodeRow, shares: set[str]) -> bool:
    """Whether a node reads a part of a split by data (GraphView.routed); its outputs are parts
    too, until a concatenation joins them back into the whole."""
    if not shares or not any(name in shares for name in row.inputs):
        return False
    if row.op_type not in CONCATENATIONS:
        shares.update(name for name in row.outputs if name)
    return True


def _explain_unbounded(row: NodeRow, unbounded: dict[str, str], new: list[Uncosted]) -> None:
    """A node that makes or reads a size read from data with no bound carries why to its outputs,
    and its own uncosted entries (an unknown shape) say why."""
    why = next((unbounded[name] for name in (*row.outputs, *row.inputs) if name in unbounded),
               None)
    if why is None:
        return
    unbounded.update((name, why) for name in row.outputs if name and name not in unbounded)
    for entry in new:
        if "is unknown" in entry.reason:
            entry.reason = f"{entry.reason}: {why}"


def _reads_bound(row: NodeRow, bounded: set[str], bounds: dict[str, str]) -> bool:
    """Whether a node makes or reads a size that depends on data; its outputs then carry it."""
    if any(name in bounds for name in row.outputs) or any(name in bounded for name in row.inputs):
        bounded.update(name for name in row.outputs if name)
        return True
    return False


def apply_rule(fn, node: Node, *args) -> Cost:
    """A cost rule (or backward rule) on a node checked first (check_node). What the rule cannot
    make of values the schema leaves open (a rank, an attribute's range, a constant read) makes
    the node Uncostable with the reason; so does a negative count: never a traceback or a wrong
    number."""
    check_node(node)
    try:
        cost = fn(node, *args)
    except (ArithmeticError, LookupError, TypeError, ValueError, AttributeError) as e:
        raise Uncostable(f"its inputs or attributes do not fit {node.op_type} ({first_line(e)})") \
            from None
    if any(_is_negative(v) for v in (cost.macs, cost.dot_products, cost.flops, cost.int_ops,
                                     cost.int_macs)):
        raise Uncostable("its inputs or attributes give a negative count")
    return cost


def _is_negative(value: Any) -> bool:
    if isinstance(value, (int, float)):
        return not value >= 0
    return bool(getattr(value, "is_negative", False))  # a sympy formula: negative for sure


def _backward_rule(rule: Rule | None) -> Backward | None:
    return rule.backward if rule is not None else None


def _body_key(node: Node, attr: str, values: dict[int, np.ndarray] | None = None) -> tuple:
    given = tuple(sorted((slot, value.tobytes()) for slot, value in (values or {}).items()))
    return id(node.scope), tuple(node.proto.output), attr, given


def _expansion_inputs(node: Node) -> tuple[list[TensorInfo | None], list[np.ndarray | None]]:
    inputs = [node.input_or_none(i) for i in range(node.num_inputs)]
    # Integer constants (sizes, axes) shape the body; float ones are weights and never read.
    values = [None if info is None or info.is_float else node.value(slot)
              for slot, info in enumerate(inputs)]
    return inputs, values


def _expansion_key(node: Node) -> tuple:
    inputs, values = _expansion_inputs(node)
    return (node.domain, node.op_type, node.opset, node.num_outputs,
            attribute_key(node.proto, node.opset),
            tuple(None if i is None else (i.dtype, i.shape) for i in inputs),
            tuple(None if v is None else v.tobytes() for v in values),
            _constant_slots(node), tuple(_known_outputs(node).items()))


def _known_outputs(node: Node) -> dict[str, tuple[int, ...]]:
    """The node's outputs whose shapes are known, by name."""
    return {name: info.shape for name in node.proto.output
            if name and (info := node.scope.info(name)) is not None and info.concrete}


def _constant_slots(node: Node) -> tuple[bool, ...]:
    """Which of the node's inputs are constant where it is called (its weights): the canonical
    forms of its body read them as weights."""
    return tuple(bool(name) and node.scope.is_constant(name) for name in node.proto.input)


def _weight_inputs(node: Node, names) -> list[str]:
    """The `names` the body gives the node's inputs, of those constant where it is called."""
    return [name for name, constant in zip(names, _constant_slots(node)) if constant]


# A signature whose nodes' costs also depend on the values of their constant inputs; on the values
# of their coefficients (FLOAT attributes, which a signature leaves out).
_VALUE_DEPENDENT, _READS_FLOATS = object(), object()
_KIND = "kind"  # tags a signature taken from analysis, apart from the counter's own


def _infos(row: NodeRow, scope: GraphView) -> tuple[list, list]:
    """The node's input and output infos (None for an absent or untyped tensor)."""
    info = scope.tensors.get if scope.parent is None else scope.info  # the same, for the top
    return ([info(name) if name else None for name in row.inputs],
            [info(name) if name else None for name in row.outputs])


def _type_keys(names: list[str], infos: list[TensorInfo | None]) -> tuple:
    # An absent optional tensor (None) differs from a present one of unknown type (False).
    return tuple([info.type_key if info is not None else (False if name else None)
                  for name, info in zip(names, infos)])


def _refinement(refinement: object, row: NodeRow, scope: GraphView) -> tuple:
    """What refines a signature whose nodes' costs also depend on coefficients or constants."""
    if refinement is _READS_FLOATS:
        return coefficient_values(row.proto)
    return _constant_inputs(row.inputs, scope)


def _constant_inputs(names: list[str], scope: GraphView) -> tuple[str, ...]:
    """Names of the constant inputs (their values, within one graph)."""
    return tuple(name if name in scope.constant else "" for name in names)


class _Outcome(NamedTuple):
    """What a node's report takes from its rule, types and shapes: the same for nodes alike."""

    rule: Rule | None
    category: str
    costed: bool
    macs: Any
    flops: Any
    int_ops: Any
    detail: dict | None
    bytes_read: Any
    bytes_written: Any
    input_shapes: list
    output_shapes: list
    # The NodeReport fields from `category` on, in its order (params and buffers 0, counted per
    # node): a node's report is made from them positionally, as keywords cost a graph's worth.
    entry_fields: tuple

    @classmethod
    def of(cls, rule: Rule | None, cost: Cost | None, flops: Any,
           inputs: list[TensorInfo | None], outputs: list[TensorInfo | None]) -> "_Outcome":
        input_shapes, output_shapes = [_shape(i) for i in inputs], [_shape(o) for o in outputs]
        if cost is None:
            return cls.made(rule, category=rule.category if rule else "uncosted", costed=False,
                            macs=0, flops=0, int_ops=0, detail=None, bytes_read=0,
                            bytes_written=0, input_shapes=input_shapes,
                            output_shapes=output_shapes)
        return cls.made(rule, category=rule.category, costed=True, macs=cost.macs,
                        flops=flops, int_ops=cost.all_int_ops,
                        detail=dict(cost.detail) if cost.detail else None,
                        bytes_read=_bytes(inputs), bytes_written=_bytes(outputs),
                        input_shapes=input_shapes, output_shapes=output_shapes)

    @classmethod
    def made(cls, rule: Rule | None, *, category: str, costed: bool, macs: Any, flops: Any,
             int_ops: Any, detail: dict | None, bytes_read: Any, bytes_written: Any,
             input_shapes: list, output_shapes: list) -> "_Outcome":
        entry_fields = (category, macs, flops, int_ops, 0, 0, bytes_read, bytes_written,
                        input_shapes, output_shapes, detail)
        return cls(rule, category, costed, macs, flops, int_ops, detail, bytes_read,
                   bytes_written, input_shapes, output_shapes, entry_fields)


def _bytes(infos: list[TensorInfo | None]) -> int:
    return sum(info.nbytes for info in infos if info is not None and info.known)


def _shape(info: TensorInfo | None) -> list | None:
    if info is None or info.shape is None:
        return None
    if info.concrete:
        return list(info.shape)
    return [d.lstrip(SYMBOL_MARK) if is_symbolic(d) else d for d in info.shape]


