"""Stage 3: bring the bound model to the form the counter expects.

Model-local functions are inlined so that their nodes are costed like any other. What inlining
would make is counted first, without making it: functions that call functions, each twice, 20
levels deep, inline to a million nodes. Beyond MAX_INLINED_NODES (50,000) the calls stay calls, and each
is costed by its body, analysed once per signature it is called with and multiplied; functions
nested deeper than MAX_FUNCTION_DEPTH are refused in one line.
"""

from __future__ import annotations

import onnx
import onnx.inliner

from onnxflops.errors import OnnxFlopsError, first_line
from onnxflops.graph import bodies, domain_key, graphs_within
from onnxflops.load.validate import running_opsets

# The most nodes inlining the model's local functions may make: a 80-layer decoder whose every
# layer is a function inlines to some 13,000; analysing a million would take minutes and GBs.
MAX_INLINED_NODES = 50_000
# The deepest nesting of calls followed when they stay calls (each level is analysed within the
# one above it).
MAX_FUNCTION_DEPTH = 40


def normalize(model: onnx.ModelProto, max_nodes: int | None = None) -> onnx.ModelProto:
    """`model` with its local functions inlined where that makes at most `max_nodes` nodes
    (MAX_INLINED_NODES where None)."""
    if model.functions:
        _check_not_recursive(model.functions)
        model = _imports_as_run(model)
        if _inlined_size(model) > (MAX_INLINED_NODES if max_nodes is None else max_nodes):
            return model  # each call is costed from its body, once per signature (counter.py)
        try:
            model = onnx.inliner.inline_local_functions(model)
        except Exception as e:  # noqa: BLE001 - the inliner's checks raise several kinds
            raise OnnxFlopsError(f"the model's local functions cannot be inlined: {first_line(e)}") \
                from None
    return model


def _imports_as_run(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` (a copy where anything changes) with each local function importing the opsets its
    nodes run at (running_opsets) and the model importing each of them: onnx's inliner refuses
    a function importing another opset than the model ("incompatible opset versions"), so its
    calls were left uncosted, and left the nodes of a domain only the function imports in a
    graph that does not import it."""
    model_opsets = {domain_key(o.domain): o.version for o in model.opset_import}
    written = [{domain_key(o.domain): o.version for o in f.opset_import} for f in model.functions]
    imports = [running_opsets(model_opsets, opsets) for opsets in written]
    added = {d: v for running in imports for d, v in running.items() if d not in model_opsets}
    if not added and imports == written:
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    _standard_domain_spelled_empty(copy)
    copy.opset_import.extend(onnx.helper.make_opsetid(d, v) for d, v in added.items())
    for function, running in zip(copy.functions, imports):
        del function.opset_import[:]
        function.opset_import.extend(onnx.helper.make_opsetid(d, v) for d, v in running.items())
    return copy


def _standard_domain_spelled_empty(model: onnx.ModelProto) -> None:
    """The model's import of the standard domain, and its graph's nodes of it, spelled "" as the
    functions' imports are written (domain_key): onnx before 1.20 takes "ai.onnx" and "" for two
    domains, so an inlined node of "" in a model importing "ai.onnx" had no opset there."""
    for opset in model.opset_import:
        if opset.domain == "ai.onnx":
            opset.domain = ""
    for graph in graphs_within(model.graph):
        for node in graph.node:
            if node.domain == "ai.onnx":
                node.domain = ""


def _check_not_recursive(functions) -> None:
    """A local function that calls itself, directly or through others, is one line: onnx's
    inliner would loop (onnx 1.19 crashes the process)."""
    calls = {(f.domain, f.name): {(n.domain, n.op_type) for n in f.node} for f in functions}
    done: set = set()
    for start in calls:
        path, stack = set(), [(start, False)]
        while stack:  # depth first, without recursion: on leaving a function it leaves the path
            function, leaving = stack.pop()
            if leaving:
                path.discard(function)
                done.add(function)
                continue
            if function in path:
                raise OnnxFlopsError(f"the model's local functions cannot be inlined: "
                                     f"'{function[1]}' calls itself (a cycle of functions)")
            if function in done:
                continue
            path.add(function)
            stack.append((function, True))
            stack.extend((callee, False) for callee in calls[function] if callee in calls)


def _inlined_size(model: onnx.ModelProto) -> int:
    """How many nodes inlining the model's functions would make, found from each function's
    size once (callees first: _check_not_recursive found they call no function of theirs),
    nested graphs included. Raises OnnxFlopsError where calls nest over MAX_FUNCTION_DEPTH."""
    functions = {(f.domain, f.name): f for f in model.functions}
    sizes: dict[tuple[str, str], int] = {}
    depths: dict[tuple[str, str], int] = {}

    def size_of(nodes) -> tuple[int, int]:
        total = depth = 0
        for n in nodes:
            callee = (n.domain, n.op_type)
            total += sizes[callee] if callee in sizes else 1
            depth = max(depth, depths.get(callee, 0))
            for g in bodies(n):
                inner, inner_depth = size_of(g.node)
                total, depth = total + inner, max(depth, inner_depth)
        return total, depth

    pending = list(functions)
    while pending:  # callees first, without recursion: a function waits for those it calls
        key = pending[-1]
        if key in sizes:
            pending.pop()
            continue
        waiting = [c for c in _callees(functions[key]) if c in functions and c not in sizes]
        if waiting:
            pending.extend(waiting)
            continue
        pending.pop()
        sizes[key], depth = size_of(functions[key].node)
        depths[key] = depth + 1
        if depths[key] > MAX_FUNCTION_DEPTH:
            raise OnnxFlopsError(f"the model's local functions nest {depths[key]} calls deep "
                                 f"(function '{key[1]}'), over the {MAX_FUNCTION_DEPTH} onnxflops "
                                 "follows")
    return size_of(model.graph.node)[0]


def _callees(function: onnx.FunctionProto) -> set[tuple[str, str]]:
    found, stack = set(), [function.node]
    while stack:
        for n in stack.pop():
            found.add((n.domain, n.op_type))
            stack.extend(g.node for g in bodies(n))
    return found
