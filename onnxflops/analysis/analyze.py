"""Stage 4: infer every tensor's shape and find the constant subgraphs.

With every input bound, ONNX's inference runs node by node, once per distinct kind of node, and
the constant shape arithmetic is evaluated on the way (inference.py). What the numpy evaluator
does not cover is evaluated by onnx's reference evaluator, and the nodes it unblocks are typed
in another pass. Dims left symbolic (counting with symbolic=True) take whole-model inference,
whose data propagation carries the symbols, and symbolic.py's arithmetic on them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper, numpy_helper

from onnxflops.analysis.contrib_shapes import infer_contrib_shapes
from onnxflops.analysis.evaluate import evaluate, reference_evaluate
from onnxflops.analysis.inference import (
    NodeTyper,
    check_kind,
    infer_model,
    small,
)
from onnxflops.analysis.ranges import scope_around
from onnxflops.analysis.sequences import sequence_info
from onnxflops.caches import memoized
from onnxflops.errors import OnnxFlopsError, first_line, in_callers_words
from onnxflops.analysis.validity import check_structure
from onnxflops.analysis.symbolic import (
    concrete_values,
    has_symbolic_inputs,
    resolve_shapes,
)
from onnxflops.graph import (
    GraphView,
    TensorInfo,
    ValueInfo,
    bound_sequences,
    domain_key,
    free_names,
    holds_subgraph,
    info_from_value_info,
    is_known,
    type_proto_of,
)
from onnxflops.ops import CHECKED_DOMAINS
from onnxflops.load import opset_warnings
from onnxflops.load.schema import checker_context


@dataclass
class AnalyzedModel:
    model: onnx.ModelProto
    graph: GraphView
    opsets: dict[str, int]
    warnings: list[str] = field(default_factory=list)


def analyze(model: onnx.ModelProto, *, owned: bool = False,
            validate: bool = True) -> AnalyzedModel:
    """Type every tensor of `model` and find its constants.

    The analyzed model is a copy that canonicalize may edit, or with `owned` (the caller hands
    `model` over) `model` itself. `validate`: first refuse what onnxruntime would refuse to load
    (validity.py); False for the models analysis makes of a checked one's parts.
    """
    warnings: list[str] = opset_warnings(model)
    opsets = {domain_key(o.domain): o.version for o in model.opset_import}
    if has_symbolic_inputs(model):
        if model.functions:
            # Left calls by normalize (too many nodes to inline): ONNX's whole-model inference,
            # which symbolic dims take, would expand every call.
            raise OnnxFlopsError(f"{_graph_label(model)}: its local functions inline to more "
                                 "nodes than onnxflops analyses, which symbolic dims cannot "
                                 f"follow: bind every input dim "
                                 f"({in_callers_words('--input, --batch', 'inputs=, batch=')})")
        if validate:
            rows = GraphView(model.graph).rows()
            check = _schema_checker(model)
            check_structure(model.graph, rows, check_node=check)
            for row in rows:
                check(row)
        return _analyze_symbolic(model, opsets, warnings)
    analyzed = model
    if not owned:
        analyzed = onnx.ModelProto()
        analyzed.CopyFrom(model)
    view = GraphView(analyzed.graph)
    for name in _empty_inputs(view):  # no element to read: its value is known
        info = view.info(name)
        view.values[name] = np.zeros(info.shape, helper.tensor_dtype_to_np_dtype(info.dtype))
    declared = {vi.name: vi.type for vi in analyzed.graph.input}
    for name, elements in bound_sequences(analyzed).items():
        view.sequences[name] = elements
        if elements:
            info = sequence_info(name, elements)
            if declared[name].HasField("optional_type"):  # an optional holding the sequence
                info = ValueInfo(name, helper.make_optional_type_proto(info.type_proto))
            view.tensors[name] = info
    if validate:  # the top graph's nodes are checked against their schemas as they are typed
        check_structure(analyzed.graph, view.rows(), check_node=_schema_checker(model))
    typer = NodeTyper(view, analyzed, opsets, warnings, _function_outputs, _branch_types)
    unknown_left = typer.type_graph()
    # Shape arithmetic the numpy evaluator does not cover: onnx's reference evaluator, as
    # long as it finds values that type more nodes.
    while unknown_left:
        found = _evaluate_constants(view, opsets, warnings)
        if found.keys() <= view.values.keys():
            break
        view.values.update(found)
        for name, value in found.items():
            if not is_known(view.info(name)):
                view.tensors[name] = TensorInfo(name, helper.np_dtype_to_tensor_dtype(value.dtype),
                                                value.shape)
        unknown_left = typer.type_graph()
    # Calls left by normalize (too many nodes to inline): whole-model inference would expand
    # every one of them, which is what leaving them avoids.
    if unknown_left and not analyzed.functions and _whole_model_types(analyzed, view):
        typer.type_graph()
    return AnalyzedModel(analyzed, view, opsets, warnings)


def _empty_inputs(view: GraphView) -> list[str]:
    """The graph's tensor inputs of no element (a Reduce's empty `axes`), of a numeric type."""
    return [vi.name for vi in view.graph.input
            if (info := view.info(vi.name)) is not None and info.concrete and info.numel == 0
            and info.dtype in _EMPTY_VALUE_TYPES and vi.name not in view.initializers]


_EMPTY_VALUE_TYPES = {onnx.TensorProto.INT64, onnx.TensorProto.INT32, onnx.TensorProto.FLOAT,
                      onnx.TensorProto.BOOL}


def _function_outputs(body: onnx.ModelProto) -> list[TensorInfo | None]:
    """The output types of a local function's body model (local_function_model)."""
    graph = analyzed_function_body(body).graph
    return [graph.info(vi.name) for vi in body.graph.output]


