"""Expand a node of an op that ONNX defines by a function body into a small model of that body.

Costing the expansion makes a fused op (LayerNormalization, Gelu, Softmax, ...) cost exactly what
its decomposed form costs. A node of an older opset whose version of the op has no body yet (Relu-6,
Softmax-11, Clip-6, ...) is first upgraded by onnx's version converter to the first version that
has one, so it costs what its upgraded form costs.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnx.defs
import onnx.inliner
import onnx.version_converter
from onnx import numpy_helper

from onnxflops.caches import memoized
from onnxflops.errors import Uncostable
from onnxflops.graph import GRAPH_ATTRIBUTE_TYPES, TensorInfo, domain_key, type_proto_of
from onnxflops.ops import ELEMENTWISE

_LOCAL_DOMAIN = "onnxflops.expansion"


def function_body(op_type: str, domain: str, opset: int, node: onnx.NodeProto,
                  inputs: list[onnx.TypeProto]) -> onnx.FunctionProto:
    schema = _schema(op_type, domain, opset)
    if schema.has_context_dependent_function:
        version = _pick(schema.context_dependent_function_opset_versions, opset)
        types = [t.SerializeToString() for t in inputs]
        raw = schema.get_context_dependent_function_with_opset_version(
            version, node.SerializeToString(), types)
        return onnx.FunctionProto.FromString(raw)
    if schema.has_function:
        return _fixed_body(schema, opset)
    raise Uncostable(f"{op_type} has no function body in ONNX")


def _fixed_body(schema: onnx.defs.OpSchema, opset: int) -> onnx.FunctionProto:
    """The op's function body that ONNX defines once, attributes referenced by name (@alpha)."""
    body = schema.get_function_with_opset_version(_pick(schema.function_opset_versions, opset))
    return body if isinstance(body, onnx.FunctionProto) else onnx.FunctionProto.FromString(body)


@memoized(1024)
def coefficients_shape_body(op_type: str, domain: str, opset: int) -> bool:
    """Whether the values of the op's FLOAT attributes (its coefficients) may change what its
    function body costs. False only where ONNX's body is defined once (not built per node) and
    each coefficient sets a Constant, or the coefficient of a nested op of which the same holds,
    whose value then flows only through elementwise ops: LeakyRelu's alpha, Selu's gamma."""
    domain = domain_key(domain)
    schema = _schema_or_none(op_type, domain, opset)
    if schema is None:
        return True
    if not _has_body(schema):
        try:
            opset = _first_version_with_body(op_type, domain, opset)
        except Uncostable:
            return True
        schema = _schema(op_type, domain, opset)
    floats = {name for name, a in schema.attributes.items()
              if a.type == onnx.defs.OpSchema.AttrType.FLOAT}
    if not floats:
        return False
    if schema.has_context_dependent_function or not schema.has_function:
        return True  # a body built from the node may take another form for another value
    body = _fixed_body(schema, opset)
    body_opset = next((o.version for o in body.opset_import if not domain_key(o.domain)), opset)
    tainted: set[str] = set()  # the body's tensors computed from a coefficient
    for node in body.node:
        if any(a.type in GRAPH_ATTRIBUTE_TYPES for a in node.attribute):
            return True  # its subgraph may read a coefficient or a value made from one
        refs = [a for a in node.attribute if a.ref_attr_name in floats]
        if not refs and tainted.isdisjoint(node.input):
            continue
        if domain_key(node.domain):
            return True
        if refs and node.op_type != "Constant" and (
                any(a.type != onnx.AttributeProto.FLOAT for a in refs)
                or coefficients_shape_body(node.op_type, "", body_opset)):
            return True
        # Elementwise ops shape their outputs by broadcast, never by values: a coefficient's
        # value flows through them without shaping any cost.
        if not tainted.isdisjoint(node.input) and node.op_type not in ELEMENTWISE:
            return True
        tainted.update(node.output)
    return False


