"""Integer inputs that ONNX takes as int64 alone, cast to it after the dynamo exporter.

torch indexes with int32 tensors as well as int64 ones (istft's overlap-add scatters its frames
by an int32 `arange`), and torchlib hands such an index on unchanged to an ONNX input whose
schema allows int64 only (ScatterND's and GatherND's `indices`): a graph that ONNX's inference
and onnxruntime refuse. Which inputs allow int64 alone is read from each op's schema
(`onnx.defs`), and where a narrower integer arrives there a Cast to int64 is put before it: the
same indices, so the same model, and one onnxruntime loads.

The exporter types the values of torch's graph but not those made inside a translation (the
Concat of Unsqueezes that makes ScatterND's index tensor): such a value's type is inferred back
along its producers by ONNX's own per-node inference, until values the exporter typed.
"""

from __future__ import annotations

import functools

import onnx

INT64 = "tensor(int64)"
_INTEGERS = {onnx.TensorProto.INT8, onnx.TensorProto.INT16, onnx.TensorProto.INT32,
             onnx.TensorProto.UINT8, onnx.TensorProto.UINT16, onnx.TensorProto.UINT32,
             onnx.TensorProto.UINT64}  # the integers narrower than, or other than, int64


def cast_to_int64_where_only_int64(model) -> int:
    """Put a Cast to int64 before each input (of an onnx_ir model's nodes, subgraphs' too) that
    its op's schema allows as int64 alone and that holds another integer type; how many it put.
    The graph names the new nodes and values (onnx_ir's naming on insertion)."""
    from onnx_ir import DataType, node as ir_node, traversal

    opsets = dict(model.opset_imports)
    known: dict = {}  # value → its inferred element type, for the producers shared
    cast = 0
    for node in list(traversal.RecursiveGraphIterator(model.graph)):
        only_int64 = _only_int64_inputs(node.domain, node.op_type, opsets.get(node.domain or ""))
        for i, value in enumerate(node.inputs):
            if value is None or not only_int64(i) or _dtype(value, opsets, known) not in _INTEGERS:
                continue
            as_int64 = ir_node("Cast", [value], attributes={"to": DataType.INT64})
            as_int64.outputs[0].dtype = DataType.INT64
            as_int64.outputs[0].shape = value.shape
            node.graph.insert_before(node, as_int64)
            node.replace_input_with(i, as_int64.outputs[0])
            cast += 1
    return cast


@functools.cache
def _only_int64_inputs(domain: str, op_type: str, version: int | None):
    """i → whether input i of the op allows int64 alone (a variadic last input stands for the
    rest), by its schema at `version`; never, for an op ONNX does not define."""
    try:
        schema = onnx.defs.get_schema(op_type, version or onnx.defs.onnx_opset_version(),
                                      domain or "")
    except onnx.defs.SchemaError:
        return lambda i: False
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    only = [allowed.get(p.type_str, {p.type_str}) == {INT64} for p in schema.inputs]
    return lambda i: bool(only) and only[min(i, len(only) - 1)]


def _dtype(value, opsets: dict, known: dict, depth: int = 8):
    """The ONNX element type of an onnx_ir value: the exporter's where it gave one, else ONNX's
    inference of its producer from the producer's inputs' types (None where unknown)."""
    if value.dtype is not None:
        return int(value.dtype)
    if value not in known:
        known[value] = _inferred_dtype(value, opsets, known, depth)
    return known[value]


def _inferred_dtype(value, opsets: dict, known: dict, depth: int):
    """ONNX's inference of the type of `value` from its producer's inputs' types."""
    producer = value.producer()
    if producer is None or depth == 0:
        return None
    from onnx_ir import serde

    types = {}
    for source in producer.inputs:
        if source is None:
            continue
        elem_type = _dtype(source, opsets, known, depth - 1)
        if elem_type is None:
            return None
        types[source.name] = onnx.helper.make_tensor_type_proto(elem_type, None)
    try:
        schema = onnx.defs.get_schema(producer.op_type, opsets.get(producer.domain or "", 1),
                                      producer.domain or "")
        found = onnx.shape_inference.infer_node_outputs(
            schema, serde.serialize_node(producer), types,
            opset_imports=[onnx.helper.make_opsetid(d, v) for d, v in opsets.items()])
    except Exception:  # noqa: BLE001 - an op inference cannot type: the value stays unknown
        return None
    found_type = found.get(value.name)
    return found_type.tensor_type.elem_type if found_type is not None else None