def _branch_types(scope: GraphView, body: onnx.GraphProto,
                  opsets: dict[str, int]) -> list[tuple[TensorInfo | None, str | None]]:
    """The output types of an If's branch analysed in `scope` (ONNX's inference does not see the
    sizes bounds give inside it), each with why it is an upper bound, if it is."""
    branch = GraphView(body, parent=scope)
    refine_subgraph(branch, opsets)
    return [(branch.info(o.name), branch.bounds.get(o.name) or scope.bounds.get(o.name))
            for o in body.output]


def analyzed_function_body(body: onnx.ModelProto) -> AnalyzedModel:
    """A local function's body model analysed, once for the calls alike in every input type:
    typing the calls and costing them read the same analysis, at every level of nesting."""
    return _analyzed_body(body.SerializeToString())


@memoized(256)
def _analyzed_body(serialized: bytes) -> AnalyzedModel:
    return analyze(onnx.ModelProto.FromString(serialized), owned=True)


def _whole_model_types(model: onnx.ModelProto, view: GraphView) -> bool:
    """Types whole-model inference finds for tensors node-by-node typing left unknown: its data
    propagation carries shape values that are only partly known (the Shape of a tensor with a
    data-dependent dim), which no constant evaluation gives. True where it found any. What it
    rejects, node-by-node typing has reported already."""
    evaluated = {name: value for name, value in view.values.items()
                 if name not in view.initializers}
    try:
        inferred = onnx.shape_inference.infer_shapes(_with_values(model, evaluated),
                                                     strict_mode=False, data_prop=True)
    except (onnx.shape_inference.InferenceError, RuntimeError, ValueError):
        return False
    found = False
    for vi in [*inferred.graph.value_info, *inferred.graph.output]:
        info, better = view.info(vi.name), info_from_value_info(vi)
        if _known_dims(better) > _known_dims(info):
            view.tensors[vi.name] = better
            found = True
    return found


def _known_dims(info: TensorInfo | None) -> int:
    if info is None or info.shape is None:
        return -1
    return sum(isinstance(d, int) for d in info.shape)


