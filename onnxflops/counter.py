"""Stage 5: apply the op-cost table to every node of an analyzed model and build the report."""

from __future__ import annotations

import onnx

from onnxflops.costs import REGISTRY
from onnxflops.costs.registry import ALL_INPUTS, CONTRACTION, RECURRENT, ZERO, Cost, Rule
from onnxflops.errors import Uncostable
from onnxflops.graph import GraphView, TensorInfo
from onnxflops.node import Node
from onnxflops.report import NodeReport, Report, Totals, Uncosted
from onnxflops.expand import expansion_model
from onnxflops.shapes import AnalyzedModel, analyze, has_unknown_outputs, refine_subgraph

_NOT_PARAM_DTYPES = {onnx.TensorProto.INT64, onnx.TensorProto.BOOL, onnx.TensorProto.STRING,
                     onnx.TensorProto.UNDEFINED}


def count_model(analyzed: AnalyzedModel, convention: str = "default", name: str = "model",
                inputs: dict[str, list] | None = None) -> Report:
    return _Counter(analyzed, convention).run(name, inputs or {})


class _Counter:
    def __init__(self, analyzed: AnalyzedModel, convention: str):
        self.analyzed = analyzed
        self.convention = convention
        self.opsets = analyzed.opsets
        self.seen_weights: set[str] = set()
        self.uncosted: list[Uncosted] = []
        self.warnings: list[str] = list(analyzed.warnings)
        # Weights met inside subgraphs are credited to the node that owns the subgraph.
        self.sub_params = 0
        self.sub_buffers = 0
        self.contraction_outputs: set[str] = set()

    def run(self, name: str, inputs: dict[str, list]) -> Report:
        graph = self.analyzed.graph
        nodes: list[NodeReport] = []
        total, constant_work = Totals(), Totals()
        constant_nodes = 0
        for proto in graph.nodes():
            if _is_constant_node(proto, graph):
                if proto.op_type != "Constant":
                    constant_nodes += 1
                    constant_work.add(self._report(proto, graph, count_params=False))
                continue
            entry = self._report(proto, graph)
            nodes.append(entry)
            total.add(entry)
        missing = sorted({u.op_type for u in self.uncosted if u.reason.startswith("no cost rule")})
        if missing:
            self.warnings.append(f"no cost rule for {', '.join(missing)}: those nodes are uncosted "
                                 "and the totals exclude them")
        elif self.uncosted:
            self.warnings.append(f"{len(self.uncosted)} node(s) could not be costed: the totals "
                                 "exclude them")
        return Report(name, self.convention, inputs, total, nodes, constant_work, constant_nodes,
                      self.uncosted, self.warnings)

    def _report(self, proto: onnx.NodeProto, scope: GraphView,
                count_params: bool = True) -> NodeReport:
        rule = REGISTRY.lookup(proto.domain, proto.op_type)
        node = Node(proto, scope, self.opsets.get(_domain(proto.domain), 0), self)
        layer = layer_of(proto)
        entry = NodeReport(proto.name, proto.op_type, _domain(proto.domain), layer,
                           rule.category if rule else "uncosted",
                           input_shapes=[_shape(scope.info(i)) for i in proto.input],
                           output_shapes=[_shape(scope.info(o)) for o in proto.output])
        cost = self._cost(rule, node, count_params)
        if cost is None:
            return entry
        entry.macs = cost.macs
        entry.flops = cost.flops_under(self.convention)
        entry.int_ops = cost.all_int_ops
        entry.detail = dict(cost.detail) if cost.detail else None
        entry.bytes_read = _bytes(scope, proto.input)
        entry.bytes_written = _bytes(scope, proto.output)
        if rule.category in (CONTRACTION, RECURRENT):
            self.contraction_outputs.update(proto.output)
        if count_params:
            entry.params, entry.buffers = self._weights(rule, proto, scope)
            entry.params += self.sub_params
            entry.buffers += self.sub_buffers
            self.sub_params = self.sub_buffers = 0
        return entry

    def _cost(self, rule: Rule | None, node: Node, count_params: bool) -> Cost | None:
        label = node.name or f"{node.op_type} node"
        if rule is None:
            domain = f"{node.domain}::" if _domain(node.domain) else ""
            self.uncosted.append(Uncosted(node.name, node.op_type,
                                          f"no cost rule for {domain}{node.op_type}"))
            return None
        try:
            return rule.fn(node)
        except Uncostable as e:
            if count_params:
                self.uncosted.append(Uncosted(label, node.op_type, str(e)))
            return None

    def _weights(self, rule: Rule, proto: onnx.NodeProto, scope: GraphView) -> tuple[int, int]:
        params = buffers = 0
        for slot, name in enumerate(proto.input):
            if not name or not (scope.is_constant(name) or scope.initializer(name) is not None):
                continue
            is_buffer = slot in rule.buffers
            if not (is_buffer or rule.is_weight_slot(slot)):
                continue
            for source in scope.weight_sources(name):
                info = scope.info(source)
                if source in self.seen_weights or info is None or not _is_weight(info):
                    continue
                if rule.weights == ALL_INPUTS and info.numel == 1 and not any(
                        i in self.contraction_outputs for i in proto.input):
                    # A one-element operand of elementwise arithmetic is a scale or an epsilon,
                    # unless it is the bias added to a contraction's output (a Dense(1) layer).
                    continue
                self.seen_weights.add(source)
                if is_buffer:
                    buffers += info.numel
                else:
                    params += info.numel
        return params, buffers

    def subgraph_cost(self, node: Node, attr: str, inputs: list[TensorInfo | None]) -> Cost:
        body = next((a.g for a in node.proto.attribute if a.name == attr), None)
        if body is None:
            raise Uncostable(f"has no subgraph '{attr}'")
        view = GraphView(body, parent=node.scope)
        for formal, given in zip(body.input, inputs):
            declared = view.info(formal.name)
            if given is not None and given.shape is not None and (
                    declared is None or not declared.known):
                view.tensors[formal.name] = TensorInfo(formal.name, given.dtype, given.shape)
        if has_unknown_outputs(view):
            refine_subgraph(view, {**self.opsets, "": node.opset})
        view.mark_constants()
        return self._sum_graph(view, self.opsets, f"subgraph '{attr}'")

    def function_cost(self, node: Node) -> Cost:
        inputs = [node.input_or_none(i) for i in range(node.num_inputs)]
        # Integer constants (sizes, axes) shape the body; float ones are weights and never read.
        values = [None if info is None or info.is_float else node.value(slot)
                  for slot, info in enumerate(inputs)]
        key = (node.domain, node.op_type, node.opset, node.num_outputs,
               tuple(a.SerializeToString() for a in node.proto.attribute),
               tuple(None if i is None else (i.dtype, i.shape) for i in inputs),
               tuple(None if v is None else v.tobytes() for v in values))
        cost = _EXPANSIONS.get(key)
        if cost is None:
            analyzed = analyze(expansion_model(node.proto, node.opset, inputs, values))
            cost = self._sum_graph(analyzed.graph, analyzed.opsets,
                                   f"the function body of {node.op_type}")
            _EXPANSIONS[key] = cost
        return cost

    def _sum_graph(self, view: GraphView, opsets: dict[str, int], where: str) -> Cost:
        """Cost of one run of an inner graph; weights it reads are credited to the outer node."""
        total = ZERO
        for proto in view.nodes():
            if _is_constant_node(proto, view):
                continue
            rule = REGISTRY.lookup(proto.domain, proto.op_type)
            if rule is None:
                raise Uncostable(f"{where} holds {proto.op_type}, which has no cost rule")
            inner = Node(proto, view, opsets.get(_domain(proto.domain), 0), self)
            try:
                total = total + rule.fn(inner)
            except Uncostable as e:
                raise Uncostable(f"in {where}, node '{proto.name}' ({proto.op_type}): {e}") from None
            params, buffers = self._weights(rule, proto, view)
            self.sub_params += params
            self.sub_buffers += buffers
        return total


