"""TensorFlow TensorLists written outside a loop, as stacks of their items (a GraphDef rewrite).

A `tf.TensorArray` filled by a Python loop (`for t in range(T): out = out.write(t, y_t)`, the
recurrence of RWKV-7's time mixing in keras-hub) is traced as straight-line code: a
TensorListReserve, one TensorListSetItem per step at a constant index, then a TensorListStack.
tf2onnx converts TensorLists only as the carried state of a While loop, and refuses these. Where
every index is a constant the list is a fixed tuple of tensors: stacking it is `Pack` of the
items in index order, reading item i is the tensor written at i. ONNX has no list type, and
those two ops are what tf2onnx converts to ONNX Concat/Unsqueeze and nothing. A list whose
index or size is not a constant, or that is read before each item is written, is left as it is
(and refused by name).
"""

from __future__ import annotations

_WRITES = "TensorListSetItem"


def unrolled_tensor_lists(graph_def) -> int:
    """Rewrite, in `graph_def`'s top-level graph, each TensorListStack of a list that constant
    writes fill completely into `Pack(items, axis=0)`, and each TensorListGetItem at a constant
    index written before into `Identity(item)`; the list ops left unread are removed. Returns
    how many reads were rewritten."""
    nodes = {node.name: node for node in graph_def.node}
    rewritten = 0
    for node in list(graph_def.node):
        if node.op not in ("TensorListStack", "TensorListGetItem"):
            continue
        written = _constant_writes(nodes, node.input[0])
        if written is None:
            continue
        size, items = written
        dtype = node.attr["element_dtype"].type
        if node.op == "TensorListStack":
            if size is None or sorted(items) != list(range(size)):
                continue
            _become(node, "Pack", [items[i] for i in range(size)], dtype)
            node.attr["N"].i = size
            node.attr["axis"].i = 0
        else:
            index = _constant_int(nodes, node.input[1])
            if index is None or index not in items:
                continue
            _become(node, "Identity", [items[index]], dtype)
        rewritten += 1
    if rewritten:
        _drop_unread_list_ops(graph_def)
    return rewritten


def _constant_writes(nodes: dict, handle: str) -> tuple[int | None, dict[int, str]] | None:
    """The list `handle` names, followed back through its writes to where it was reserved: (its
    size, or None where it is not a constant; {index: the tensor last written there}), or None
    where a write's index is not a constant or the list comes from anything but a reserve."""
    items: dict[int, str] = {}
    while True:
        node = nodes.get(_node_name(handle))
        if node is None:
            return None
        if node.op == "Identity":
            handle = node.input[0]
        elif node.op == _WRITES:
            index = _constant_int(nodes, node.input[1])
            if index is None:
                return None
            items.setdefault(index, node.input[2])  # walking back: the first seen is the last write
            handle = node.input[0]
        elif node.op == "TensorListReserve":
            return _constant_int(nodes, node.input[1]), items
        else:
            return None


def _constant_int(nodes: dict, tensor: str) -> int | None:
    """The value of a scalar integer Const `tensor`, or None where it is anything else (a float
    among them)."""
    node = nodes.get(_node_name(tensor))
    if node is None or node.op != "Const":
        return None
    from tensorflow.python.framework import tensor_util

    value = tensor_util.MakeNdarray(node.attr["value"].tensor)
    return int(value) if value.shape == () and value.dtype.kind in "iu" else None


def _become(node, op: str, inputs: list[str], dtype: int) -> None:
    control = [name for name in node.input if name.startswith("^")]
    node.op = op
    del node.input[:]
    node.input.extend(inputs + control)
    for key in list(node.attr):
        del node.attr[key]
    node.attr["T"].type = dtype


def _drop_unread_list_ops(graph_def) -> None:
    """Remove the TensorList ops nothing reads any more, and the constants only they read."""
    ops = {node.name: node.op for node in graph_def.node}
    droppable = {name for name, op in ops.items() if op.startswith("TensorList")}
    while True:
        read = {_node_name(name) for node in graph_def.node for name in node.input}
        unread = [i for i, node in enumerate(graph_def.node)
                  if node.name in droppable and node.name not in read]
        if not unread:
            return
        for i in reversed(unread):
            node = graph_def.node[i]
            droppable.update(_node_name(name) for name in node.input
                             if ops.get(_node_name(name)) == "Const")
            del graph_def.node[i]


def _node_name(tensor: str) -> str:
    return tensor.lstrip("^").split(":")[0]
