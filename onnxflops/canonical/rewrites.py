"""Stage 4b: bring equivalent graph forms to one canonical form, so that they cost the same.

Exporters write one computation in several ways. Each rule recognises a family of forms by
structure — op types, shapes, and the values of scalar constants, never of weights — and rewrites
it to the form the cost table prices:

- GELU or LayerNorm spelled as arithmetic (tf2onnx, older exporters) → the Gelu /
  LayerNormalization op, or that op's ONNX function body where the model's opset predates the op.
  A candidate subgraph is identified by evaluating it on probe inputs, so any arrangement of the
  arithmetic is recognised;
- a scalar factor on a MatMul operand (attention's 1/√d on q, or √ of it on both q and k) → one
  factor on the product;
- a Conv/ConvTranspose/Gemm bias that is a broadcast zero constant (not a parameter) → no bias;
- comparisons of integers cast to float (TF loop counters, index checks) → integer comparisons;
- Loop state that the body passes through unchanged (TF carries weights so) → read from the outer
  scope, where they are initializers and count as params.

It runs on the analyzed model and keeps every tensor's analyzed shape, adding shapes for the
tensors it creates, so the model is not analyzed again.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from typing import Callable, Iterable

import numpy as np
import onnx
from onnx import helper, numpy_helper

from onnxflops.analysis import AnalyzedModel, expansion_model, mark_constants
from onnxflops.graph import (
    GraphView,
    TensorInfo,
    bodies,
    free_names,
    is_float,
    is_standard_domain,
)


def canonicalize(analyzed: AnalyzedModel) -> AnalyzedModel:
    """Rewrite the analyzed model (which analyze made for this pipeline) in place and return it."""
    if _rewrite_graph(analyzed.model.graph, analyzed.graph, analyzed.opsets.get("", 0)):
        mark_constants(analyzed.graph)
    return analyzed


_CONTROL_FLOW = {"Loop", "If", "Scan"}


def _rewrite_graph(graph: onnx.GraphProto, view: GraphView, opset: int) -> bool:
    changed = False
    present = {row[1] for row in view.rows()}
    for node, op_type, _, _, _ in view.rows() if present & _CONTROL_FLOW else ():
        if op_type in _CONTROL_FLOW:
            for body in bodies(node):
                inner = GraphView(body, view)
                mark_constants(inner)
                changed |= _rewrite_graph(body, inner, opset)
    editor = None
    for anchors, rule in _RULES:
        if anchors & present:
            editor = editor or _Editor(graph, view, opset)
            if rule(editor):
                changed = True
                editor.refresh()
    return changed


class _Editor:
    """One graph with its producer/consumer maps and the analyzed tensor infos."""

    def __init__(self, graph: onnx.GraphProto, view: GraphView, opset: int):
        self.graph = graph
        self.view = view
        self.opset = opset
        self._fresh = itertools.count()
        self.outputs = {o.name for o in graph.output}
        self._removed: dict[int, onnx.NodeProto] = {}
        self._read()

    def refresh(self) -> None:
        """Read the graph again after an edit."""
        self.view.nodes_changed()
        self._read()

    def _read(self) -> None:
        # Holding the node wrappers (in the view's rows) keeps their identity, and so `position`.
        self.rows = self.view.rows()
        self.producer = self.view.producers()
        self._position: dict[int, int] | None = None
        self._consumers: dict[str, list[onnx.NodeProto]] | None = None

    @property
    def position(self) -> dict[int, int]:
        """Each node's index in the graph, by id of its proto wrapper."""
        if self._position is None:
            self._position = {id(row[0]): i for i, row in enumerate(self.rows)}
        return self._position

    def of_type(self, op_types: set[str] | dict) -> list[onnx.NodeProto]:
        """The standard-domain nodes of these op types, in graph order."""
        return [row[0] for row in self.rows if row[1] in op_types and not row[2]]

    @property
    def consumers(self) -> dict[str, list[onnx.NodeProto]]:
        """Who reads each tensor (subgraphs included); built when a rule first needs it."""
        if self._consumers is None:
            self._consumers = {}
            for node, op_type, _, inputs, _ in self.rows:
                read = list(inputs)
                if op_type in _CONTROL_FLOW:
                    read += set().union(*map(free_names, bodies(node)))
                for i in read:
                    self._consumers.setdefault(i, []).append(node)
        return self._consumers

    def info(self, name: str) -> TensorInfo | None:
        return self.view.info(name)

    def scalar(self, name: str) -> float | None:
        """The value of a one-element constant (a structural constant, never a weight tensor)."""
        if not name or not self.view.is_constant(name):
            return None
        info = self.info(name)
        if info is None or not info.known or info.numel != 1:
            return None
        value = self.view.value(name)
        if value is None:
            value = self._evaluate_constant(name)
        if value is None or value.dtype.kind not in "fiu":
            return None
        return float(value.reshape(()))

    def _evaluate_constant(self, name: str, limit: int = 32) -> np.ndarray | None:
        """Run the small constant cone computing `name` (shape arithmetic such as 1/√d)."""
        cone, feeds, stack = [], {}, [name]
        while stack:
            tensor = stack.pop()
            known = self.view.value(tensor)
            if known is not None:
                feeds[tensor] = known
                continue
            node = self.producer.get(tensor)
            if node is None or len(cone) >= limit or node in cone:
                return None
            cone.append(node)
            for slot, i in enumerate(node.input):
                if node.op_type == "CastLike" and slot == 1:  # read only for its type
                    feeds[i] = np.zeros((), helper.tensor_dtype_to_np_dtype(self.info(i).dtype))
                elif i and i not in feeds:
                    stack.append(i)
        cone.sort(key=lambda n: self.position[id(n)])
        graph = helper.make_graph(
            cone, "constant", [], [helper.make_value_info(name, onnx.TypeProto())],
            [numpy_helper.from_array(np.asarray(v), k) for k, v in feeds.items()])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        try:
            from onnx.reference import ReferenceEvaluator

            value = np.asarray(ReferenceEvaluator(model).run(None, {})[0])
        except Exception:  # noqa: BLE001 - the reference evaluator raises anything: not a scalar then
            return None
        self.view.values[name] = value
        return value

    def is_constant(self, name: str) -> bool:
        return bool(name) and self.view.is_constant(name)

    def sole_consumer(self, name: str) -> onnx.NodeProto | None:
        users = self.consumers.get(name, [])
        return users[0] if len(users) == 1 and name not in self.outputs else None

    def fresh(self, base: str) -> str:
        return f"{base}__canonical{next(self._fresh)}"

    def set_info(self, name: str, dtype: int, shape) -> None:
        self.graph.value_info.append(helper.make_tensor_value_info(name, dtype, shape))
        self.view.tensors[name] = TensorInfo(name, dtype, tuple(shape) if shape is not None else None)

    def replace(self, removed: list[onnx.NodeProto], added: list[onnx.NodeProto]) -> None:
        """Swap `removed` for `added`, placed after the last removed node (their inputs precede it)."""
        self.splice(max(self.position[id(n)] for n in removed) + 1, added, removed)

    def splice(self, at: int, added: list[onnx.NodeProto],
               removed: list[onnx.NodeProto] = ()) -> None:
        """Insert `added` at position `at` and delete `removed`, which all come before it."""
        for offset, node in enumerate(added):
            self.graph.node.insert(at + offset, node)
        for index in sorted((self.position[id(n)] for n in removed), reverse=True):
            del self.graph.node[index]
        self._removed.update((id(n), n) for n in removed)  # held: their ids stay theirs
        self.refresh()

    def removed(self, node: onnx.NodeProto) -> bool:
        """Whether an earlier rewrite took `node` out of the graph."""
        return id(node) in self._removed

    def named_after(self, node: onnx.NodeProto, template: onnx.NodeProto) -> onnx.NodeProto:
        """Give a new node the name scope and metadata of the node it replaces, so it keeps its layer."""
        scope, slash, _ = template.name.rpartition("/")
        node.name = self.fresh(f"{scope}/{node.op_type}" if slash else template.name)
        del node.metadata_props[:]
        node.metadata_props.extend(template.metadata_props)
        return node

    def add_constant(self, base: str, value: np.ndarray) -> onnx.NodeProto:
        """A Constant node for a structural value (a scale, a bound), known to this graph's view."""
        name = self.fresh(base)
        self.register_constant(name, value)
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(value, name))

    def register_constant(self, name: str, value: np.ndarray) -> None:
        self.view.values[name] = value
        self.view.constant.add(name)
        self.view.tensors[name] = TensorInfo(name, helper.np_dtype_to_tensor_dtype(value.dtype),
                                             value.shape)


