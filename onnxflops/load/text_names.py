"""Whether every name of a model's nodes is UTF-8 text, found at protobuf's speed.

onnx.proto is proto2, whose strings protobuf does not validate: a name that is not UTF-8 comes back
as bytes, and reading every name of a 50,000-node graph in Python to find one costs more than
ONNX's whole shape inference. A proto3 message's strings are validated as they are parsed, in C:
the records the reader parses, parsed again as a proto3 shadow of onnx.proto that declares
exactly the node names validate.py checks (the other fields are skipped as unknown), pass or fail
at once. (The names of tensors and graph values it checks one by one: it reads those records
whole anyway.)
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from onnxflops.caches import memoized

# The shadow of onnx.proto, field numbers as there: per message, (field, number, message type or
# None for a string, repeated). Every node name validate.py checks, in every graph it reaches.
_SHADOW = {
    "Model": [("graph", 7, "Graph", False), ("functions", 25, "Function", True)],
    "Function": [("node", 7, "Node", True)],
    "Graph": [("node", 1, "Node", True)],
    "Node": [("input", 1, None, True), ("output", 2, None, True), ("name", 3, None, False),
             ("op_type", 4, None, False), ("attribute", 5, "Attribute", True),
             ("domain", 7, None, False), ("metadata_props", 9, "Entry", True)],
    "Attribute": [("name", 1, None, False), ("g", 6, "Graph", False),
                  ("graphs", 11, "Graph", True)],
    "Entry": [("key", 1, None, False), ("value", 2, None, False)],
}
_PACKAGE = "onnxflops_names"


class NodeNames:
    """Fed the model's records as a reader parses them (each a whole record, or a run of whole
    records of the graph), before protobuf parses them into the model: `text` stays True while
    every node name in them is UTF-8 text, and turns False where one may not be (the check's own
    walk then finds it and names it). Each run is parsed on its own and let go at once, so the
    shadow's copy of the names never sits beside the model's."""

    def __init__(self) -> None:
        self.text = True

    def model_records(self, data: bytes) -> None:
        self._parse("Model", data)

    def graph_records(self, data: bytes) -> None:
        self._parse("Graph", data)

    def _parse(self, message: str, data: bytes) -> None:
        if self.text:
            try:
                _shadow_types()[message].FromString(data)
            except Exception:  # noqa: BLE001 - DecodeError, or a backend's UnicodeDecodeError
                self.text = False


@memoized(1)
def _shadow_types() -> dict[str, type]:
    """The shadow's message classes, by name."""
    field = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(name=f"{_PACKAGE}.proto", package=_PACKAGE,
                                              syntax="proto3")
    for message, fields in _SHADOW.items():
        declared = file.message_type.add(name=message)
        for name, number, of, repeated in fields:
            declared.field.add(
                name=name, number=number,
                label=field.LABEL_REPEATED if repeated else field.LABEL_OPTIONAL,
                type=field.TYPE_MESSAGE if of else field.TYPE_STRING,
                type_name=f".{_PACKAGE}.{of}" if of else None)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {message: message_factory.GetMessageClass(pool.FindMessageTypeByName(
        f"{_PACKAGE}.{message}")) for message in _SHADOW}
