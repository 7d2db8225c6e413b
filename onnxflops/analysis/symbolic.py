"""Symbolic dims: dims left unbound stay symbols, and the counts become formulas in them.

A symbolic dim travels through the model as a dim_param marked with '$': '$batch' for an input dim
left unbound, '$4*batch' or '$batch*seq' for a dim computed from them. ONNX shape inference carries
such names through most ops unchanged; the shape arithmetic it cannot fold (a Reshape to a shape
computed from Shape, Gather, Mul and Concat, as every exporter writes attention) is evaluated here
on sympy expressions. `TensorInfo.dims` turns marked dims into sympy expressions, so the cost rules'
plain arithmetic gives formulas. sympy is imported only when a model has symbolic dims.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np
import onnx
import onnx.numpy_helper

from onnxflops.analysis.sequences import MAX_PARTS, even_share
from onnxflops.analysis.values import SYMBOLIC, VALUES, Operands, Symbolic, Unknown, interpret
from onnxflops.dims import INT64_MAX, SYMBOL_MARK, is_symbolic, to_dim, to_expr
from onnxflops.graph import GraphView, is_standard_domain
from onnxflops.ops import BROADCASTING, REDUCTIONS, SHAPE_KEEPING

# Each round runs ONNX inference once; a transformer needs about two (one per level of shape
# arithmetic that depends on an earlier computed shape).
_MAX_ROUNDS = 64
# The size bound of a dim's expression: shape arithmetic whose expressions double at each node
# (x*x, then that times itself, ...) would grow past any time and memory. A dim whose expression
# is longer than this, or holds a number or a power no tensor's dim can, stays unknown.
MAX_EXPRESSION_CHARS = 200
_MAX_POWER = 64  # 2**64 elements along a dim: no tensor holds them


def has_symbolic_inputs(model: onnx.ModelProto) -> bool:
    return any(d.dim_param.startswith(SYMBOL_MARK) for vi in model.graph.input
               for d in vi.type.tensor_type.shape.dim)


def resolve_shapes(model: onnx.ModelProto, inferred: onnx.ModelProto,
                   infer: Callable[[onnx.ModelProto], onnx.ModelProto],
                   warnings: list[str] | None = None) -> onnx.ModelProto:
    """`inferred` (`model` after ONNX inference) completed by shape arithmetic on the symbols.

    Each round evaluates the shape arithmetic of the top-level graph on sympy values, records the
    output shapes of the nodes it decides (Reshape, Expand, ConstantOfShape, Tile, Range, Slice,
    Conv, pooling, Flatten, Concat) and runs ONNX inference on `model` again with all shapes
    recorded so far, so that they reach the tensors downstream, until no new shape is found.
    """
    written: dict[str, tuple] = {}
    dtypes: dict[str, int] = {}
    too_large: dict[str, str] = {}  # tensor -> the expression its value or a dim would have had
    for _ in range(_MAX_ROUNDS):
        view = GraphView(inferred.graph)
        found = {name: dims for name, dims in _computed_shapes(view, too_large).items()
                 if written.get(name) != dims}
        if not found:
            break
        written.update(found)
        dtypes.update({name: view.info(name).dtype for name in found if view.info(name)})
        # From `model`, not `inferred`: names inference made up for unknown dims would stick.
        inferred = infer(_with_shapes(model, written, dtypes))
    if too_large and warnings is not None:
        name, expression = next(iter(too_large.items()))
        warnings.append(f"{len(too_large)} tensor(s) of shape arithmetic left unknown, their "
                        f"symbolic expressions too large (over {MAX_EXPRESSION_CHARS} characters, "
                        f"or a number no dim can be): first '{name}', {expression}")
    return inferred


def concrete_values(view: GraphView) -> dict[str, np.ndarray]:
    """The integer values of shape arithmetic that no symbol reaches (a head size read off a
    shape whose other dims are symbols)."""
    values = _ShapeValues(view)
    for node in view.graph.node:
        if is_standard_domain(node.domain):
            _try(values.evaluate, node)
    return {name: np.array(v.tolist(), dtype=np.int64) for name, v in values.values.items()
            if _is_integer_tensor(view, name) and all(isinstance(x, (int, np.integer))
                                                      for x in v.flat)}


def _is_integer_tensor(view: GraphView, name: str) -> bool:
    info = view.info(name)
    return info is not None and info.dtype in (onnx.TensorProto.INT64, onnx.TensorProto.INT32)


def _with_shapes(model: onnx.ModelProto, shapes: dict[str, tuple],
                 dtypes: dict[str, int]) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = copy.graph
    entries = {vi.name: vi for vi in list(graph.value_info) + list(graph.output)}
    for name, dims in shapes.items():
        vi = entries.get(name)
        if vi is None:
            vi = graph.value_info.add(name=name)
        tt = vi.type.tensor_type
        tt.elem_type = tt.elem_type or dtypes.get(name, 0)
        old = list(tt.shape.dim) if tt.HasField("shape") else []
        tt.ClearField("shape")
        tt.shape.SetInParent()
        for axis, d in enumerate(dims):
            dim = tt.shape.dim.add()
            if isinstance(d, int):
                dim.dim_value = d
            elif isinstance(d, str):
                dim.dim_param = d
            elif axis < len(old) and len(old) == len(dims):
                dim.CopyFrom(old[axis])
    return copy


def _computed_shapes(view: GraphView, too_large: dict[str, str] | None = None) -> dict[str, tuple]:
    """Shapes of the tensors that ONNX inference left unknown and the arithmetic gives;
    `too_large` is told the tensors whose expressions went past the size bound."""
    values = _ShapeValues(view, too_large)
    found: dict[str, tuple] = {}
    for node in view.graph.node:
        if not is_standard_domain(node.domain):
            continue
        _try(values.evaluate, node)
        out = node.output[0] if node.output else ""
        info = view.info(out) if out else None
        if out and (info is None or not info.known) and node.op_type in _SHAPE_OF:
            dims = _try(_SHAPE_OF[node.op_type], node, values)
            if dims is not None:
                dims = [values.bounded(out, d) for d in dims]
            if dims is not None and any(d is not None for d in dims):
                alike = node.output if node.op_type in _OUTPUTS_ALIKE else [out]
                for name in filter(None, alike):
                    found[name] = tuple(to_dim(d) for d in dims)
                    values.found[name] = tuple(dims)  # for the nodes downstream, this round
    return found


def _try(fn: Callable, *args) -> Any:
    """`fn(*args)`, or None for shape arithmetic this evaluator does not follow (it stays unknown)."""
    try:
        return fn(*args)
    except (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError):
        return None


class _ShapeValues:
    """Values of small tensors computed from shapes: object arrays of numbers, sympy or None."""

    def __init__(self, view: GraphView, too_large: dict[str, str] | None = None):
        self.view = view
        self.values: dict[str, np.ndarray] = {}
        self.found: dict[str, tuple] = {}  # shapes computed here that the view does not have yet
        self.too_large = {} if too_large is None else too_large

    def get(self, name: str) -> np.ndarray | None:
        if not name:
            return None
        if name in self.values:
            return self.values[name]
        constant = self.view.value(name)
        if constant is None or constant.dtype.kind not in "iubf":
            return None
        return constant.astype(object)

    def shape(self, name: str) -> tuple | None:
        if name in self.found:
            return self.found[name]
        info = self.view.info(name)
        if info is None or info.shape is None:
            return None
        return tuple(d if isinstance(d, int) else to_expr(d) if is_symbolic(d) else None
                     for d in info.shape)

    def evaluate(self, node: onnx.NodeProto) -> None:
        op = VALUES.get(node.op_type)
        if op is None or not op.backends & SYMBOLIC or not node.output \
                or self.view.value(node.output[0]) is not None:
            return
        info = self.view.info(node.output[0])
        backend = Symbolic(self.shape, None if info is None else info.dtype)
        value = np.asarray(interpret(op, backend, Operands(node.input, self.operand), _attrs(node)),
                           dtype=object)
        flat = [self.bounded(node.output[0], x) for x in value.flat]
        self.values[node.output[0]] = np.array(flat + [None], dtype=object)[:-1].reshape(value.shape)

    def operand(self, name: str) -> np.ndarray:
        value = self.get(name)
        if value is None:
            raise Unknown(name)
        return value

    def bounded(self, name: str, x: Any) -> Any:
        """`x`, or None (unknown) where it is too large to be a dim (MAX_EXPRESSION_CHARS)."""
        why = _too_large(x)
        if why is None:
            return x
        self.too_large.setdefault(name, why)
        return None


def _too_large(x: Any) -> str | None:
    """Why `x` is no dim's value or expression; None where it may be one."""
    if x is None or isinstance(x, (float, np.integer, np.floating)):
        return None
    if isinstance(x, int):
        return None if x.bit_length() < 64 else f"a number of {x.bit_length()} bits"
    import sympy

    if not isinstance(x, sympy.Basic):
        return None
    if x.is_Integer:
        bits = int(x).bit_length()
        return None if bits < 64 else f"a number of {bits} bits"
    text = str(x) if len(x.args) < MAX_EXPRESSION_CHARS else ""
    if not text or len(text) > MAX_EXPRESSION_CHARS:
        return f"an expression of over {MAX_EXPRESSION_CHARS} characters"
    for number in x.atoms(sympy.Integer):
        if abs(int(number)) > INT64_MAX:
            return f"{text[:60]}...: a number of {int(number).bit_length()} bits"
    for power in x.atoms(sympy.Pow):
        if power.exp.is_Number and abs(power.exp) > _MAX_POWER:
            return f"a power of {power.exp}"
    return None