# --- zero biases that are not parameters -------------------------------------------------------

_BIAS_SLOT = {"Conv": 2, "ConvTranspose": 2, "Gemm": 2}
_BROADCASTS = {"Expand", "Cast", "CastLike", "Reshape", "Unsqueeze", "Identity", "Tile"}


def drop_broadcast_zero_bias(g: _Editor) -> bool:
    """Conv(x, w, Expand(0)) → Conv(x, w): a bias broadcast from a zero constant holds no params."""
    changed = False
    for node in g.of_type(_BIAS_SLOT):
        slot = _BIAS_SLOT.get(node.op_type)
        if len(node.input) > slot and _is_broadcast_zero(g, node.input[slot]):
            del node.input[slot:]
            changed = True
    return changed


def _is_broadcast_zero(g: _Editor, name: str) -> bool:
    node = g.producer.get(name)
    while node is not None and node.op_type in _BROADCASTS:
        node = g.producer.get(node.input[0])
    if node is None or node.op_type not in ("Constant", "ConstantOfShape"):
        return False
    value = g.view.values.get(node.output[0])
    if node.op_type == "ConstantOfShape":
        filled = [a.t for a in node.attribute if a.name == "value"]
        value = numpy_helper.to_array(filled[0]) if filled else np.zeros(1)
    return value is not None and value.size <= 1 and not np.any(value)


