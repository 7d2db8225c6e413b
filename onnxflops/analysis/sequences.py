"""Ops on sequences typed element by element, where the split sizes and positions are known.

ONNX's inference gives a sequence one element type for all its elements, so a SplitToSequence
into unequal parts leaves the split dim unknown, and so does every SequenceAt and
ConcatFromSequence after it. Here each sequence-valued tensor keeps the type of each of its
elements (GraphView.sequences), from which the tensors taken out of it are typed exactly.
"""

from __future__ import annotations

import numpy as np
import onnx

from onnxflops.graph import MAX_VALUE_ELEMENTS, GraphView, NodeRow, TensorInfo, ValueInfo


Elements = tuple[TensorInfo, ...]
# A split into more parts stays untyped: what is held never grows with a number read from a file.
MAX_PARTS = MAX_VALUE_ELEMENTS


def type_sequence_op(view: GraphView, row: NodeRow) -> bool:
    """Type a sequence op's output (a sequence's elements, or a tensor) where its inputs' types
    and the values it reads are known. True where it was typed."""
    proto, op_type, _, inputs, outputs = row
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in proto.attribute}
    out = outputs[0] if outputs else ""
    if not out:
        return False
    try:
        typed = _RULES[op_type](view, inputs + [""] * 3, attrs)
    except (ArithmeticError, LookupError, TypeError, ValueError):
        typed = None  # a broken file's node: left to ONNX's inference, and reported after it
    if typed is None:
        return False
    if isinstance(typed, TensorInfo):
        view.tensors[out] = typed.renamed(out)
        if op_type == "SequenceLength":
            view.values[out] = np.array(len(view.sequences[inputs[0]]), dtype=np.int64)
    else:
        view.sequences[out] = typed
        if typed or op_type == "SequenceEmpty":
            view.tensors[out] = sequence_info(out, typed, attrs.get("dtype", onnx.TensorProto.FLOAT))
        if op_type == "SplitToSequence" and len(inputs) > 1 and inputs[1] \
                and view.value(inputs[1]) is None:
            view.routed[out] = (f"{len(typed)} parts whose sizes are data (a router's tokens per "
                                "expert), typed as even shares of the axis they split")
    return True


def sequence_info(name: str, elements: Elements, dtype: int | None = None) -> ValueInfo:
    """A sequence's type as ONNX writes it: its elements' dtype (`dtype` where it has none),
    and their shape where alike."""
    shapes = {e.shape for e in elements}
    element = onnx.helper.make_tensor_type_proto(elements[0].dtype if elements else dtype,
                                                 next(iter(shapes)) if len(shapes) == 1 else None)
    return ValueInfo(name, onnx.helper.make_sequence_type_proto(element))


def sequence_bytes(view: GraphView, row: NodeRow) -> tuple[int, int]:
    """Bytes a sequence op reads and writes through its sequences, beyond its tensors': a
    sequence's bytes are its elements'; SequenceAt reads only the element it takes, and
    SequenceLength no element."""
    def total(name: str) -> int:
        elements = view.sequence(name) if name else None
        return sum(e.nbytes for e in elements) if elements else 0

    if row.op_type == "SequenceLength":
        read = 0
    elif row.op_type == "SequenceAt":
        info = view.info(row.outputs[0])
        read = info.nbytes if info is not None and info.known else 0
    else:
        read = sum(total(name) for name in row.inputs)
    return read, sum(total(name) for name in row.outputs)


def axis_from_front(axis: int, rank: int) -> int | None:
    """A valid axis counted from the front, or None (a broken file's: the output stays unknown)."""
    return axis % rank if -rank <= axis < rank else None


def _elements(view: GraphView, name: str) -> Elements | None:
    found = view.sequence(name) if name else None
    return found if found is not None and all(e.concrete for e in found) else None


def _position(view: GraphView, name: str, length: int, default: int) -> int | None:
    """A position read from a tensor (default where absent), negative from the end; None where
    unknown or out of range."""
    if not name:
        return default
    value = view.value(name)
    if value is None or value.size != 1:
        return None
    position = int(value.reshape(()))
    position += length if position < 0 else 0
    return position if 0 <= position <= length else None


def _tensor(view: GraphView, name: str) -> TensorInfo | None:
    info = view.info(name) if name else None
    return info if info is not None and info.concrete else None