def _attrs(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _ints(values: _ShapeValues, name: str) -> list[int] | None:
    v = values.get(name)
    if v is None or not all(isinstance(x, (int, np.integer)) for x in v.flat):
        return None
    return [int(x) for x in v.flat]


def _axes(node: onnx.NodeProto, values: _ShapeValues) -> list[int] | None:
    if len(node.input) > 1 and node.input[1]:
        return _ints(values, node.input[1])
    return _attrs(node).get("axes")


# --- output shapes -------------------------------------------------------------------------------

def _reshape_shape(node: onnx.NodeProto, values: _ShapeValues) -> list | None:
    data, target = values.shape(node.input[0]), values.get(node.input[1])
    if target is None:
        return None
    allow_zero = _attrs(node).get("allowzero", 0)
    dims = [data[i] if data is not None and i < len(data) and _equals(d, 0) and not allow_zero
            else d for i, d in enumerate(target.flat)]
    if any(_equals(d, -1) for d in dims):
        known = [d for d in dims if not _equals(d, -1)]
        if data is None or None in data or None in known:
            return [None if _equals(d, -1) else d for d in dims]
        import sympy

        inferred = sympy.Integer(1) * math.prod(data) / math.prod(known)
        dims[[_equals(d, -1) for d in dims].index(True)] = inferred
    return _count_kept(data, dims)


def _count_kept(data: list | None, dims: list) -> list:
    """A Reshape's target with its one bounded dim (a formula of Min or Max: GPT-Neo's
    min(2048, prompt), the position table's bound) as numel(data) / Π other dims where that is
    free of them: a Reshape keeps the element count, so wherever the model runs the two agree."""
    import sympy

    bounded = [i for i, d in enumerate(dims)
               if isinstance(d, sympy.Basic) and d.has(sympy.Min, sympy.Max)]
    if data is None or None in data or None in dims or len(bounded) != 1:
        return dims
    others = math.prod(d for i, d in enumerate(dims) if i != bounded[0])
    count = sympy.cancel(sympy.Integer(1) * math.prod(data) / others)
    if not count.has(sympy.Min, sympy.Max) and count.is_polynomial() \
            and _same(count, dims[bounded[0]]) is None:
        dims = list(dims)
        dims[bounded[0]] = count
    return dims


def _expand_shape(node: onnx.NodeProto, values: _ShapeValues) -> list | None:
    data, target = values.shape(node.input[0]), values.get(node.input[1])
    if data is None or target is None:
        return None
    return _broadcast(list(data), list(target.flat))


def _broadcast(a: list, b: list) -> list:
    rank = max(len(a), len(b))
    a, b = [1] * (rank - len(a)) + a, [1] * (rank - len(b)) + b
    return [y if _equals(x, 1) else x if _equals(y, 1) else _broadcast_dim(x, y)
            for x, y in zip(a, b)]


def _broadcast_dim(x, y):
    """The dim two broadcast dims, neither 1, stand for: their one formula (_same); else, where
    one is bounded by a number c (a formula of Min or Max: GPT-Neo's Min(2048, prompt), MPT's
    2048 − Max(0, 2048 − prompt), a mask or bias sliced from a table of c positions) and the
    other is free of bounds and equal to it wherever it is ≤ c, the free one: a broadcast that
    runs has equal dims, so the model runs there; None otherwise."""
    same = _same(x, y)
    if same is not None or isinstance(x, (int, np.integer)) or isinstance(y, (int, np.integer)):
        return same
    import sympy

    if x is None or y is None:
        return None
    x, y = sympy.sympify(x), sympy.sympify(y)
    for bounded, free in ((x, y), (y, x)):
        if bounded.has(sympy.Min, sympy.Max) and not free.has(sympy.Min, sympy.Max):
            bound = max((abs(int(n)) for n in bounded.atoms(sympy.Integer)), default=0)
            symbols = sorted(bounded.free_symbols | free.free_symbols, key=str)
            trials = [dict.fromkeys(symbols, p) for p in _breakpoints(bounded, free)]
            trials = [at for at in trials if free.subs(at) <= bound]
            if symbols and trials and all((bounded - free).subs(at) == 0 for at in trials):
                return free
    return None


def _same(x, y):
    """The one dim two equal formulas stand for (the simpler), None where they differ.

    A window's length reaches a broadcast written two ways: Min(31, context) by the mask's
    arithmetic, context − Max(0, context − 31) by the cache's slice. sympy does not simplify
    one into the other, so formulas of Min, Max and sums are compared at every point where a
    piece may start: each constant in them, one either side, their pairwise sums, and far out.
    """
    if x is None or y is None:
        return None
    if x == y:
        return x
    if isinstance(x, (int, np.integer)) and isinstance(y, (int, np.integer)):
        return None
    import sympy

    x, y = sympy.sympify(x), sympy.sympify(y)
    symbols = sorted(x.free_symbols | y.free_symbols, key=str)
    if len(symbols) > _MAX_COMPARED_SYMBOLS or sympy.count_ops(x) + sympy.count_ops(y) > 200:
        return None
    points = _breakpoints(x, y)
    rng = np.random.default_rng(len(points))
    trials = [dict(zip(symbols, values)) for values in
              ([p] * len(symbols) for p in points)]
    trials += [dict(zip(symbols, rng.choice(points, len(symbols)).tolist())) for _ in range(64)]
    difference = x - y
    if any(difference.subs(at) != 0 for at in trials):
        return None
    return x if sympy.count_ops(x) <= sympy.count_ops(y) else y


_MAX_COMPARED_SYMBOLS = 4


def _breakpoints(*exprs) -> list[int]:
    import sympy

    constants = {abs(int(n)) for e in exprs for n in e.atoms(sympy.Integer)}
    sums = {a + b for a in constants for b in constants}
    around = {p + d for p in constants | sums for d in (-1, 0, 1)}
    return sorted(p for p in around | {1, 2, 3, 1_000, 1_000_003} if p >= 1)



def _constant_of_shape_shape(node: onnx.NodeProto, values: _ShapeValues) -> list | None:
    target = values.get(node.input[0])
    return None if target is None else list(target.flat)


def _tile_shape(node: onnx.NodeProto, values: _ShapeValues) -> list | None:
    data, repeats = values.shape(node.input[0]), values.get(node.input[1])
    if data is None or repeats is None:
        return None
    return [None if d is None or r is None else d * r for d, r in zip(data, repeats.flat)]


def _range_shape(node: onnx.NodeProto, values: _ShapeValues) -> list | None:
    import sympy

    start, limit, delta = (values.get(i) for i in node.input)
    if start is None or limit is None or delta is None or None in (start.item(), limit.item(),
                                                                    delta.item()):
        return None
    length = sympy.sympify(limit.item() - start.item()) / delta.item()
    return [sympy.Max(sympy.ceiling(length), 0)]


def _slice_shape(node: onnx.NodeProto, values: _ShapeValues) -> list | None:
    """Slices with bounds computed from symbols, assumed within the dim (as exporters write them);
    a stepped slice keeps ceil((end − start) / step) elements (every other channel: step 2)."""
    import sympy

    data = values.shape(node.input[0])
    starts, ends = values.get(node.input[1]), values.get(node.input[2])
    if data is None or starts is None or ends is None:
        return None
    rank = len(data)
    axes = _ints(values, node.input[3]) if len(node.input) > 3 and node.input[3] else \
        list(range(len(starts)))
    steps = _ints(values, node.input[4]) if len(node.input) > 4 and node.input[4] else \
        [1] * len(starts)
    if axes is None or steps is None or 0 in steps:
        return None
    dims = list(data)
    for axis, start, end, step in zip(axes, starts.flat, ends.flat, steps):
        dim = data[axis % rank]
        if step < 0:
            dims[axis % rank] = _reversed_slice_length(start, end, step, dim)
            continue
        if _is_last(start, end) and dim is not None:
            # The last n of a symbolic dim, as a windowed cache keeps them: Min(n, dim), the
            # form the window's own mask arithmetic (a Min of the context) takes.
            dims[axis % rank] = _simplified(sympy.Min(-int(start), dim))
            continue
        start, end = _bound(start, dim), _bound(end, dim)
        length = None if start is None or end is None else end - start
        if length is not None and step != 1:
            length = _simplified(sympy.ceiling(sympy.sympify(length) / step))
        dims[axis % rank] = length
    return dims


def _is_last(start, end) -> bool:
    """Whether a slice is x[-n:] (a negative start, to the end)."""
    return (isinstance(start, (int, np.integer)) and start < 0
            and isinstance(end, (int, np.integer)) and end >= INT64_MAX // 2)


def _reversed_slice_length(start, end, step: int, dim) -> int | None:
    """A slice walking backwards over a known dim: ONNX clamps start to [0, dim − 1] and end to
    [−1, dim − 1], and keeps ceil((start − end) / −step) elements, none if start ≤ end."""
    if not all(isinstance(x, (int, np.integer)) for x in (start, end, dim)):
        return None
    start = min(max(start + dim if start < 0 else start, 0), dim - 1)
    end = min(max(end + dim if end < 0 else end, -1), dim - 1)
    return max(-(-(start - end) // -step), 0)


def _bound(index, dim):
    """A slice bound as a position in a dim of size `dim`: negatives (numbers, or expressions of
    positive symbols that are negative: −prompt) count from the end, and both clamp to the dim
    as ONNX does, so the last 31 of a symbolic cache keep context − Max(0, context − 31)
    elements (min(context, 31)), not 31."""
    import sympy

    if index is None:
        return None
    if isinstance(index, (int, np.integer)):
        if index >= INT64_MAX // 2:
            return dim
        if index < 0:
            return None if dim is None else _simplified(sympy.Max(dim + index, 0))
        return index if dim is None else _simplified(sympy.Min(index, dim))
    if getattr(index, "is_negative", None) and dim is not None:
        # x[-n:] with n a symbol (LFM3 keeps the last `prompt` of its convolution's output):
        # from the end, as a number is
        return _simplified(sympy.Max(dim + index, 0))
    return index


def _simplified(value):
    return int(value) if value.is_Integer else value


def _pad_shape(node: onnx.NodeProto, values: _ShapeValues) -> list | None:
    """Pad: each padded axis d + begin + end (a negative pad crops), the pads [begin per axis,
    then end per axis] over `axes` (opset 18) or every axis: LFM's short convolution keeps
    its state by padding the prompt by kernel − prompt, d = prompt + 7 − prompt = 7."""
    data = values.shape(node.input[0])
    pads = values.get(node.input[1]) if len(node.input) > 1 and node.input[1] else None
    if data is None:
        return None
    flat = list(pads.flat) if pads is not None else _attrs(node).get("pads")
    axes = _ints(values, node.input[3]) if len(node.input) > 3 and node.input[3] \
        else list(range(len(data)))
    if flat is None or axes is None or len(flat) != 2 * len(axes):
        return None
    dims = list(data)
    for k, axis in enumerate(a % len(data) for a in axes):
        begin, end = flat[k], flat[k + len(axes)]
        dims[axis] = None if None in (dims[axis], begin, end) else dims[axis] + begin + end
    return dims


def _window_shape(node: onnx.NodeProto, values: _ShapeValues) -> list | None:
    """Conv and pooling outputs: floor((in + pads − dilation·(k − 1) − 1)/stride) + 1 per axis."""
    import sympy

    data = values.shape(node.input[0])
    if data is None or None in data[:2]:
        return None
    attrs = _attrs(node)
    if node.op_type == "Conv":
        weight = values.shape(node.input[1])
        if weight is None or None in weight:
            return None
        kernel, channels = list(weight[2:]), weight[0]
    else:
        kernel, channels = attrs["kernel_shape"], data[1]
    spatial = len(kernel)
    strides = attrs.get("strides") or [1] * spatial
    dilations = attrs.get("dilations") or [1] * spatial
    pads = attrs.get("pads") or [0] * (2 * spatial)
    auto_pad = attrs.get("auto_pad", b"NOTSET")
    auto_pad = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    rounding = sympy.ceiling if attrs.get("ceil_mode", 0) else sympy.floor
    out = [data[0], channels]
    for i in range(spatial):
        size, reach = data[2 + i], dilations[i] * (kernel[i] - 1) + 1
        if size is None:
            out.append(None)
        elif auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            out.append(sympy.ceiling(sympy.Rational(1, strides[i]) * size))
        else:
            padded = size + (0 if auto_pad == "VALID" else pads[i] + pads[i + spatial])
            out.append(rounding((padded - reach) * sympy.Rational(1, strides[i])) + 1)
    return out


def _top_k_shape(node: onnx.NodeProto, values: _ShapeValues) -> list | None:
    """TopK's values and indices: the input's shape with k on the axis, k computed from symbols
    (min(prompt, 2048) for a sparse attention's selected keys); None where k is not known (the
    analysis then bounds it at every candidate, bounds._top_k)."""
    data, k = values.shape(node.input[0]), values.get(node.input[1])
    if data is None or k is None or k.size != 1 or k.item() is None:
        return None
    axis = _attrs(node).get("axis", -1) % len(data)
    return [k.item() if i == axis else d for i, d in enumerate(data)]


def _flatten_shape(node: onnx.NodeProto, values: _ShapeValues) -> list | None:
    data = values.shape(node.input[0])
    if data is None:
        return None
    axis = _attrs(node).get("axis", 1) % (len(data) or 1)
    return [_product(data[:axis]), _product(data[axis:])]


def _concat_shape(node: onnx.NodeProto, values: _ShapeValues) -> list | None:
    parts = [values.shape(i) for i in node.input]
    if not parts or any(p is None for p in parts):
        return None
    axis = _attrs(node)["axis"] % len(parts[0])
    dims = list(parts[0])
    dims[axis] = _sum([p[axis] for p in parts])
    return dims


def _same_shape(node: onnx.NodeProto, values: _ShapeValues) -> list | None:
    data = values.shape(node.input[0])
    return None if data is None else list(data)


def _broadcast_shape(node: onnx.NodeProto, values: _ShapeValues) -> list | None:
    shapes = [values.shape(i) for i in node.input if i]
    if any(s is None for s in shapes):
        return None
    return functools.reduce(_broadcast, map(list, shapes))


def _sequence_at_shape(node: onnx.NodeProto, values: _ShapeValues) -> list | None:
    """An element of a SplitToSequence: the data with the split axis cut to that part (the
    split sizes given), or to 1, dropped without keepdims, when it splits one by one. ONNX's
    inference types a sequence's elements alike, so unequal parts (DeepSeek's q_pe / q_nope
    split) leave the axis unknown there."""
    split = values.view.producer(node.input[0])
    position = values.get(node.input[1]) if len(node.input) > 1 else None
    if split is None or split.op_type != "SplitToSequence" or position is None \
            or position.size != 1 or not isinstance(position.flat[0], (int, np.integer)):
        return None
    data = values.shape(split.input[0])
    if data is None:
        return None
    attrs = _attrs(split)
    axis = attrs.get("axis", 0) % len(data)
    dims = list(data)
    if len(split.input) > 1 and split.input[1]:
        sizes = _ints(values, split.input[1])
        if sizes is None:  # sizes that are data (a router's tokens per expert): even shares
            return _even_share_shape(dims, axis, values.shape(split.input[1]), position)
        if values.get(split.input[1]).ndim == 0:  # a scalar: parts of one size, the last the rest
            if not isinstance(data[axis], int):
                return None
            sizes = [sizes[0]] * (data[axis] // sizes[0]) + (
                [data[axis] % sizes[0]] if data[axis] % sizes[0] else [])
        index = int(position.flat[0])
        if not -len(sizes) <= index < len(sizes):
            return None
        dims[axis] = sizes[index]
        return dims
    if attrs.get("keepdims", 1):
        dims[axis] = 1
        return dims
    return dims[:axis] + dims[axis + 1:]


def _even_share_shape(dims: list, axis: int, sizes_shape: tuple | None,
                      position: np.ndarray) -> list | None:
    """A part of a split whose sizes are data, its count known (sizes of shape [parts]): the
    axis cut to that part's even share (sequences.even_share), as the concrete split is typed;
    work linear in a part's rows then sums to the whole axis's."""
    if sizes_shape is None or len(sizes_shape) != 1 or not isinstance(sizes_shape[0], int) \
            or not 0 < sizes_shape[0] <= MAX_PARTS or dims[axis] is None:
        return None
    parts, index = sizes_shape[0], int(position.flat[0])
    if not -parts <= index < parts:
        return None
    dims[axis] = even_share(dims[axis], parts, index % parts)
    return dims


def _global_pool_shape(node: onnx.NodeProto, values: _ShapeValues) -> list | None:
    data = values.shape(node.input[0])
    return None if data is None else [*data[:2], *[1] * (len(data) - 2)]


def _reduce_shape(node: onnx.NodeProto, values: _ShapeValues) -> list | None:
    """A Reduce* op's output: axes from the input (opset 18) or the attribute; none: all, unless
    noop_with_empty_axes."""
    data = values.shape(node.input[0])
    if data is None:
        return None
    attrs = _attrs(node)
    given = len(node.input) > 1 and node.input[1] or "axes" in attrs
    axes = _axes(node, values) if given else None
    if given and axes is None:
        return None  # axes computed at run time
    if not axes:
        if attrs.get("noop_with_empty_axes", 0):
            return list(data)
        axes = range(len(data))
    reduced = {a % len(data) for a in axes}
    if attrs.get("keepdims", 1):
        return [1 if i in reduced else d for i, d in enumerate(data)]
    return [d for i, d in enumerate(data) if i not in reduced]


def _product(dims) -> Any:
    return None if None in dims else math.prod(dims)


def _sum(dims) -> Any:
    return None if None in dims else sum(dims)


def _equals(d, n: int) -> bool:
    return isinstance(d, (int, np.integer)) and d == n


# Ops whose every output has the shape of the first (TopK's values and indices).
_OUTPUTS_ALIKE = frozenset({"TopK"})

_SHAPE_OF: dict[str, Callable] = {
    "Reshape": _reshape_shape, "Expand": _expand_shape, "ConstantOfShape": _constant_of_shape_shape,
    "Tile": _tile_shape, "Range": _range_shape, "Slice": _slice_shape, "Conv": _window_shape,
    "MaxPool": _window_shape, "AveragePool": _window_shape, "LpPool": _window_shape,
    "Flatten": _flatten_shape, "Concat": _concat_shape, "SequenceAt": _sequence_at_shape,
    "GlobalAveragePool": _global_pool_shape, "GlobalMaxPool": _global_pool_shape,
    "GlobalLpPool": _global_pool_shape, "TopK": _top_k_shape, "Pad": _pad_shape,
    # What ONNX inference carries too, taken here so that a chain of convolutions over symbolic
    # spatial dims resolves in one round rather than one round per layer.
    **dict.fromkeys(sorted(SHAPE_KEEPING), _same_shape),
    **dict.fromkeys(sorted(BROADCASTING), _broadcast_shape),
    # Opset 18 moved the axes to an input, which ONNX inference reads only from an initializer.
    **dict.fromkeys(sorted(REDUCTIONS), _reduce_shape),
}