# --- integer comparisons written in float ------------------------------------------------------

_COMPARISONS = {"Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Equal"}
_INTEGER_TYPES = {onnx.TensorProto.INT32, onnx.TensorProto.INT64, onnx.TensorProto.INT16,
                  onnx.TensorProto.INT8, onnx.TensorProto.UINT8, onnx.TensorProto.UINT16,
                  onnx.TensorProto.UINT32, onnx.TensorProto.UINT64}


def compare_integers_as_integers(g: _Editor) -> bool:
    """Less(Cast<float>(i), 12.0) → Less(i, 12): counters and indices compared as what they are."""
    changed = False
    for node in g.of_type(_COMPARISONS):
        uncast = [_integer_before_cast(g, i) for i in node.input]
        dtypes = {g.info(u).dtype for u in uncast if u is not None}
        bounds = [g.scalar(i) if u is None else None for i, u in zip(node.input, uncast)]
        if len(dtypes) != 1 or any(u is None and (b is None or b != round(b))
                                   for u, b in zip(uncast, bounds)):
            continue
        np_dtype = helper.tensor_dtype_to_np_dtype(dtypes.pop())
        constants = []
        for slot, (u, bound) in enumerate(zip(uncast, bounds)):
            if u is None:
                constants.append(g.add_constant(node.input[slot], np.array(int(bound), np_dtype)))
                u = constants[-1].output[0]
            node.input[slot] = u
        g.splice(g.position[id(node)], constants)
        changed = True
    return changed


def _integer_before_cast(g: _Editor, name: str) -> str | None:
    cast = g.producer.get(name)
    if cast is None or cast.op_type != "Cast" or g.is_constant(name):
        return None
    source = g.info(cast.input[0])
    target = g.info(name)
    if source is None or target is None or source.dtype not in _INTEGER_TYPES \
            or not is_float(target.dtype):
        return None
    return cast.input[0]


# --- loop state that never changes --------------------------------------------------------------

