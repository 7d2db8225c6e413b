"""What onnxruntime refuses to load, found without it: a model it would not run is not counted.

onnxruntime resolves a graph before it runs it, and refuses one where a tensor is defined twice
(two nodes writing one name, a node writing an initializer's or an input's name), where a node
reads a tensor that nothing defines, where a graph output is defined nowhere, or where the nodes
form a cycle; nested graphs (Loop, Scan and If bodies) are resolved the same way, seeing the
tensors of the scopes around them. It also refuses a node whose output the model declares of
another element type than the node's inference finds (check_declared_type); a declared shape
that differs is only a warning to it, and a shape onnxflops infers again. Each problem is one OnnxFlopsError naming the node and the
tensor at fault. One pass over the rows the analysis reads anyway; a graph that is out of order
(which onnxruntime sorts) costs a topological sort on top, and only then.

Accepted on purpose where onnxruntime would refuse: nodes of custom domains (a rule may cost them;
onnxruntime needs their kernels registered), and external data files that are missing (counting
reads only the tensors' headers).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import onnx

from onnxflops.errors import OnnxFlopsError
from onnxflops.graph import NodeRow, bodies, free_names, holds_subgraph
from onnxflops.ops import HOLDS_SUBGRAPHS


def check_structure(graph: onnx.GraphProto, rows: Sequence[NodeRow] | None = None,
                    outer: Iterable[str] = (), where: str | None = None,
                    check_node: Callable[[NodeRow], None] | None = None) -> None:
    """Raise OnnxFlopsError naming the first tensor defined twice, read undefined, or on a cycle,
    or the first node name given twice, in `graph` and the graphs nested in it (a domain used
    but not imported is the load stage's: load/validate.py). `rows`: the graph's rows where
    already read; `outer`: the tensors of the scopes around it (for a nested graph);
    `check_node`: what else to check of each node of a nested graph (its schema)."""
    where = where or (f"graph '{graph.name}'" if graph.name else "the main graph")
    stack = [(graph, rows, frozenset(outer), where)]
    while stack:
        graph, rows, outer, where = stack.pop()
        if rows is None:
            rows = list(map(NodeRow.of, graph.node))
            if check_node is not None:
                for row in rows:
                    check_node(row)
        holders = [position for position, row in enumerate(rows)
                   # Of the standard ops only control flow holds graphs (the schema check refuses
                   # a graph attribute on another): the others' attributes are not read here.
                   if (row.op_type in HOLDS_SUBGRAPHS or row.domain) and holds_subgraph(row.proto)]
        if holders:  # what a body reads of the scopes around it is an input of its node
            rows = list(rows)
            for position in holders:
                row = rows[position]
                implicit = set().union(*map(free_names, bodies(row.proto))) - set(row.inputs)
                rows[position] = row._replace(inputs=[*row.inputs, *sorted(implicit)])
        defined = _check_graph(graph, rows, outer, where)
        _check_names(rows, where)
        _check_attribute_names(rows, where)
        scope = outer | defined if holders else outer
        for position in holders:
            row = rows[position]
            stack.extend((body, None, scope, f"the body of {_label(row)}")
                         for body in bodies(row.proto))



def _check_graph(graph: onnx.GraphProto, rows: Sequence[NodeRow], outer: frozenset[str],
                 where: str) -> set[str]:
    """The checks of one graph; the tensors it defines."""
    seen = {vi.name for vi in graph.input}
    seen.update(t.name for t in graph.initializer)  # an input's default: not a second definition
    seen.update(t.values.name for t in graph.sparse_initializer)
    seen.add("")  # an absent optional tensor
    before = len(seen)
    written = 0
    in_order = True
    for _, _, _, inputs, outputs in rows:  # per node of the largest graphs: kept to set lookups
        if in_order:
            for name in inputs:
                if name not in seen:
                    in_order = False
                    break
        seen.update(outputs)
        written += len(outputs)
    if len(seen) - before != written:  # some name written twice, or the absent one written
        _find_duplicate(graph, rows, where)
    if not in_order:
        _check_reads(rows, seen, outer, where)
    for vi in graph.output:
        if vi.name not in seen and vi.name not in outer:
            raise OnnxFlopsError(f"{where}: output '{vi.name}' is defined by no node, input or "
                                 "initializer")
    seen.discard("")
    return seen


def _check_names(rows: Sequence[NodeRow], where: str) -> None:
    """Node names are optional, but onnxruntime refuses one given to two nodes of a graph."""
    names = [row.proto.name for row in rows]
    named = len(names) - names.count("")
    if len(set(names)) - ("" in names) == named:
        return
    seen: set[str] = set()
    for row, name in zip(rows, names):
        if name in seen:
            raise OnnxFlopsError(f"{where}: two nodes are named '{name}' (the second a "
                                 f"{row.op_type})")
        if name:
            seen.add(name)


def _check_attribute_names(rows: Sequence[NodeRow], where: str) -> None:
    """No node names one attribute twice: onnxruntime refuses it at load ("Attribute 'body'
    appeared multiple times"), and ONNX's checker lets it pass (the fuzz run's scan:216966)."""
    for row in rows:
        attributes = row.proto.attribute
        if len(attributes) < 2:
            continue
        names = [a.name for a in attributes]
        if len(set(names)) < len(names):
            twice = next(name for name in names if names.count(name) > 1)
            raise OnnxFlopsError(f"{where}: node {_label(row)} names its attribute '{twice}' "
                                 "more than once, which onnxruntime refuses at load")


def _find_duplicate(graph: onnx.GraphProto, rows: Sequence[NodeRow], where: str) -> None:
    defined = {vi.name: "an input" for vi in graph.input}
    defined.update((t.name, "an initializer") for t in graph.initializer)
    defined.update((t.values.name, "an initializer") for t in graph.sparse_initializer)
    for row in rows:
        for name in row.outputs:
            if not name:
                continue
            if name in defined:
                raise OnnxFlopsError(f"{where}: node {_label(row)} writes '{name}', which "
                                     f"{defined[name]} defines already")
            defined[name] = f"node {_label(row)}"


def _check_reads(rows: Sequence[NodeRow], defined: set[str], outer: frozenset[str],
                 where: str) -> None:
    """A graph whose nodes read tensors written later: every read is defined somewhere, and the
    nodes can be ordered (Kahn's sort), or they form a cycle."""
    producer = {name: position for position, row in enumerate(rows) for name in row.outputs if name}
    waiting = [0] * len(rows)  # per node: inputs written by nodes not yet ordered
    readers: dict[int, list[int]] = {}
    for position, row in enumerate(rows):
        for name in row.inputs:
            if name in producer:
                waiting[position] += 1
                readers.setdefault(producer[name], []).append(position)
            elif name not in defined and name not in outer:
                raise OnnxFlopsError(f"{where}: node {_label(row)} reads '{name}', which no "
                                     "node, input or initializer defines")
    ready = [position for position, count in enumerate(waiting) if count == 0]
    ordered = 0
    while ready:
        position = ready.pop()
        ordered += 1
        for reader in readers.get(position, ()):
            waiting[reader] -= 1
            if waiting[reader] == 0:
                ready.append(reader)
    if ordered < len(rows):
        row = rows[next(p for p, count in enumerate(waiting) if count)]
        raise OnnxFlopsError(f"{where}: node {_label(row)} is on a cycle: it reads what it "
                             "writes, through other nodes")


def check_declared_type(row: NodeRow, name: str, declared: int, inferred: int) -> None:
    """declared element type == inferred one, where both are known (onnxruntime's graph resolve:
    "Type Error: Type (X) of output arg (name) of node (n) does not match expected type (Y)")."""
    if declared and inferred and declared != inferred:
        raise OnnxFlopsError(f"node {_label(row)}: writes '{name}' of element type "
                             f"{_type_name(inferred)}, but the model declares it "
                             f"{_type_name(declared)}, which onnxruntime refuses")


def _type_name(elem_type: int) -> str:
    return onnx.TensorProto.DataType.Name(elem_type).lower() \
        if elem_type in onnx.TensorProto.DataType.values() else str(elem_type)


def _label(row: NodeRow) -> str:
    if row.proto.name or not any(row.outputs):
        return f"'{row.proto.name}' ({row.op_type})"
    return f"({row.op_type}) writing '{next(o for o in row.outputs if o)}'"