def expansion_model(node: onnx.NodeProto, opset: int, inputs: list[TensorInfo | None],
                    values: list[np.ndarray | None] | None = None) -> onnx.ModelProto:
    """A model whose graph is `node` replaced by its function body, inputs typed as given.

    Inputs with a known value (`values`) are constants of the body, so what the body computes
    from them alone is folded as it would be in the model.
    """
    values = values or [None] * len(inputs)
    domain = domain_key(node.domain)
    call = onnx.NodeProto()
    call.CopyFrom(node)
    call.domain = domain
    call.ClearField("name")
    graph = _one_node_graph(call, "expansion", inputs, values)
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid(domain, opset)])
    schema = _schema_or_none(node.op_type, domain, opset)
    if schema is None or not _has_body(schema):
        later = _first_version_with_body(node.op_type, domain, opset)
        # An op ONNX did not have yet at this opset is onnxruntime's op of the same name and
        # meaning (LayerNormalization before opset 17): it is that op's first ONNX version.
        model = _upgraded(model, later) if schema is not None else _retargeted(model, later)
        opset = later
    return _inlined(model, node.op_type, domain, opset)


def local_function_model(node: onnx.NodeProto, inputs: list[TensorInfo | None],
                         values: list[np.ndarray | None], model: onnx.ModelProto) -> onnx.ModelProto:
    """A model whose graph is the body of the model-local function `node` calls, inputs typed as
    given (known integer inputs as constants), one level inlined: the calls it makes to other
    local functions stay calls, each analysed in its turn. So a body is analysed once per
    signature it is called with, however many calls of it an inlining would make."""
    call = onnx.NodeProto()
    call.CopyFrom(node)
    call.ClearField("name")
    # Tensors named by position, not as the caller named them: calls alike in every input type
    # make one body model, which analysis then meets once (analyzed_function_body).
    call.input[:] = body_input_names(node)
    call.output[:] = [f"output{i}" if name else "" for i, name in enumerate(node.output)]
    graph = _one_node_graph(call, f"function '{node.op_type}'", inputs, values)
    callee = (node.domain, node.op_type)
    reachable = _reachable_functions(model, callee)
    body = onnx.helper.make_model(graph, opset_imports=model.opset_import,
                                  ir_version=model.ir_version, functions=reachable)
    try:
        inlined = onnx.inliner.inline_selected_functions(body, [callee], exclude=False)
    except Exception as e:  # noqa: BLE001 - the inliner's checks raise several kinds
        raise Uncostable(f"its function body cannot be expanded: "
                         f"{str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}"
                         ) from None
    # The functions the body calls, as the model holds them: a body model is the same bytes
    # whichever call it was made for.
    del inlined.functions[:]
    inlined.functions.extend(f for f in reachable if (f.domain, f.name) != callee)
    return inlined


def body_input_names(node: onnx.NodeProto) -> list[str]:
    """The names a local function's body model (local_function_model) gives the call's inputs."""
    return [f"input{i}" if name else "" for i, name in enumerate(node.input)]


def _one_node_graph(call: onnx.NodeProto, name: str, inputs: list[TensorInfo | None],
                    values: list[np.ndarray | None]) -> onnx.GraphProto:
    """A graph of the one node `call`: its inputs typed as given, those with a known value
    constants, its outputs untyped (inference types them)."""
    graph_inputs = [onnx.helper.make_value_info(i, _type_proto(info))
                    for i, info, value in zip(call.input, inputs, values)
                    if i and info is not None and value is None]
    constants = [numpy_helper.from_array(value, i)
                 for i, value in zip(call.input, values) if i and value is not None]
    graph_outputs = [onnx.helper.make_value_info(o, onnx.TypeProto())
                     for o in call.output if o]
    return onnx.helper.make_graph([call], name, graph_inputs, graph_outputs, constants)


def _reachable_functions(model: onnx.ModelProto, start: tuple[str, str]) -> list[onnx.FunctionProto]:
    """The model's local functions `start` calls, directly or not, itself included, in the
    model's order."""
    functions = {(f.domain, f.name): f for f in model.functions}
    found, stack = {start}, [start]
    while stack:
        function = functions.get(stack.pop())
        graphs = [function.node] if function is not None else []
        while graphs:
            for n in graphs.pop():
                key = (n.domain, n.op_type)
                if key in functions and key not in found:
                    found.add(key)
                    stack.append(key)
                for a in n.attribute:
                    graphs.extend([a.g.node] if a.type == onnx.AttributeProto.GRAPH
                                  else [g.node for g in a.graphs])
    return [f for f in model.functions if (f.domain, f.name) in found]