def _analyze_symbolic(model: onnx.ModelProto, opsets: dict[str, int],
                      warnings: list[str]) -> AnalyzedModel:
    """Whole-model inference, whose data propagation carries symbolic dims through shape
    arithmetic, completed by symbolic.py's arithmetic on the symbols."""
    def infer(m: onnx.ModelProto) -> onnx.ModelProto:
        return infer_contrib_shapes(infer_model(m, warnings),
                                    lambda again: infer_model(again, warnings))

    first = infer_contrib_shapes(infer_model(model, warnings, refuse=_graph_label(model)),
                                 lambda again: infer_model(again, warnings))
    inferred = resolve_shapes(model, first, infer, warnings)
    view = GraphView(inferred.graph)
    mark_constants(view)
    values: dict[str, np.ndarray] = {}
    # Each round of evaluated shape arithmetic can reveal shapes that feed the next (tf2onnx's
    # einsum lowering chains Shape → Reshape → Shape → ...): repeat while it finds new values.
    while has_unknown_outputs(view):
        found = _evaluate_constants(view, opsets, warnings)
        if found.keys() <= values.keys():
            break
        values.update(found)
        adopted = _adopt_shapes(inferred, infer_model(_with_values(inferred, values), warnings),
                                values)
        view.read_types(vi for vi in adopted if not is_known(view.info(vi.name)))
        view.nodes_changed()  # subgraph nodes took their refined bodies
        view.values.update(values)
        mark_constants(view)
    return AnalyzedModel(inferred, view, opsets, warnings)


def _schema_checker(model: onnx.ModelProto):
    """Checks a node against its op's schema, once per kind, where onnx holds the schemas."""
    context, checked = checker_context(model), set()

    def check(row) -> None:
        if row.domain in CHECKED_DOMAINS:
            check_kind(row, context, checked)
    return check


def _graph_label(model: onnx.ModelProto) -> str:
    return f"graph '{model.graph.name}'" if model.graph.name else "the main graph"


def mark_constants(view: GraphView) -> None:
    """Mark the view's constant outputs, and where a Shape or Size reports a symbolic dim, the values
    that shape arithmetic reads off it that no symbol reaches."""
    if view.mark_constants():
        for name, value in concrete_values(view).items():
            view.values.setdefault(name, value)


def refine_subgraph(view: GraphView, opsets: dict[str, int]) -> None:
    """Fill in the shapes ONNX inference leaves unknown inside a subgraph.

    Inference does not see the values of outer-scope tensors (the axes of an Unsqueeze, the shape
    of a ConstantOfShape), so the body is analyzed as a model of its own: its formal inputs typed
    as `view` has them, the outer tensors it reads as inputs, or constants where their value is
    known (a formal input too, where the view gives it one).
    """
    body = view.graph
    outer = sorted(free_names(body))
    known = {name: view.value(name) for name in outer}
    # a formal input given a value (a Loop's trip number), read from this scope only: it shadows
    # any outer tensor of its name
    known.update({i.name: view.values[i.name] for i in body.input if i.name in view.values})
    inputs = [onnx.helper.make_value_info(name, type_proto_of(info))
              for name in [i.name for i in body.input] + outer
              if known.get(name) is None and (info := view.info(name)) is not None]
    constants = list(body.initializer) + [numpy_helper.from_array(np.asarray(v), name=k)
                                          for k, v in known.items() if v is not None]
    graph = onnx.helper.make_graph(body.node, body.name, inputs, body.output, constants)
    model = onnx.helper.make_model(
        graph, opset_imports=[onnx.helper.make_opsetid(d, v) for d, v in opsets.items()])
    with scope_around(view):
        refined = analyze(model, validate=False).graph
    produced = {o for n in body.node for o in n.output if o}
    for name in produced:
        info, current = refined.info(name), view.info(name)
        if info is not None and info.known and (current is None or not current.known):
            view.tensors[name] = info
        if name in refined.values:
            view.values[name] = refined.values[name]
        if name in refined.bounds and name not in view.bounds and not view.is_constant(name):
            view.bounds[name] = refined.bounds[name]


def has_unknown_outputs(view: GraphView) -> bool:
    for row in view.rows():
        for name in row.outputs:
            if name and not is_known(view.info(name)):
                return True
    return False


def _evaluate_constants(view: GraphView, opsets: dict[str, int],
                        warnings: list[str]) -> dict[str, np.ndarray]:
    """Values of the small constant tensors, from the constant nodes that produce them."""
    known = {n: v for n, v in view.values.items()}
    nodes = []
    for node, op_type, _, inputs, outputs in view.rows():
        if op_type == "Constant" or not all(view.is_constant(o) for o in outputs if o):
            continue
        if not all(i == "" or i in known or view.value(i) is not None for i in inputs):
            continue
        if holds_subgraph(node):
            continue
        if not all(small(view, o) for o in node.output if o):
            continue
        nodes.append(node)
        known.update({o: None for o in node.output if o})
    if not nodes:
        return {}
    produced = {o for n in nodes for o in n.output if o}
    values = {i: view.value(i) for n in nodes for i in n.input if i and i not in produced}
    opset = opsets.get("", 0)
    numpy_lacks = []
    for node in nodes:
        try:
            values.update(evaluate([node], values, opset))
        except Exception:  # noqa: BLE001 - an op numpy does not cover, or an input it lacks
            numpy_lacks.append(node)
    if numpy_lacks:
        values.update(_reference_values(numpy_lacks, values, opsets, warnings))
    # a sequence's value (SequenceEmpty's) is not held: it is typed by its elements
    return {name: values[name] for name in produced
            if isinstance(values.get(name), np.ndarray) and view.sequence(name) is None}


