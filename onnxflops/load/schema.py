"""A node against its op's schema, as onnx's checker reads it and onnxruntime refuses it: the
attributes known and of their types, as many inputs and outputs as the op takes. Read by the
load stage for the bodies of local functions (at the function's own opsets) and by analysis for
the graph's nodes (at the model's)."""

from __future__ import annotations

from collections.abc import Iterable

import onnx
import onnx.checker

from onnxflops.errors import OnnxFlopsError, first_line
from onnxflops.graph import GRAPH_ATTRIBUTE_TYPES, NodeRow, holds_subgraph
from onnxflops.ops import HOLDS_SUBGRAPHS

def checker_context(model: onnx.ModelProto,
                    opset_imports: Iterable[onnx.OperatorSetIdProto] | None = None
                    ) -> onnx.checker.C.CheckerContext:
    """onnx's checker context for `model`'s nodes, or for those of a local function of it
    importing `opset_imports` (onnxruntime checks a function's nodes at its own opsets)."""
    context = onnx.checker.C.CheckerContext()
    context.ir_version = model.ir_version or onnx.IR_VERSION
    imports = model.opset_import if opset_imports is None else opset_imports
    context.opset_imports = {o.domain: o.version for o in imports}
    return context


def check_schema(row: NodeRow, context: onnx.checker.C.CheckerContext) -> None:
    """The node fits its op's schema as onnx's checker reads it (attributes known and of their
    types, as many inputs and outputs as the op takes): onnxruntime refuses a model that does
    not. Its bodies are left to validity.py and to inference with the node, which see the
    scope around them."""
    proto, stripped = row.proto, ()
    # Only control flow takes graphs: another op's graph attribute is the checker's to refuse.
    if row.op_type in HOLDS_SUBGRAPHS and proto.attribute and holds_subgraph(proto):
        stripped = [a.name for a in proto.attribute if a.type in GRAPH_ATTRIBUTE_TYPES]
        proto = onnx.NodeProto()
        proto.CopyFrom(row.proto)
        kept = [a for a in proto.attribute if a.type not in GRAPH_ATTRIBUTE_TYPES]
        del proto.attribute[:]
        proto.attribute.extend(kept)
    try:
        onnx.checker.check_node(proto, context)
    except onnx.checker.ValidationError as e:
        message = first_line(e)
        if unknown_op(message) or any(f"'{name}'" in message and "equired" in message
                                      for name in stripped):
            return  # an op newer than the installed onnx, or of a domain it has no schemas of
        raise OnnxFlopsError(f"node {node_label(row)}: {message}") from None


def unknown_op(message: str) -> bool:
    """onnx has no schema of the op: of a custom domain (a rule may cost it), or one it
    deprecated (the op's last schema is still what it means)."""
    return "No Op registered" in message or "is not a registered function/op" in message \
        or "is deprecated in domain_version" in message or "has been deprecated" in message \
        or "No opset import for domain" in message and "com.microsoft" in message


def node_label(row: NodeRow) -> str:
    """A node in an error: its name, else the first tensor it writes."""
    if row.proto.name or not any(row.outputs):
        return f"'{row.proto.name}' ({row.op_type})"
    return f"({row.op_type}) writing '{next(o for o in row.outputs if o)}'"