def _inlined(model: onnx.ModelProto, op_type: str, domain: str, opset: int) -> onnx.ModelProto:
    """`model` with its one node of `op_type` replaced by that op's function body."""
    inferred = onnx.shape_inference.infer_shapes(model)
    graph = inferred.graph
    types = {vi.name: vi.type for vi in list(graph.input) + list(graph.value_info)}
    # Constant inputs too: a context-dependent body (CastLike's) is built from every input's type.
    types.update({t.name: onnx.helper.make_tensor_type_proto(t.data_type, t.dims)
                  for t in graph.initializer})
    call = next(n for n in model.graph.node if n.op_type == op_type and n.domain == domain)
    _add_default_attributes(call, _schema(op_type, domain, opset))
    function = function_body(op_type, domain, opset, call,
                             [types.get(name, onnx.TypeProto()) for name in call.input])
    function.domain = _LOCAL_DOMAIN
    function.name = op_type
    call.domain = _LOCAL_DOMAIN
    opsets = {o.domain: o.version for o in model.opset_import}
    opsets.update({o.domain: o.version for o in function.opset_import})
    opsets[_LOCAL_DOMAIN] = 1
    del model.opset_import[:]
    model.opset_import.extend(onnx.helper.make_opsetid(d, v) for d, v in opsets.items())
    model.functions.append(function)
    return onnx.inliner.inline_local_functions(model)


def _add_default_attributes(node: onnx.NodeProto, schema: onnx.defs.OpSchema) -> None:
    """Spell out omitted attributes: a body's reference to an absent attribute would drop it."""
    present = {a.name for a in node.attribute}
    for name, attr in schema.attributes.items():
        if name not in present and attr.default_value.name:
            node.attribute.append(attr.default_value)


def _upgraded(model: onnx.ModelProto, opset: int) -> onnx.ModelProto:
    try:
        return onnx.version_converter.convert_version(model, opset)
    except (RuntimeError, ValueError) as e:
        raise Uncostable(f"cannot upgrade to opset {opset}, whose version of the op has a "
                         f"function body: {str(e).strip().splitlines()[0]}") from None


def _retargeted(model: onnx.ModelProto, opset: int) -> onnx.ModelProto:
    del model.opset_import[:]
    model.opset_import.append(onnx.helper.make_opsetid("", opset))
    return model


def _schema(op_type: str, domain: str, opset: int) -> onnx.defs.OpSchema:
    schema = _schema_or_none(op_type, domain, opset)
    if schema is None:
        raise Uncostable(f"no ONNX schema for {op_type} at opset {opset}")
    return schema


def _schema_or_none(op_type: str, domain: str, opset: int) -> onnx.defs.OpSchema | None:
    try:
        return onnx.defs.get_schema(op_type, max_inclusive_version=opset or 10_000, domain=domain)
    except onnx.defs.SchemaError:
        return None


def _has_body(schema: onnx.defs.OpSchema) -> bool:
    return schema.has_function or schema.has_context_dependent_function


def _first_version_with_body(op_type: str, domain: str, opset: int) -> int:
    later = [s.since_version for s in onnx.defs.get_all_schemas_with_history()
             if s.name == op_type and s.domain == domain and s.since_version > opset
             and _has_body(s)]
    if not later or domain:
        raise Uncostable(f"{op_type} has no function body in ONNX")
    return min(later)


def _pick(versions, opset: int) -> int:
    versions = sorted(versions)
    eligible = [v for v in versions if v <= opset]
    return eligible[-1] if eligible else versions[0]


def _type_proto(info: TensorInfo | None) -> onnx.TypeProto:
    if info is None:
        return onnx.TypeProto()
    return type_proto_of(info)
