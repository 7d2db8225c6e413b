"""An analyzed graph: every tensor's shape and dtype, which tensors are constant, small known values.

This is what the counting stage reads. It never holds weight bytes: initializer dims and dtypes come
from the TensorProto header; values are read only from small in-proto tensors (axes, pads, shapes).
"""

from __future__ import annotations

import math
from typing import Iterable, Iterator, NamedTuple

import numpy as np
import onnx
from onnx import numpy_helper

from onnxflops.dims import (  # noqa: F401  (re-exported)
    INT64_MAX,
    SYMBOL_MARK,
    Dim,
    format_shape,
    is_symbolic,
    to_expr,
)
from onnxflops.errors import Uncostable
from onnxflops.ops import DEFAULT_DOMAIN, SHAPE_READERS, TYPE_ONLY_INPUTS, WEIGHT_CARRYING_INPUTS

# Values larger than this are never materialised: they are weights, not shape arithmetic. The
# loader keeps the bytes of initializers up to this size and drops the rest.
MAX_VALUE_ELEMENTS = 4096

_ITEMSIZE_BITS = {
    onnx.TensorProto.FLOAT: 32, onnx.TensorProto.UINT8: 8, onnx.TensorProto.INT8: 8,
    onnx.TensorProto.UINT16: 16, onnx.TensorProto.INT16: 16, onnx.TensorProto.INT32: 32,
    onnx.TensorProto.INT64: 64, onnx.TensorProto.STRING: 0, onnx.TensorProto.BOOL: 8,
    onnx.TensorProto.FLOAT16: 16, onnx.TensorProto.DOUBLE: 64, onnx.TensorProto.UINT32: 32,
    onnx.TensorProto.UINT64: 64, onnx.TensorProto.COMPLEX64: 64, onnx.TensorProto.COMPLEX128: 128,
    onnx.TensorProto.BFLOAT16: 16,
}
for _name, _bits in (("FLOAT8E4M3FN", 8), ("FLOAT8E4M3FNUZ", 8), ("FLOAT8E5M2", 8),
                     ("FLOAT8E5M2FNUZ", 8), ("UINT4", 4), ("INT4", 4), ("FLOAT4E2M1", 4),
                     ("FLOAT8E8M0", 8), ("UINT2", 2), ("INT2", 2)):
    if hasattr(onnx.TensorProto, _name):
        _ITEMSIZE_BITS[getattr(onnx.TensorProto, _name)] = _bits

_FLOAT_TYPES = {onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE,
                onnx.TensorProto.BFLOAT16, onnx.TensorProto.COMPLEX64, onnx.TensorProto.COMPLEX128}
_FLOAT_TYPES |= {t for n, t in onnx.TensorProto.DataType.items() if n.startswith("FLOAT")}


def dtype_bits(dtype: int) -> int:
    return _ITEMSIZE_BITS.get(dtype, 0)


def is_float(dtype: int) -> bool:
    return dtype in _FLOAT_TYPES



