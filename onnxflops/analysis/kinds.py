"""What makes two nodes of an op alike: their attributes, less the values of coefficients.

A node's kind keys the work done once for all its alike nodes (ONNX inference in inference.py,
the counter's outcome and a function body's expansion). A graph whose nodes differ only in a
coefficient (each LeakyRelu its own alpha, each Gemm its own alpha) must not be typed and costed
node by node: ONNX's float attributes are coefficients (alpha, epsilon, a seed, a pad value) that
no ONNX inference function reads, so a kind leaves their values out. Whoever reads such a value
says so (`Node.read_floats`, the counter's `_READS_FLOATS`) and keys on `coefficient_values`.
"""

from __future__ import annotations

import onnx
import onnx.defs

from onnxflops.caches import memoized
from onnxflops.graph import domain_key
from onnxflops.ops import ONNX_DOMAINS

_FLOAT = onnx.AttributeProto.FLOAT


@memoized(4096)
def coefficients(op_type: str, domain: str, opset: int) -> frozenset[str]:
    """Names of the op's FLOAT attributes in its ONNX schema at `opset` (none outside ONNX's
    domains, for Constant, or where ONNX has no schema)."""
    domain = domain_key(domain)
    if domain not in ONNX_DOMAINS or op_type == "Constant":  # its value_float is a value
        return frozenset()
    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
    except (onnx.defs.SchemaError, TypeError, OverflowError):
        return frozenset()
    return frozenset(name for name, a in schema.attributes.items()
                     if a.type == onnx.defs.OpSchema.AttrType.FLOAT)


def attribute_key(proto: onnx.NodeProto, opset: int) -> tuple:
    """The node's attributes as a key: each one's bytes, a coefficient's name and type only."""
    attributes = proto.attribute
    if not attributes:
        return ()
    blind = coefficients(proto.op_type, proto.domain, opset)
    if not blind:
        return tuple([a.SerializeToString() for a in attributes])
    return tuple([(a.name, _FLOAT) if a.type == _FLOAT and a.name in blind
                  else a.SerializeToString() for a in attributes])


def coefficient_values(proto: onnx.NodeProto) -> tuple:
    """The values attribute_key leaves out (every FLOAT attribute's, by name)."""
    return tuple([(a.name, a.f) for a in proto.attribute if a.type == _FLOAT])