def read_loop_invariants_from_outer_scope(g: _Editor) -> bool:
    """Loop state the body returns unchanged is read from the outer scope instead of carried."""
    changed = False
    for node in g.of_type({"Loop"}):
        body = next((a.g for a in node.attribute if a.name == "body"), None)
        carried = len(node.input) - 2
        # A Loop whose body does not match its inputs is left for the count to call uncostable.
        if body is None or len(body.input) != len(node.input) or len(body.output) < 1 + carried:
            continue
        invariant = [k for k in range(carried)
                     if body.output[1 + k].name == body.input[2 + k].name and node.input[2 + k]
                     and (k >= len(node.output) or node.output[k] not in g.outputs)]
        if not invariant:
            continue
        for k in invariant:
            _rename_in_graph(body, body.input[2 + k].name, node.input[2 + k])
            if k < len(node.output) and node.output[k]:
                _rename_uses(g.graph, node.output[k], node.input[2 + k])
        keep = [k for k in range(carried) if k not in invariant]
        inputs = list(node.input[:2]) + [node.input[2 + k] for k in keep]
        formal = list(body.input[:2]) + [body.input[2 + k] for k in keep]
        results = [body.output[0]] + [body.output[1 + k] for k in keep] + list(body.output[1 + carried:])
        outputs = [node.output[k] for k in keep] + list(node.output[carried:])
        _set_repeated(node.input, inputs)
        _set_repeated(body.input, formal)
        _set_repeated(body.output, results)
        _set_repeated(node.output, outputs)
        changed = True
    return changed


def _set_repeated(field, items: list) -> None:
    copies = []
    for item in items:
        if isinstance(item, str):
            copies.append(item)
        else:
            copy = type(item)()
            copy.CopyFrom(item)
            copies.append(copy)
    del field[:]
    field.extend(copies)


def _rename_in_graph(graph: onnx.GraphProto, old: str, new: str) -> None:
    _rename_uses(graph, old, new)
    for o in graph.output:
        if o.name == old:
            o.name = new


def _rename_uses(graph: onnx.GraphProto, old: str, new: str) -> None:
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name == old:
                node.input[i] = new
        for body in bodies(node):
            _rename_in_graph(body, old, new)


# --- scalar factors of a matrix product ---------------------------------------------------------

_VIEWS = {"Transpose", "Reshape", "Squeeze", "Unsqueeze", "Identity"}


def scale_products_not_operands(g: _Editor) -> bool:
    """MatMul(q·a, k·b) → MatMul(q, k)·(a·b): a scalar factor counts once, on the product."""
    changed = False
    for node in g.of_type({"MatMul"}):
        if any(g.is_constant(i) for i in node.input):
            continue  # products of two activations (attention's q·kᵀ), not layers with weights
        found = {id(f[1]): f for f in map(lambda i: _scalar_factor_feeding(g, i), node.input) if f}
        info = g.info(node.output[0])
        if not found or info is None or not info.is_float:
            continue
        factor = math.prod(scale for scale, _ in found.values())
        for _, scaling in found.values():
            variable = next(i for i in scaling.input if not g.is_constant(i))
            _rename_uses(g.graph, scaling.output[0], variable)
        product, result = g.fresh(node.output[0]), node.output[0]
        g.set_info(product, info.dtype, info.shape)
        node.output[0] = product
        scale = g.add_constant(result, np.array(factor, helper.tensor_dtype_to_np_dtype(info.dtype)))
        multiply = g.named_after(helper.make_node("Mul", [product, scale.output[0]], [result]), node)
        g.splice(g.position[id(node)] + 1, [scale, multiply], [n for _, n in found.values()])
        changed = True
    return changed


def _scalar_factor_feeding(g: _Editor, name: str) -> tuple[float, onnx.NodeProto] | None:
    """(factor, the Mul/Div node) when `name` is a view of x·c or x/c with c a scalar constant."""
    node = g.producer.get(name)
    while node is not None and node.op_type in _VIEWS and g.sole_consumer(node.input[0]) is node:
        node = g.producer.get(node.input[0])
    if node is None or node.op_type not in ("Mul", "Div") or len(node.input) != 2 \
            or g.sole_consumer(node.output[0]) is None:
        return None
    a, b = node.input
    if node.op_type == "Mul":
        scale = g.scalar(b) if not g.is_constant(a) else g.scalar(a)
        variable = a if not g.is_constant(a) else b
    else:
        scale = g.scalar(b)
        scale = None if not scale else 1.0 / scale
        variable = a
    if scale is None or g.is_constant(variable):
        return None
    info, out = g.info(variable), g.info(node.output[0])
    if info is None or out is None or info.shape != out.shape:
        return None
    return scale, node