class TensorInfo:
    """A tensor's name, dtype and shape (None: rank unknown), as the cost rules read them."""

    # What rules and the counter ask for every tensor several times is found once: every dim is a
    # number (`concrete`), or a number or a symbolic formula (`known`); element and byte counts.
    __slots__ = ("name", "dtype", "shape", "type_key", "concrete", "known", "_numel", "_nbytes")

    def __init__(self, name: str, dtype: int, shape: tuple[Dim, ...] | None):
        self.name = name
        self.dtype = dtype
        self.shape = shape
        self.type_key = (dtype, shape)  # equal for tensors of one type, whatever their names
        concrete = shape is not None and all(isinstance(d, int) for d in shape)
        self.concrete = concrete
        self.known = concrete or shape is not None and all(isinstance(d, int) or is_symbolic(d)
                                                           for d in shape)
        self._numel = math.prod(shape) if concrete else None
        self._nbytes = (self._numel * dtype_bits(dtype) + 7) // 8 if concrete else None

    def renamed(self, name: str) -> "TensorInfo":
        """The same type under another name (graphs repeat a few types over thousands of tensors)."""
        info = object.__new__(TensorInfo)
        info.name, info.dtype, info.shape, info.type_key = name, self.dtype, self.shape, self.type_key
        info.concrete, info.known = self.concrete, self.known
        info._numel, info._nbytes = self._numel, self._nbytes
        return info

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorInfo):
            return NotImplemented
        return (self.name, self.dtype, self.shape) == (other.name, other.dtype, other.shape)

    def __hash__(self) -> int:
        return hash((self.name, self.dtype, self.shape))

    def __repr__(self) -> str:
        return f"TensorInfo(name={self.name!r}, dtype={self.dtype!r}, shape={self.shape!r})"

    @property
    def rank(self) -> int:
        if self.shape is None:
            raise Uncostable(f"rank of '{self.name}' is unknown")
        return len(self.shape)

    @property
    def dims(self) -> tuple[int, ...]:
        """The shape, symbolic dims as sympy expressions; raises Uncostable when a dim is unknown."""
        if self.concrete:
            return self.shape  # type: ignore[return-value]
        if not self.known:
            raise Uncostable(f"shape of '{self.name}' is unknown ({format_shape(self.shape)})")
        return tuple(d if isinstance(d, int) else to_expr(d) for d in self.shape)

    @property
    def numel(self) -> int:
        return self._numel if self.concrete else math.prod(self.dims)

    @property
    def nbytes(self) -> int:
        if self.concrete:
            return self._nbytes
        return (self.numel * dtype_bits(self.dtype) + 7) // 8

    @property
    def is_float(self) -> bool:
        return is_float(self.dtype)


class ValueInfo(TensorInfo):
    """A value that is not a tensor (a sequence, an optional, a map): no dtype or shape of its
    own, only its ONNX type, which inference reads as it is."""

    __slots__ = ("type_proto",)

    def __init__(self, name: str, type_proto: onnx.TypeProto):
        super().__init__(name, 0, None)
        self.type_proto = onnx.TypeProto()
        self.type_proto.CopyFrom(type_proto)  # its own: the model's may be edited
        self.type_key = ("value", type_proto.SerializeToString())

    def renamed(self, name: str) -> "ValueInfo":
        return ValueInfo(name, self.type_proto)


def type_proto_of(info: TensorInfo) -> onnx.TypeProto:
    """The ONNX type of a tensor or other value."""
    if isinstance(info, ValueInfo):
        copy = onnx.TypeProto()
        copy.CopyFrom(info.type_proto)  # a copy: whoever takes it may edit it
        return copy
    return onnx.helper.make_tensor_type_proto(info.dtype, info.shape)


def is_known(info: TensorInfo | None) -> bool:
    """Whether a tensor has a type whose every dim is a number or a symbolic formula."""
    return info is not None and info.known


def info_from_value_info(vi: onnx.ValueInfoProto) -> TensorInfo:
    return info_from_type(vi.name, vi.type)


def info_from_type(name: str, tp: onnx.TypeProto) -> TensorInfo:
    if not tp.HasField("tensor_type"):
        return ValueInfo(name, tp) if tp.WhichOneof("value") else TensorInfo(name, 0, None)
    tt = tp.tensor_type
    if not tt.HasField("shape"):
        return TensorInfo(name, tt.elem_type, None)
    dims = tuple(
        d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim
    )
    return TensorInfo(name, tt.elem_type, dims)


# What binding knows that the bound model's types cannot say, for analysis to read: in the
# model's metadata under these keys, as JSON. The shapes of the elements of each sequence input
# (a sequence's length is no part of its type): {input: [element shape, ...]}. The shapes the
# model declares for its outputs and intermediate tensors, which binding clears from their
# types (inference finds them again from the bound inputs, where it can): {tensor: shape}.
_SEQUENCE_INPUTS, _DECLARED_SHAPES = "onnxflops.sequence_inputs", "onnxflops.declared_shapes"


