"""The editor canonical rules rewrite a graph through: the graph with its indices kept current.

Each edit updates the node order, the producers and the consumers of what it touches, and the
analyzed view's rows (which the editor shares), instead of reading the graph again: a rule that
edits every layer of a deep decoder costs time in proportion to its edits, not edits × nodes.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
from collections.abc import Iterable, Iterator

import numpy as np
import onnx
from onnx import helper, numpy_helper

from onnxflops.analysis import evaluate, reference_evaluate
from onnxflops.graph import (
    GraphView,
    NodeRow,
    TensorInfo,
    bodies,
    free_names,
)
from onnxflops.ops import HOLDS_SUBGRAPHS



class Editor:
    """One graph with its node order, producer and consumer maps and the analyzed tensor infos.

    Rules read `rows`, `producer` and `consumers`, and change the graph only through the methods
    here (`insert_before`, `insert_after`, `remove`, `replace`, `editing`, `rename_uses`), which
    keep those current.
    """

    def __init__(self, graph: onnx.GraphProto, view: GraphView, opset: int):
        self.graph = graph
        self.view = view
        self.opset = opset
        self._fresh = itertools.count()
        self.outputs = {o.name for o in graph.output}
        self._removed: dict[int, onnx.NodeProto] = {}
        # The view's own row list and producer map, edited in place, so the view stays current.
        # Holding the node wrappers (in the rows) keeps their identity, and so their `id`.
        self.rows: list[NodeRow] = view.rows()
        self.producer: dict[str, onnx.NodeProto] = view.producers()
        # An ascending order key per row: nodes inserted between two rows take keys between
        # theirs, so no key moves when the graph grows (bisecting the keys finds a row's index).
        # Numbered when first needed: most graphs have nothing to rewrite.
        self._keys: list[float] = []
        self._order: dict[int, float] | None = None
        self._consumers: dict[str, list[onnx.NodeProto]] | None = None
        self._body_reads: dict[int, set[str]] = {}  # control-flow node → outer names its bodies read
        self._holders: dict[int, onnx.NodeProto] | None = None  # nodes holding subgraphs
        # Constant cones by structure and fed values: each layer computes its scale alike.
        self._cone_values: dict[tuple, np.ndarray | None] = {}

    # --- reading ----------------------------------------------------------------------------

    def order(self, node: onnx.NodeProto) -> float:
        """A key that sorts nodes in graph order."""
        return self._ordered()[id(node)]

    def _ordered(self) -> dict[int, float]:
        """Each node's order key (the rows numbered afresh where they are not yet)."""
        if self._order is None:
            self._keys[:] = [float(i) for i in range(len(self.rows))]
            self._order = {id(row[0]): key for row, key in zip(self.rows, self._keys)}
        return self._order

    def of_type(self, op_types: set[str] | dict) -> list[onnx.NodeProto]:
        """The standard-domain nodes of these op types, in graph order."""
        return [row[0] for row in self.rows if row[1] in op_types and not row[2]]

    @property
    def consumers(self) -> dict[str, list[onnx.NodeProto]]:
        """Who reads each tensor, once per read (subgraphs included); built when first needed."""
        if self._consumers is None:
            self._consumers = {}
            for row in self.rows:
                self._add_reads(row)
        return self._consumers

    def sole_consumer(self, name: str) -> onnx.NodeProto | None:
        users = self.consumers.get(name, [])
        return users[0] if len(users) == 1 and name not in self.outputs else None

    def removed(self, node: onnx.NodeProto) -> bool:
        """Whether an earlier rewrite took `node` out of the graph."""
        return id(node) in self._removed

    def info(self, name: str) -> TensorInfo | None:
        return self.view.info(name)

    def is_constant(self, name: str) -> bool:
        return bool(name) and self.view.is_constant(name)

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
        cone.sort(key=self.order)
        key = _cone_key(cone, feeds, name)
        if key not in self._cone_values:
            self._cone_values[key] = _run_cone(cone, feeds, name, self.opset)
        value = self._cone_values[key]
        if value is None:
            return None
        value = self.view.values[name] = value.copy()
        return value

    # --- new tensors --------------------------------------------------------------------------

    def fresh(self, base: str) -> str:
        return f"{base}__canonical{next(self._fresh)}"

    def set_info(self, name: str, dtype: int, shape) -> None:
        self.graph.value_info.append(helper.make_tensor_value_info(name, dtype, shape))
        self.view.tensors[name] = TensorInfo(name, dtype, tuple(shape) if shape is not None else None)

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

    # --- edits --------------------------------------------------------------------------------

    def insert_before(self, anchor: onnx.NodeProto, added: list[onnx.NodeProto]) -> None:
        self._insert(self._index(anchor), added)

    def insert_after(self, anchor: onnx.NodeProto, added: list[onnx.NodeProto]) -> None:
        self._insert(self._index(anchor) + 1, added)

    def replace(self, removed: list[onnx.NodeProto], added: list[onnx.NodeProto]) -> None:
        """Swap `removed` for `added`, placed after the last removed node (their inputs precede it)."""
        self.insert_after(max(removed, key=self.order), added)
        self.remove(removed)

    def remove(self, removed: Iterable[onnx.NodeProto]) -> None:
        for node in removed:
            index = self._index(node)
            row = self.rows[index]
            del self.graph.node[index], self.rows[index], self._keys[index]
            del self._order[id(node)]
            self._unindex(row)
            self._removed[id(node)] = node  # held: its id stays its own
        self.view.kinds = {}

    @contextlib.contextmanager
    def editing(self, node: onnx.NodeProto) -> Iterator[onnx.NodeProto]:
        """Change the node's inputs, outputs or subgraphs inside the block; its indices follow.

        The block inserts and removes no node.
        """
        index = self._index(node)
        self._unindex(self.rows[index])
        try:
            yield node
        finally:
            self.rows[index] = _row(node)
            self._add(self.rows[index])
            self.view.kinds = {}

    def rename_uses(self, old: str, new: str) -> None:
        """Every read of `old` reads `new`: the consumers of `old`, and the subgraphs held here."""
        if self._holders is None:
            self._holders = {id(row[0]): row[0] for row in self.rows if _holds_subgraphs(row)}
        readers = {id(n): n for n in self.consumers.get(old, [])} | self._holders
        for node in readers.values():
            with self.editing(node):
                for i, name in enumerate(node.input):
                    if name == old:
                        node.input[i] = new
                for body in bodies(node):
                    rename_in_graph(body, old, new)

    def _insert(self, at: int, added: list[onnx.NodeProto]) -> None:
        if not added:
            return
        order = self._ordered()
        keys = self._keys_between(at, len(added))
        if keys is None:  # no room left between two floats: number the rows afresh (rare)
            self._order = None
            order = self._ordered()
            keys = self._keys_between(at, len(added))
        for offset, (node, key) in enumerate(zip(added, keys)):
            self.graph.node.insert(at + offset, node)
            node = self.graph.node[at + offset]  # the graph holds a copy: index that
            row = _row(node)
            self.rows.insert(at + offset, row)
            self._keys.insert(at + offset, key)
            order[id(node)] = key
            self._add(row)
        self.view.kinds = {}

    def _keys_between(self, at: int, n: int) -> list[float] | None:
        """`n` ascending keys between the rows at `at - 1` and `at`, or None if floats run out."""
        keys = self._keys
        low = keys[at - 1] if at else (keys[0] if keys else 0.0) - 1.0
        high = keys[at] if at < len(keys) else low + n + 1.0
        step = (high - low) / (n + 1)
        between = [low + step * (k + 1) for k in range(n)]
        bounds = [low, *between, high]
        return between if all(a < b for a, b in itertools.pairwise(bounds)) else None

    def _index(self, node: onnx.NodeProto) -> int:
        """The node's index in the graph (and in `rows`)."""
        index = bisect.bisect_left(self._keys, self._ordered()[id(node)])
        assert self.rows[index][0] is node
        return index

    def _add(self, row: NodeRow) -> None:
        node = row[0]
        for o in row[4]:
            if o:
                self.producer[o] = node
        if self._consumers is not None:
            self._add_reads(row)
        if self._holders is not None and _holds_subgraphs(row):
            self._holders[id(node)] = node

    def _add_reads(self, row: NodeRow) -> None:
        node, op_type, _, inputs, _ = row
        read = list(inputs)
        if op_type in HOLDS_SUBGRAPHS:
            outer = self._body_reads[id(node)] = set().union(*map(free_names, bodies(node)))
            read += outer
        for i in read:
            self._consumers.setdefault(i, []).append(node)

    def _unindex(self, row: NodeRow) -> None:
        node, op_type, _, inputs, outputs = row
        for o in outputs:
            if o and self.producer.get(o) is node:
                del self.producer[o]
        if self._consumers is not None:
            read = list(inputs)
            if op_type in HOLDS_SUBGRAPHS:
                read += self._body_reads.pop(id(node))
            for i in read:
                users = self._consumers[i]
                del users[next(k for k, user in enumerate(users) if user is node)]
                if not users:
                    del self._consumers[i]
        if self._holders is not None:
            self._holders.pop(id(node), None)