# Function-body costs by node signature: models repeat the same LayerNorm or Gelu many times.
_EXPANSIONS: dict[tuple, Cost] = {}


def _is_constant_node(proto: onnx.NodeProto, scope: GraphView) -> bool:
    outputs = [o for o in proto.output if o]
    return bool(outputs) and all(scope.is_constant(o) for o in outputs)


def _is_weight(info: TensorInfo) -> bool:
    return info.dtype not in _NOT_PARAM_DTYPES and info.shape is not None and len(info.shape) > 0


def _bytes(scope: GraphView, names) -> int:
    total = 0
    for name in names:
        info = scope.info(name) if name else None
        if info is not None and info.known:
            total += info.nbytes
    return total


def _shape(info: TensorInfo | None) -> list | None:
    return None if info is None or info.shape is None else list(info.shape)


def _domain(domain: str) -> str:
    return "" if domain in ("", "ai.onnx") else domain


def layer_of(proto: onnx.NodeProto) -> str:
    """The module or layer a node came from, from the name scope its exporter left.

    torch's exporters give the module path (`layer1.0.conv1`): the dynamo exporter in metadata, the
    legacy one in names like `/layer1/layer1.0/conv1/Conv`. Others (tf2onnx: `model/conv_1/Conv2D`)
    give a slash-separated scope, kept as it is.
    """
    for prop in proto.metadata_props:
        if prop.key == "pkg.torch.onnx.name_scopes":
            scopes = [s.strip(" '\"") for s in prop.value.strip("[]").split(",")]
            scopes = [s for s in scopes[:-1] if s]
            return scopes[-1] if scopes else ""
    if "/" not in proto.name:
        return ""
    scope = proto.name.rsplit("/", 1)[0]
    if not proto.name.startswith("/"):
        return scope
    path = ""
    for part in scope.strip("/").split("/"):
        path = part if not path or part.startswith(path + ".") else f"{path}.{part}"
    return path