def _write_note(model: onnx.ModelProto, key: str, value) -> None:
    import json

    kept = [p for p in model.metadata_props if p.key != key]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    entry = model.metadata_props.add()
    entry.key, entry.value = key, json.dumps(value)


def _read_note(model: onnx.ModelProto, key: str):
    import json

    entry = next((p.value for p in model.metadata_props if p.key == key), None)
    return None if entry is None else json.loads(entry)


def write_sequence_inputs(model: onnx.ModelProto, sequences: dict[str, list]) -> None:
    _write_note(model, _SEQUENCE_INPUTS, {name: [list(shape) for shape in shapes]
                                          for name, shapes in sequences.items()})


def write_declared_shapes(model: onnx.ModelProto, shapes: dict[str, tuple[int, ...]]) -> None:
    _write_note(model, _DECLARED_SHAPES, {name: list(shape) for name, shape in shapes.items()})


def declared_shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    """The shapes the model declares for its tensors, bound (write_declared_shapes), by name."""
    return {name: tuple(shape) for name, shape in
            (_read_note(model, _DECLARED_SHAPES) or {}).items()}


def bound_sequences(model: onnx.ModelProto) -> dict[str, tuple["TensorInfo", ...]]:
    """The elements' types of each sequence input bound (write_sequence_inputs), by name."""
    entry = _read_note(model, _SEQUENCE_INPUTS)
    if entry is None:
        return {}
    dtypes = {}
    for vi in model.graph.input:
        held = vi.type
        while held.WhichOneof("value") in ("optional_type", "sequence_type"):
            held = getattr(held, held.WhichOneof("value")).elem_type
        dtypes[vi.name] = held.tensor_type.elem_type
    return {name: tuple(TensorInfo("", dtypes.get(name, 0), tuple(shape)) for shape in shapes)
            for name, shapes in entry.items()}


def has_inline_data(t: onnx.TensorProto) -> bool:
    return t.data_location != onnx.TensorProto.EXTERNAL


class NodeRow(NamedTuple):
    """A node as the passes over a graph read it, an absent optional tensor named "". Reading a
    proto's fields costs about a microsecond per node, so a graph's rows are read once and shared."""

    proto: onnx.NodeProto
    op_type: str
    domain: str  # "" for the standard domain, however the node spells it
    inputs: list[str]
    outputs: list[str]

    @classmethod
    def of(cls, node: onnx.NodeProto) -> "NodeRow":
        # Slicing copies a repeated field fastest (a list; rows never change it). The row is made
        # as the tuple it is: a NamedTuple's own constructor takes keywords, at a call's cost; and
        # most nodes' domain is "", their key already.
        domain = node.domain
        return _new_tuple(cls, (node, node.op_type, domain and domain_key(domain), node.input[:],
                                node.output[:]))


_new_tuple = tuple.__new__

def is_standard_domain(domain: str) -> bool:
    """The default ONNX domain, however it is spelled ("" or "ai.onnx")."""
    return domain in DEFAULT_DOMAIN


def domain_key(domain: str) -> str:
    """One spelling of a domain for lookups: "" for the default ONNX domain."""
    return "" if domain in DEFAULT_DOMAIN else domain
GRAPH_ATTRIBUTE_TYPES = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)