def _reference_values(nodes: list[onnx.NodeProto], known: dict[str, np.ndarray],
                      opsets: dict[str, int], warnings: list[str]) -> dict[str, np.ndarray]:
    """Outputs of `nodes` from onnx's reference evaluator, all at once where it can; else node
    by node, so that one failure costs only the values that depend on it."""
    found = _run_reference(nodes, known, opsets)
    if isinstance(found, dict):
        return found
    values = dict(known)
    failures = []
    for node in nodes:
        if not all(i in values for i in node.input if i):
            continue  # what a failed node would have fed
        result = _run_reference([node], values, opsets)
        if isinstance(result, dict):
            values.update(result)
        else:
            failures.append(f"{node.op_type} '{node.name}': {result}")
    if failures:
        warnings.append(f"could not evaluate shape arithmetic at {len(failures)} node(s), first "
                        f"{failures[0]}")
    return {name: values[name] for n in nodes for name in n.output if name in values}


def _run_reference(nodes: list[onnx.NodeProto], known: dict[str, np.ndarray],
                   opsets: dict[str, int]) -> dict[str, np.ndarray] | str:
    """The outputs of `nodes` run by onnx's reference evaluator, or why it failed."""
    produced = [o for n in nodes for o in n.output if o]
    feeds = {i: known[i] for n in nodes for i in n.input if i and i not in produced and i in known}
    try:
        return reference_evaluate(nodes, feeds, opsets, produced)
    except Exception as e:  # noqa: BLE001 - the reference evaluator raises anything
        return first_line(e)


def _with_values(model: onnx.ModelProto, values: dict[str, np.ndarray]) -> onnx.ModelProto:
    """A copy where the evaluated tensors are initializers and their producers are gone."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    keep = [n for n in copy.graph.node if not any(o in values for o in n.output)]
    del copy.graph.node[:]
    copy.graph.node.extend(keep)
    copy.graph.initializer.extend(numpy_helper.from_array(v, name=k) for k, v in values.items())
    kept_info = [vi for vi in copy.graph.value_info if vi.name not in values]
    del copy.graph.value_info[:]
    copy.graph.value_info.extend(kept_info)
    return copy


def _adopt_shapes(model: onnx.ModelProto, inferred: onnx.ModelProto,
                  values: dict[str, np.ndarray]) -> list[onnx.ValueInfoProto]:
    """Take the shapes found in `inferred` for tensors `model` still lacks, and the shapes of the
    evaluated `values` (initializers there). Returns the value infos of `model` it rewrote."""
    have = {vi.name: vi for vi in model.graph.value_info}
    evaluated = [onnx.helper.make_tensor_value_info(t.name, t.data_type, t.dims)
                 for t in inferred.graph.initializer if t.name in values]
    for vi in [*inferred.graph.value_info, *evaluated]:
        if vi.name in have:
            have[vi.name].CopyFrom(vi)
        else:
            model.graph.value_info.append(vi)
            have[vi.name] = model.graph.value_info[-1]
    outs = {o.name: o for o in inferred.graph.output}
    rewritten = list(have.values())
    for o in model.graph.output:
        if o.name in outs:
            o.CopyFrom(outs[o.name])
            rewritten.append(o)
    nodes = {n.output[0]: n for n in inferred.graph.node if n.output}
    for n in model.graph.node:
        # Subgraph bodies carry their own inferred value_info.
        twin = nodes.get(n.output[0]) if n.output else None
        if twin is not None and any(a.type == onnx.AttributeProto.GRAPH for a in n.attribute):
            n.CopyFrom(twin)
    return rewritten