# --- activations and normalizations spelled as arithmetic --------------------------------------

def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf)(x)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


_UNARY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "Neg": np.negative, "Sqrt": np.sqrt, "Reciprocal": np.reciprocal, "Exp": np.exp, "Log": np.log,
    "Tanh": np.tanh, "Erf": _erf, "Sigmoid": _sigmoid, "Abs": np.abs, "Identity": lambda x: x,
    "Relu": lambda x: np.maximum(x, 0.0), "Softplus": lambda x: np.log1p(np.exp(x)),
}
_BINARY: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide, "Pow": np.power,
    "Max": np.maximum, "Min": np.minimum, "Sum": np.add,
}
_REDUCTIONS = {"GlobalAveragePool", "ReduceMean"}
_EVALUATED = set(_UNARY) | set(_BINARY) | {"Cast", "CastLike", "Clip"}


@dataclass
class _Region:
    """Arithmetic nodes computing `output` from `source` and constants."""

    source: str
    nodes: list[onnx.NodeProto]
    output: str

    def op_types(self) -> list[str]:
        return sorted(n.op_type for n in self.nodes)


def _evaluate(g: _Editor, region: _Region, x: np.ndarray, constants: dict[str, np.ndarray]):
    """What `region` computes from `x`, its weights given by `constants`, in float64."""
    values = {region.source: x, **constants}

    def arg(name: str) -> np.ndarray:
        return values[name] if name in values else _scalar_array(g, name)

    with np.errstate(all="ignore"):  # a log of a negative probe is a mismatch, not a warning
        for node in region.nodes:
            values[node.output[0]] = _evaluated(g, node, arg)
    return values[region.output]


def _evaluated(g: _Editor, node: onnx.NodeProto, arg: Callable[[str], np.ndarray]) -> np.ndarray:
    op = node.op_type
    if op in _REDUCTIONS:
        data = arg(node.input[0])
        return np.mean(data, axis=_reduced_axes(g, node, data.ndim), keepdims=True)
    if op in ("Cast", "CastLike"):
        return arg(node.input[0])
    if op == "Clip":
        bounds = [arg(i) if i else None for i in list(node.input[1:3]) + ["", ""]][:2]
        return np.clip(arg(node.input[0]), *bounds)
    if op in _UNARY:
        return _UNARY[op](arg(node.input[0]))
    args = [arg(i) for i in node.input if i]
    result = args[0]
    for other in args[1:]:
        result = _BINARY[op](result, other)
    return result


def _scalar_array(g: _Editor, name: str) -> np.ndarray:
    value = g.scalar(name)
    if value is None:
        raise KeyError(name)
    return np.array(value)


def _reduced_axes(g: _Editor, node: onnx.NodeProto, rank: int) -> tuple[int, ...] | None:
    """Axes a GlobalAveragePool/ReduceMean (keepdims=1) averages over, or None if not static."""
    if node.op_type == "GlobalAveragePool":
        return tuple(range(2, rank))
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if attrs.get("keepdims", 1) != 1:
        return None
    axes = attrs.get("axes")
    if axes is None and len(node.input) > 1 and node.input[1]:
        value = g.view.value(node.input[1])
        axes = None if value is None else value.reshape(-1).tolist()
    if axes is None:
        return None if attrs.get("noop_with_empty_axes", 0) else tuple(range(rank))
    return tuple(sorted(int(a) % rank for a in axes))


def _grow(g: _Editor, source: str, weights_allowed: bool, limit: int = 24) -> list[onnx.NodeProto]:
    """Arithmetic nodes downstream of `source` whose other inputs are constants, in graph order."""
    inside: set[str] = {source}
    region: list[onnx.NodeProto] = []
    frontier = list(g.consumers.get(source, []))
    seen: set[int] = set()
    while frontier and len(region) < limit:
        frontier.sort(key=lambda n: g.position[id(n)])
        node = frontier.pop(0)
        if id(node) in seen:
            continue
        seen.add(id(node))
        if not _joins_region(g, node, inside, weights_allowed):
            continue
        region.append(node)
        inside.update(o for o in node.output if o)
        frontier.extend(c for o in node.output for c in g.consumers.get(o, []))
    region.sort(key=lambda n: g.position[id(n)])
    return region