class GraphView:
    """Tensors of one graph (and, through `parent`, of the scopes around it)."""

    def __init__(self, graph: onnx.GraphProto, parent: "GraphView | None" = None):
        self.graph = graph
        self.parent = parent
        self._rows: list[NodeRow] | None = None
        # By node position: a number equal for nodes whose types and attributes (so whose costs)
        # are alike, where shape inference found it; dropped when the nodes are edited.
        self.kinds: dict[int, int] = {}
        self._producers: dict[str, onnx.NodeProto] | None = None
        self._consumers: dict[str, list[onnx.NodeProto]] | None = None
        self.tensors: dict[str, TensorInfo] = {}
        self.initializers: dict[str, onnx.TensorProto] = {}
        self.values: dict[str, np.ndarray] = {}
        self.constant: set[str] = set()
        # Sequence-valued tensors whose elements' types are known: each element's, in order.
        self.sequences: dict[str, tuple[TensorInfo, ...]] = {}
        # Tensors whose shapes depend on data, typed at their upper bound: why it is the bound.
        self.bounds: dict[str, str] = {}
        # Tensors whose sizes are read from data whose range the graph leaves open: why.
        self.unbounded: dict[str, str] = {}
        # Sequences split into parts whose sizes are data, typed at even shares: why.
        self.routed: dict[str, str] = {}
        # For each constant tensor computed from weights: the initializers it was computed from.
        self.derived_from: dict[str, frozenset[str]] = {}
        self.read_types([*graph.input, *graph.value_info, *graph.output])
        # An initializer that is also a graph input is a default the caller may override: a
        # variable, not a constant (ONNX semantics; TF-style graphs whose weights are inputs).
        overridable = {vi.name for vi in graph.input}
        by_type: dict[tuple, TensorInfo] = {}
        tensors, initializers, constant = self.tensors, self.initializers, self.constant
        for t in graph.initializer:  # thousands of them: what is read per tensor is held here
            name, key = t.name, (t.data_type, tuple(t.dims))
            seen = by_type.get(key)
            tensors[name] = seen.renamed(name) if seen is not None \
                else by_type.setdefault(key, TensorInfo(name, *key))
            initializers[name] = t
            if name not in overridable:
                constant.add(name)
        self._constant_outputs: set[str] = set()
        for node, op_type, domain, _, outputs in self.rows():
            if op_type == "Constant" and not domain:
                name = outputs[0]
                self._constant_outputs.add(name)
                self.constant.add(name)
                info = _constant_node_info(node)
                if info is not None:
                    self.tensors[name] = info
                value = _constant_node_value(node)
                if value is not None:
                    self.values[name] = value
                    if info is None:
                        self.tensors[name] = TensorInfo(
                            name, onnx.helper.np_dtype_to_tensor_dtype(value.dtype), value.shape)

    def rows(self) -> list[NodeRow]:
        """The graph's nodes in order, their fields read once (see NodeRow).

        The canonical editor keeps this list and `producers()` in step with its edits, in place.
        """
        if self._rows is None:
            self._rows = list(map(NodeRow.of, self.graph.node))
        return self._rows

    def nodes_changed(self) -> None:
        """The graph's node list or a node's inputs or outputs were edited: read them again."""
        self._rows = None
        self._producers = None
        self._consumers = None
        self.kinds = {}

    def read_types(self, typed: Iterable[onnx.ValueInfoProto]) -> None:
        """Take the types of these tensors (a later one without a shape keeps an earlier shape)."""
        by_type: dict[bytes, TensorInfo] = {}  # a graph repeats a few types over many tensors
        tensors = self.tensors
        for vi in typed:
            name, key = vi.name, vi.type.SerializeToString()
            seen = by_type.get(key)
            if seen is None:
                info = by_type[key] = info_from_type(name, vi.type)
            else:
                info = seen.renamed(name)
            if info.shape is not None or name not in tensors:
                tensors[name] = info

    def info(self, name: str) -> TensorInfo | None:
        scope: GraphView | None = self
        while scope is not None:
            found = scope.tensors.get(name)
            if found is not None:
                return found
            scope = scope.parent
        return None

    def sequence(self, name: str) -> tuple[TensorInfo, ...] | None:
        """The types of a sequence's elements, where known."""
        scope: GraphView | None = self
        while scope is not None:
            found = scope.sequences.get(name)
            if found is not None:
                return found
            scope = scope.parent
        return None

    def initializer(self, name: str) -> onnx.TensorProto | None:
        scope: GraphView | None = self
        while scope is not None:
            if name in scope.initializers:
                return scope.initializers[name]
            scope = scope.parent
        return None

    def is_constant(self, name: str) -> bool:
        scope: GraphView | None = self
        while scope is not None:
            if name in scope.constant:
                return True
            scope = scope.parent
        return False

    def holds_value(self, name: str) -> bool:
        """Whether a tensor is constant or an initializer (one a caller may override)."""
        if name in self.constant or name in self.initializers:
            return True
        return self.parent is not None and self.parent.holds_value(name)

    def value(self, name: str) -> np.ndarray | None:
        scope: GraphView | None = self
        while scope is not None:
            if name in scope.values:
                return scope.values[name]
            init = scope.initializers.get(name)
            if init is not None:
                return _small_initializer_value(scope, init)
            scope = scope.parent
        return None

    def nodes(self) -> Iterator[onnx.NodeProto]:
        return (row.proto for row in self.rows())

    def producer(self, name: str) -> onnx.NodeProto | None:
        """The node of this graph that computes `name` (None for inputs and initializers)."""
        return self.producers().get(name)

    def producers(self) -> dict[str, onnx.NodeProto]:
        """The node of this graph that computes each tensor."""
        if self._producers is None:
            # Every output is taken, then the absent one ("") dropped: one test less per output.
            self._producers = {o: node for node, _, _, _, outputs in self.rows() for o in outputs}
            self._producers.pop("", None)
        return self._producers

    def consumers(self) -> dict[str, list[onnx.NodeProto]]:
        """The nodes of this graph that read each tensor, in graph order."""
        if self._consumers is None:
            self._consumers = {}
            for node, _, _, inputs, _ in self.rows():
                for name in inputs:
                    if name:
                        self._consumers.setdefault(name, []).append(node)
        return self._consumers

    def weight_sources(self, name: str) -> frozenset[str]:
        """The initializers (or Constant outputs) a constant tensor was computed from."""
        scope: GraphView | None = self
        while scope is not None:
            if name in scope.initializers or name in scope._constant_outputs:
                return frozenset((name,))
            if name in scope.derived_from:
                return scope.derived_from[name]
            scope = scope.parent
        return frozenset()

    def mark_constants(self) -> bool:
        """Mark the outputs of constant nodes: every input constant, or a Shape/Size of a known shape.

        A fact, not a price: which constant nodes are free and which are the network's work on
        its weights is analysis/constant_work.py's policy. True where a Shape or Size reports a
        symbolic dim (analysis then evaluates what no symbol reaches).
        """
        symbolic_shapes = False
        for row in self.rows():
            symbolic_shapes |= self.mark_constant(row)
        return symbolic_shapes

    def mark_constant(self, row: NodeRow) -> bool:
        """Mark one node's outputs if it is constant (its inputs marked already, as in graph
        order). True where it is a Shape or Size reporting a symbolic dim."""
        node, op_type, domain, inputs, outputs = row
        if op_type == "Constant":
            return False
        if op_type in SHAPE_READERS and not domain:
            info = self.info(inputs[0])
            if info is None or not info.known:
                return False
            self.constant.add(outputs[0])
            value = _shape_op_value(node, info.shape)
            if value is not None:
                self.values[outputs[0]] = value
            return value is None
        is_constant = self.constant.__contains__ if self.parent is None else self.is_constant
        type_only = () if domain else TYPE_ONLY_INPUTS.get(op_type, ())
        for slot, i in enumerate(inputs):
            if i and not is_constant(i) and slot not in type_only:
                return False
        if holds_subgraph(node):
            return False
        carried = None if domain else WEIGHT_CARRYING_INPUTS.get(op_type)
        sources = frozenset().union(*(self.weight_sources(i) for slot, i in enumerate(inputs)
                                      if i and (carried is None or slot in carried)))
        for o in outputs:
            if o:
                self.constant.add(o)
                self.derived_from[o] = sources
        return False

    def is_constant_row(self, row: NodeRow) -> bool:
        """Whether a node computes only constants (a runtime can compute it once, at load)."""
        outputs = row.outputs
        if len(outputs) == 1 and self.parent is None:  # most nodes: the quick answer
            return outputs[0] in self.constant
        return any(outputs) and all(not o or self.is_constant(o) for o in outputs)


