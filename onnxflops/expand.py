"""Expand a node of an op that ONNX defines by a function body into a small model of that body.

Costing the expansion makes a fused op (LayerNormalization, Gelu, Softmax, ...) cost exactly what
its decomposed form costs.
"""

from __future__ import annotations

import onnx
import onnx.defs
import onnx.inliner

from onnxflops.errors import Uncostable
from onnxflops.graph import TensorInfo

_LOCAL_DOMAIN = "onnxflops.expansion"


def function_body(op_type: str, domain: str, opset: int, node: onnx.NodeProto,
                  inputs: list[TensorInfo | None]) -> onnx.FunctionProto:
    try:
        schema = onnx.defs.get_schema(op_type, max_inclusive_version=opset or 10_000,
                                      domain=domain)
    except onnx.defs.SchemaError:
        raise Uncostable(f"no ONNX schema for {op_type} at opset {opset}") from None
    if schema.has_context_dependent_function:
        version = _pick(schema.context_dependent_function_opset_versions, opset)
        types = [_type_proto(i).SerializeToString() for i in inputs]
        raw = schema.get_context_dependent_function_with_opset_version(
            version, node.SerializeToString(), types)
        return onnx.FunctionProto.FromString(raw)
    if schema.has_function:
        version = _pick(schema.function_opset_versions, opset)
        body = schema.get_function_with_opset_version(version)
        return body if isinstance(body, onnx.FunctionProto) else onnx.FunctionProto.FromString(body)
    raise Uncostable(f"{op_type} has no function body in ONNX")


def expansion_model(node: onnx.NodeProto, opset: int,
                    inputs: list[TensorInfo | None]) -> onnx.ModelProto:
    """A model whose graph is `node` replaced by its function body, inputs typed as given."""
    domain = "" if node.domain in ("", "ai.onnx") else node.domain
    function = function_body(node.op_type, domain, opset, node, inputs)
    function.domain = _LOCAL_DOMAIN
    function.name = node.op_type
    call = onnx.NodeProto()
    call.CopyFrom(node)
    call.domain = _LOCAL_DOMAIN
    call.ClearField("name")
    graph_inputs = [onnx.helper.make_value_info(name, _type_proto(info))
                    for name, info in zip(node.input, inputs) if name and info is not None]
    graph_outputs = [onnx.helper.make_value_info(name, onnx.TypeProto())
                     for name in node.output if name]
    graph = onnx.helper.make_graph([call], "expansion", graph_inputs, graph_outputs)
    opsets = {o.domain: o.version for o in function.opset_import}
    opsets.setdefault("", opset)
    opsets[_LOCAL_DOMAIN] = 1
    model = onnx.helper.make_model(
        graph, functions=[function],
        opset_imports=[onnx.helper.make_opsetid(d, v) for d, v in opsets.items()])
    return onnx.inliner.inline_local_functions(model)


def _pick(versions, opset: int) -> int:
    versions = sorted(versions)
    eligible = [v for v in versions if v <= opset]
    return eligible[-1] if eligible else versions[0]


def _type_proto(info: TensorInfo | None) -> onnx.TypeProto:
    if info is None:
        return onnx.TypeProto()
    return onnx.helper.make_tensor_type_proto(info.dtype, info.shape)