def _joins_region(g: _Editor, node: onnx.NodeProto, inside: set[str], weights_allowed: bool) -> bool:
    if not is_standard_domain(node.domain) or len(node.output) != 1:
        return False
    if node.op_type not in _EVALUATED and node.op_type not in _REDUCTIONS:
        return False
    if node.op_type in _REDUCTIONS and not weights_allowed:
        return False
    info = g.info(node.output[0])
    if info is None or not info.is_float:
        return False
    for slot, name in enumerate(node.input):
        if not name or name in inside:
            continue
        if node.op_type == "ReduceMean" and slot == 1 or node.op_type == "CastLike" and slot == 1:
            continue
        if not g.is_constant(name):
            return False
        if g.scalar(name) is None and not (weights_allowed and g.info(name) is not None):
            return False
    return True


def _closed_regions(g: _Editor, source: str, nodes: list[onnx.NodeProto],
                    anchor: onnx.NodeProto) -> Iterable[_Region]:
    """Sub-regions ending at each node (latest first) that contain `anchor` and leak nothing."""
    by_output = {o: n for n in nodes for o in n.output}
    for end in reversed(nodes):
        members, stack = {}, [end]
        while stack:
            n = stack.pop()
            if id(n) in members:
                continue
            members[id(n)] = n
            stack.extend(by_output[i] for i in n.input if i in by_output)
        if id(anchor) not in members:
            continue
        chosen = [n for n in nodes if id(n) in members]
        inner = {o for n in chosen for o in n.output} - {end.output[0]}
        if any(o in g.outputs or any(id(c) not in members for c in g.consumers.get(o, []))
               for o in inner):
            continue
        yield _Region(source, chosen, end.output[0])


def _sources_above(g: _Editor, name: str, depth: int = 6) -> list[str]:
    """Tensors from which `name` alone is computed by arithmetic with constants, nearest first."""
    found, roots = [], {name}
    for _ in range(depth + 1):
        if len(roots) == 1 and next(iter(roots)) not in found:
            found.append(next(iter(roots)))
        expanded = set()
        for tensor in roots:
            node = g.producer.get(tensor)
            if node is None or node.op_type not in _EVALUATED or g.is_constant(tensor):
                expanded.add(tensor)
            else:
                expanded.update(i for i in node.input if i and not g.is_constant(i))
        if expanded == roots:
            break
        roots = expanded
    return found


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


_ACTIVATIONS = (("Gelu", {"approximate": "none"}, _gelu, 20),
                ("Gelu", {"approximate": "tanh"}, _gelu_tanh, 20))
_PROBE = np.linspace(-4.0, 4.0, 33)


def fuse_activations(g: _Editor) -> bool:
    """0.5·x·(1 + erf(x/√2)) in any arrangement (and GELU's tanh form) → Gelu."""
    changed = False
    for anchor in g.of_type({"Erf", "Tanh"}):
        if g.removed(anchor) or not _scaled(g, anchor.input[0]):
            continue  # GELU takes erf(x/√2) or tanh(√(2/π)·(...))
        for source in _sources_above(g, anchor.input[0]):
            region = _first_match(g, source, anchor, weights_allowed=False,
                                  match=lambda r: _match_activation(g, r))
            if region is not None:
                op_type, attributes, since = region[1]
                changed |= _substitute(g, region[0], op_type, attributes, since, [source])
                break
    return changed


def _scaled(g: _Editor, name: str) -> bool:
    """Whether `name` is a product or quotient of something by a scalar constant."""
    node = g.producer.get(name)
    return node is not None and node.op_type in ("Mul", "Div") and any(
        g.scalar(i) is not None for i in node.input)


def _first_match(g: _Editor, source: str, anchor: onnx.NodeProto, weights_allowed: bool, match):
    nodes = _grow(g, source, weights_allowed)
    if not any(n is anchor for n in nodes):
        return None
    for region in _closed_regions(g, source, nodes, anchor):
        found = match(region)
        if found is not None:
            return region, found
    return None