def holds_subgraph(node: onnx.NodeProto) -> bool:
    return any(a.type in GRAPH_ATTRIBUTE_TYPES for a in node.attribute)


def taken_branch(condition: np.ndarray | None) -> str | None:
    """The branch of an If that runs, where its condition's value is known: 'then_branch' where
    true, 'else_branch' where false; None where the condition is data (either may run)."""
    if condition is None or np.size(condition) != 1:
        return None
    return "then_branch" if bool(np.asarray(condition).reshape(-1)[0]) else "else_branch"


def bodies(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    """The subgraphs a node holds (Loop's body, If's branches, ...)."""
    return [g for a in node.attribute
            for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else list(a.graphs))]


def graphs_within(graph: onnx.GraphProto):
    """`graph` and every graph nested in its nodes, depth first, without recursion (a hostile
    file may nest deeper than Python's stack)."""
    stack = [graph]
    while stack:
        g = stack.pop()
        yield g
        for node in g.node:
            if node.attribute:
                stack.extend(bodies(node))


def free_names(graph: onnx.GraphProto) -> set[str]:
    """Tensors a graph (or a subgraph nested in it) reads from the scopes around it."""
    defined = {i.name for i in graph.input} | {t.name for t in graph.initializer}
    defined |= {o for n in graph.node for o in n.output}
    read = {i for n in graph.node for i in n.input if i}
    for n in graph.node:
        for body in bodies(n):
            read |= free_names(body)
    return read - defined