def _holds_subgraphs(row: NodeRow) -> bool:
    return (row[1] in HOLDS_SUBGRAPHS or bool(row[2])) and bool(bodies(row[0]))


def _run_cone(cone: list[onnx.NodeProto], feeds: dict[str, np.ndarray], name: str,
              opset: int) -> np.ndarray | None:
    """`name`'s value from the cone: numpy's shape arithmetic, else onnx's reference evaluator."""
    try:
        return np.asarray(evaluate(cone, feeds, opset)[name])
    except Exception:  # noqa: BLE001, S110 - an op numpy does not cover, or cannot run as given
        pass
    try:
        return reference_evaluate(cone, feeds, {"": opset}, [name])[name]
    except Exception:  # noqa: BLE001 - the reference evaluator raises anything: not a scalar then
        return None


def _cone_key(cone: list[onnx.NodeProto], feeds: dict[str, np.ndarray], output: str) -> tuple:
    """The cone's nodes and fed values with its tensors numbered in order of appearance: cones
    that compute alike (each layer's scale from its own shapes) have one key."""
    number: dict[str, int] = {}

    def numbered(names) -> tuple[int, ...]:
        return tuple(number.setdefault(n, len(number)) if n else -1 for n in names)

    nodes = tuple((n.op_type, n.domain, tuple(a.SerializeToString() for a in n.attribute),
                   numbered(n.input), numbered(n.output)) for n in cone)
    fed = tuple(sorted((numbered([k])[0], v.dtype.str, v.shape, v.tobytes())
                       for k, v in ((k, np.asarray(v)) for k, v in feeds.items())))
    return nodes, fed, numbered([output])[0]


def _row(node: onnx.NodeProto) -> NodeRow:
    """The node's fields as GraphView.rows reads them."""
    return NodeRow.of(node)


def rename_in_graph(graph: onnx.GraphProto, old: str, new: str) -> None:
    """Rename every read of `old` in a subgraph (and the graphs nested in it), its outputs too."""
    for node in graph.node:
        for i, name in enumerate(node.input):
            if name == old:
                node.input[i] = new
        for body in bodies(node):
            rename_in_graph(body, old, new)
    for o in graph.output:
        if o.name == old:
            o.name = new