def _match_activation(g: _Editor, region: _Region):
    try:
        y = np.reshape(_evaluate(g, region, _PROBE, {}), -1)
    except (KeyError, ValueError):
        return None
    for op_type, attributes, reference, since in _ACTIVATIONS:
        if y.shape == _PROBE.shape and np.allclose(y, reference(_PROBE), rtol=1e-4, atol=1e-6):
            return op_type, attributes, since
    return None


def fuse_layer_norms(g: _Editor) -> bool:
    """(x − mean)/√(var + ε)·γ + β in any arrangement (tf2onnx writes 13 ops) → LayerNormalization."""
    changed = False
    for variance in g.of_type(_REDUCTIONS):
        if g.removed(variance):
            continue
        mean = _mean_of_deviation(g, variance.input[0])
        if mean is None:
            continue
        source = mean.input[0]
        found = _first_match(g, source, mean, weights_allowed=True,
                             match=lambda r: _match_layer_norm(g, r))
        if found is not None:
            region, (axis, epsilon, scale, bias) = found
            inputs = [source, scale] + ([bias] if bias else [])
            changed |= _substitute(g, region, "LayerNormalization",
                                   {"axis": axis, "epsilon": epsilon}, 17, inputs)
    return changed


def _mean_of_deviation(g: _Editor, squared: str) -> onnx.NodeProto | None:
    """The mean reduction m when `squared` is (x − m)², written as a product or a power of 2."""
    square = g.producer.get(squared)
    if square is None or square.op_type not in ("Mul", "Pow") or len(square.input) != 2:
        return None
    if square.op_type == "Mul" and square.input[0] != square.input[1] \
            or square.op_type == "Pow" and g.scalar(square.input[1]) != 2.0:
        return None
    deviation = g.producer.get(square.input[0])
    if deviation is None or deviation.op_type != "Sub":
        return None
    mean = g.producer.get(deviation.input[1])
    if mean is None or mean.op_type not in _REDUCTIONS or mean.input[0] != deviation.input[0]:
        return None
    return mean