def _small_initializer_value(scope: GraphView, t: onnx.TensorProto) -> np.ndarray | None:
    if not has_inline_data(t) or math.prod(t.dims) > MAX_VALUE_ELEMENTS:
        return None
    value = numpy_helper.to_array(t)
    scope.values[t.name] = value
    return value


def _shape_op_value(node: onnx.NodeProto, shape: tuple[Dim, ...]) -> np.ndarray | None:
    """What Shape or Size gives, or None where it reports a symbolic dim."""
    attrs = {a.name: a.i for a in node.attribute}
    dims = shape if node.op_type == "Size" else shape[slice(attrs.get("start", 0), attrs.get("end"))]
    if any(is_symbolic(d) for d in dims):
        return None
    value = math.prod(dims) if node.op_type == "Size" else dims
    if any(abs(v) > INT64_MAX for v in ([value] if node.op_type == "Size" else dims)):
        return None  # no tensor has such a dim or so many elements: the value stays unknown
    return np.array(value, dtype=np.int64)


def _constant_node_info(node: onnx.NodeProto) -> TensorInfo | None:
    for a in node.attribute:
        if a.name == "value":
            return TensorInfo(node.output[0], a.t.data_type, tuple(int(d) for d in a.t.dims))
    return None


def _constant_node_value(node: onnx.NodeProto) -> np.ndarray | None:
    for a in node.attribute:
        if a.name == "value":
            if not has_inline_data(a.t) or math.prod(a.t.dims) > MAX_VALUE_ELEMENTS:
                return None
            return numpy_helper.to_array(a.t)
        if a.name in ("value_float", "value_int"):
            return np.array(onnx.helper.get_attribute_value(a),
                            dtype=np.float32 if a.name == "value_float" else np.int64)
        if a.name in ("value_floats", "value_ints"):
            return np.array(onnx.helper.get_attribute_value(a),
                            dtype=np.float32 if a.name == "value_floats" else np.int64)
    return None