def _split(view: GraphView, inputs: list[str], attrs: dict) -> Elements | None:
    """SplitToSequence: parts of the split sizes; one per index (the axis kept or not) without."""
    x = _tensor(view, inputs[0])
    if x is None:
        return None
    axis = axis_from_front(attrs.get("axis", 0), len(x.shape))
    if axis is None:
        return None
    length = x.shape[axis]
    if inputs[1]:
        split = view.value(inputs[1])
        if split is None:
            return _even_shares(view, inputs[1], x, axis)
        if split.ndim == 0:
            size = int(split)
            if size <= 0 or -(-length // size) > MAX_PARTS:
                return None
            sizes = [size] * (length // size) + ([length % size] if length % size else [])
        else:
            sizes = [int(s) for s in split]
            if sum(sizes) != length or min(sizes, default=0) < 0:
                return None
        return tuple(_with_dim(x, axis, s) for s in sizes)
    if length > MAX_PARTS:
        return None
    keep = attrs.get("keepdims", 1)
    part = _with_dim(x, axis, 1) if keep else TensorInfo(
        "", x.dtype, x.shape[:axis] + x.shape[axis + 1:])
    return (part,) * length


def _even_shares(view: GraphView, split_name: str, x: TensorInfo, axis: int) -> Elements | None:
    """SplitToSequence by sizes that are data (a router's tokens per expert): k parts of near-equal
    shares of the axis (even_share: L//k, the last the rest), which sum to its L as the real
    sizes do.

    Work linear in a part's rows (each expert's products) then totals exactly what any split
    costs; the parts are recorded in GraphView.routed, so that the count labels them.
    """
    split = _tensor(view, split_name)
    if split is None or len(split.shape) != 1 or not 0 < split.shape[0] <= MAX_PARTS:
        return None
    parts, length = split.shape[0], x.shape[axis]
    return tuple(_with_dim(x, axis, even_share(length, parts, i)) for i in range(parts))


def even_share(length, parts: int, index: int):
    """Part `index` of `length` (an int, or a sympy expression of the symbols) cut into `parts`
    near-equal shares: ⌊length / parts⌋ for each but the last, the last the rest,
    length − (parts − 1)·⌊length / parts⌋. The shares sum to length term by term, so a sum of
    them (the parts joined back) simplifies to length where it is symbolic too."""
    if isinstance(length, (int, np.integer)):
        base = int(length) // parts
    else:
        import sympy

        base = sympy.floor(length / parts)
    return base if index < parts - 1 else length - (parts - 1) * base


def _construct(view: GraphView, inputs: list[str], attrs: dict) -> Elements | None:
    infos = [_tensor(view, name) for name in inputs if name]
    return None if any(i is None for i in infos) else tuple(infos)


def _empty(view: GraphView, inputs: list[str], attrs: dict) -> Elements:
    return ()


def _insert(view: GraphView, inputs: list[str], attrs: dict) -> Elements | None:
    elements, tensor = _elements(view, inputs[0]), _tensor(view, inputs[1])
    if elements is None or tensor is None:
        return None
    at = _position(view, inputs[2], len(elements), len(elements))
    return None if at is None else elements[:at] + (tensor,) + elements[at:]


def _erase(view: GraphView, inputs: list[str], attrs: dict) -> Elements | None:
    elements = _elements(view, inputs[0])
    if not elements:
        return None
    at = _position(view, inputs[1], len(elements), len(elements) - 1)
    return None if at is None or at == len(elements) else elements[:at] + elements[at + 1:]


def _at(view: GraphView, inputs: list[str], attrs: dict) -> TensorInfo | None:
    elements = _elements(view, inputs[0])
    if not elements:
        return None
    at = _position(view, inputs[1], len(elements), 0)
    return None if at is None or at == len(elements) else elements[at]


def _length(view: GraphView, inputs: list[str], attrs: dict) -> TensorInfo | None:
    if _elements(view, inputs[0]) is None:
        return None
    return TensorInfo("", onnx.TensorProto.INT64, ())


def _concat(view: GraphView, inputs: list[str], attrs: dict) -> TensorInfo | None:
    """ConcatFromSequence: the elements joined along `axis`, or stacked on a new one."""
    elements = _elements(view, inputs[0])
    if not elements:
        return None
    first = elements[0]
    if attrs.get("new_axis", 0):
        axis = axis_from_front(attrs.get("axis", 0), len(first.shape) + 1)
        if axis is None or any(e.shape != first.shape for e in elements):
            return None
        return TensorInfo("", first.dtype, first.shape[:axis] + (len(elements),)
                          + first.shape[axis:])
    axis = axis_from_front(attrs.get("axis", 0), len(first.shape))
    if axis is None:
        return None
    rest = [e.shape[:axis] + e.shape[axis + 1:] for e in elements]
    if any(r != rest[0] or len(e.shape) != len(first.shape) for r, e in zip(rest, elements)):
        return None
    return _with_dim(first, axis, sum(e.shape[axis] for e in elements))


def _with_dim(info: TensorInfo, axis: int, size: int) -> TensorInfo:
    return TensorInfo("", info.dtype, info.shape[:axis] + (size,) + info.shape[axis + 1:])


_RULES = {"SplitToSequence": _split, "SequenceConstruct": _construct, "SequenceEmpty": _empty,
          "SequenceInsert": _insert, "SequenceErase": _erase, "SequenceAt": _at,
          "SequenceLength": _length, "ConcatFromSequence": _concat}