def _match_layer_norm(g: _Editor, region: _Region):
    x_info = g.info(region.source)
    if x_info is None or not x_info.known or not x_info.is_float:
        return None
    rank = x_info.rank
    reduced = {_reduced_axes(g, n, rank) for n in region.nodes if n.op_type in _REDUCTIONS}
    if len(reduced) != 1 or None in reduced:
        return None
    axes = reduced.pop()
    axis = axes[0] if axes else rank
    if axes != tuple(range(axis, rank)):
        return None
    normalized = x_info.dims[axis:]
    weights = sorted({i for n in region.nodes for i in n.input
                      if i and g.is_constant(i) and g.scalar(i) is None
                      and not (n.op_type in ("ReduceMean", "CastLike") and i != n.input[0])})
    if not 1 <= len(weights) <= 2 or any(not _broadcasts_to(g.info(w), normalized) for w in weights):
        return None
    epsilons = sorted({g.scalar(i) for n in region.nodes for i in n.input if g.scalar(i) is not None
                       and 0 < g.scalar(i) < 0.1})
    rng = np.random.default_rng(0)
    probe_shape = tuple(min(d, 3) for d in x_info.dims[:axis]) + tuple(normalized)
    x = rng.normal(size=probe_shape) * rng.uniform(0.5, 2.0, size=probe_shape[:axis] + (1,) *
                                                    len(normalized)) + rng.normal()
    probes = {w: rng.uniform(0.5, 1.5, size=g.info(w).dims) for w in weights}
    try:
        y = _evaluate(g, region, x, probes)
    except (KeyError, ValueError):
        return None
    mean = x.mean(axis=axes, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    for scale, bias in itertools.permutations(weights + [None] * (2 - len(weights)), 2):
        if scale is None:
            continue
        for epsilon in epsilons:
            expected = (x - mean) / np.sqrt(variance + epsilon) * probes[scale] \
                + (probes[bias] if bias else 0.0)
            if np.shape(y) == expected.shape and np.allclose(y, expected, rtol=1e-6, atol=1e-9):
                return axis, float(epsilon), scale, bias
    return None


def _broadcasts_to(info: TensorInfo | None, normalized: tuple[int, ...]) -> bool:
    if info is None or not info.known:
        return False
    dims = list(info.dims)
    while dims and dims[0] == 1 and len(dims) > len(normalized):
        dims.pop(0)
    return tuple(dims) == tuple(normalized)


def _substitute(g: _Editor, region: _Region, op_type: str, attributes: dict, since: int,
                inputs: list[str]) -> bool:
    """Replace `region` by one `op_type` node, or by its function body before opset `since`.

    A region that already does the run-time work of the replacement is left as it is.
    """
    body = None if g.opset >= since else _expanded(
        op_type, tuple(sorted(attributes.items())), since,
        tuple((g.info(i).dtype, g.info(i).shape) for i in inputs))
    if _same_work([op_type] if body is None else _run_time_ops(body), region.op_types()):
        return False
    replacement = [helper.make_node(op_type, inputs, [region.output], **attributes)] \
        if body is None else _instantiated(g, body, inputs, region.output)
    g.replace(region.nodes, [g.named_after(n, region.nodes[-1]) for n in replacement])
    return True


def _same_work(a: list[str], b: list[str]) -> bool:
    """Equal op lists, a two-operand Sum counted as the Add it is."""
    def norm(ops):
        return sorted("Add" if op == "Sum" else op for op in ops)
    return norm(a) == norm(b)


@functools.lru_cache(maxsize=64)
def _expanded(op_type: str, attributes: tuple, since: int, inputs: tuple) -> onnx.ModelProto:
    """The op's ONNX function body for inputs of these (dtype, shape), with inferred shapes."""
    names = [f"input_{i}" for i in range(len(inputs))]
    call = helper.make_node(op_type, names, ["output"], **dict(attributes))
    infos = [TensorInfo(n, dtype, shape) for n, (dtype, shape) in zip(names, inputs)]
    return onnx.shape_inference.infer_shapes(expansion_model(call, since, infos))


def _run_time_ops(body: onnx.ModelProto) -> list[str]:
    """Op types of the body's nodes that depend on its inputs (the rest is constant work)."""
    live, ops = {i.name for i in body.graph.input}, []
    for node in body.graph.node:
        read = [i for slot, i in enumerate(node.input) if not (node.op_type == "CastLike" and slot)]
        if live & set(read):
            live.update(node.output)
            ops.append(node.op_type)
    return ops


def _instantiated(g: _Editor, body: onnx.ModelProto, inputs: list[str],
                  output: str) -> list[onnx.NodeProto]:
    """The body's nodes wired to `inputs` and `output`, its other tensors renamed into the graph."""
    view = GraphView(body.graph)
    renamed = {f"input_{i}": name for i, name in enumerate(inputs)} | {"output": output}
    for node in body.graph.node:
        for o in node.output:
            if o not in renamed:
                renamed[o] = g.fresh(output)
                info = view.info(o)
                if info is not None:
                    g.set_info(renamed[o], info.dtype, info.shape)
    nodes = []
    for node in body.graph.node:
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        for field in (copy.input, copy.output):
            for i, name in enumerate(field):
                field[i] = renamed.get(name, name)
        if node.op_type == "Constant":
            g.register_constant(copy.output[0], view.value(node.output[0]))
        if node.op_type == "Sum" and len(node.input) == 2:
            copy.op_type = "Add"  # as exporters write it, so per-op tables line up
        nodes.append(copy)
    return nodes


# (op types whose presence lets the rule match anything, the rule), in the order they run.
_RULES: tuple[tuple[set[str], Callable[[_Editor], bool]], ...] = (
    ({"Loop"}, read_loop_invariants_from_outer_scope),
    (set(_BIAS_SLOT), drop_broadcast_zero_bias),
    (_COMPARISONS, compare_integers_as_integers),
    ({"Erf", "Tanh"}, fuse_activations),
    (_REDUCTIONS, fuse_layer_norms),
    ({"MatMul"}, scale_products_not_operands),
)
