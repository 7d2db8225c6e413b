"""The one value interpreter: what each ONNX op computes, in one table, over three backends.

VALUES maps an op to its value function, written once over numpy arrays; a backend says what a
value is and does the little that differs:

- EXACT: typed numpy arrays, as a runtime computes them (constant folding: evaluate.py).
- SYMBOLIC: object arrays of ints and sympy formulas, None where a number is unknown (shape
  arithmetic on symbolic dims: symbolic.py).
- PROBE: float64 arrays, casts kept in float64 (arithmetic recognised by evaluating it on probe
  inputs: canonical/probes.py).

Each row names the backends that interpret its op; an op outside a backend's rows is not followed
by it (evaluate.py then falls back on onnx's reference evaluator). A new op is one row here.
"""

from __future__ import annotations

import enum
import functools
import math
import operator
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from onnxflops.graph import is_float


class Backend(enum.Flag):
    EXACT = enum.auto()
    SYMBOLIC = enum.auto()
    PROBE = enum.auto()


EXACT, SYMBOLIC, PROBE = Backend.EXACT, Backend.SYMBOLIC, Backend.PROBE


class Unknown(ValueError):
    """An operand the backend does not know (or an op it does not follow): no value then."""


class Operands:
    """A node's inputs, looked up only when an op reads them (`lookup` raises Unknown)."""

    def __init__(self, names: Sequence[str], lookup: Callable[[str], Any]):
        self.names, self._lookup = names, lookup

    def __len__(self) -> int:
        return len(self.names)

    def __getitem__(self, slot: int) -> Any:
        if slot >= len(self.names) or not self.names[slot]:
            raise Unknown(f"input {slot} not given")
        return self._lookup(self.names[slot])

    def __iter__(self):
        return (self[slot] for slot in range(len(self.names)))

    def given(self, slot: int) -> bool:
        return slot < len(self.names) and bool(self.names[slot])


# --- backends ------------------------------------------------------------------------------------

_CASTABLE = {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BOOL,
             TensorProto.INT8, TensorProto.INT16, TensorProto.INT32, TensorProto.INT64,
             TensorProto.UINT8, TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64}


class Exact:
    """Typed numpy values: each op as a runtime computes it."""

    kind = EXACT
    maximum, minimum = staticmethod(np.maximum), staticmethod(np.minimum)

    def shape(self, x: Operands, slot: int) -> tuple:
        return x[slot].shape

    def dims(self, dims) -> np.ndarray:
        return np.array(dims, dtype=np.int64)

    def ints(self, value) -> list[int]:
        return [int(v) for v in np.asarray(value).flat]

    def whole(self, value):
        return value

    def binary(self, fn: Callable) -> Callable:
        return fn

    def cast(self, value: np.ndarray, to: int) -> np.ndarray:
        if to not in _CASTABLE:
            raise NotImplementedError(f"Cast to {to}")
        return value.astype(helper.tensor_dtype_to_np_dtype(to))

    def dtype_of(self, x: Operands, slot: int) -> int:
        return helper.np_dtype_to_tensor_dtype(x[slot].dtype)

    def constant(self, value: np.ndarray) -> np.ndarray:
        return value


class Probe(Exact):
    """float64 values: arithmetic as math, so a form is told by what it computes."""

    kind = PROBE

    def divide(self, a, b):
        return np.divide(a, b)

    def cast(self, value: np.ndarray, to: int) -> np.ndarray:
        return value  # kept in float64: a cast to float16 and back is the same math

    def dtype_of(self, x: Operands, slot: int) -> None:
        return None


class Symbolic:
    """Object arrays of ints and sympy formulas, None for a number not known; `shape_of` gives a
    tensor's dims (symbols for symbolic ones, None where unknown), `output_dtype` the result's."""

    kind = SYMBOLIC

    def __init__(self, shape_of: Callable[[str], tuple | None], output_dtype: int | None):
        self._shape_of, self._output_dtype = shape_of, output_dtype
        self.maximum, self.minimum = self.binary(_sympy_max), self.binary(_sympy_min)

    def shape(self, x: Operands, slot: int) -> tuple:
        dims = self._shape_of(x.names[slot]) if x.given(slot) else None
        if dims is None:
            raise Unknown("shape")
        return dims

    def dims(self, dims):
        return list(dims) if isinstance(dims, (list, tuple)) else dims

    def ints(self, value) -> list[int]:
        flat = list(np.asarray(value, dtype=object).flat)
        if not all(isinstance(v, (int, np.integer)) for v in flat):
            raise Unknown("not a number")
        return [int(v) for v in flat]

    def whole(self, value):
        if any(v is None for v in np.asarray(value, dtype=object).flat):
            raise Unknown("part unknown")
        return value

    def binary(self, fn: Callable) -> Callable:
        """`fn` element by element, None where either element is unknown; a truth as 0 or 1."""
        def element(a, b):
            if a is None or b is None:
                return None
            result = fn(a, b)
            return int(result) if isinstance(result, (bool, np.bool_)) else result
        return np.frompyfunc(element, 2, 1)

    def divide(self, a, b):
        integer = self._output_dtype is None or not is_float(self._output_dtype)
        return self.binary(operator.floordiv if integer else operator.truediv)(a, b)

    def cast(self, value, to):
        """Numbers keep their value; a float cast to an integer type drops its fraction."""
        if self._output_dtype is None or is_float(self._output_dtype):
            return value
        return np.frompyfunc(lambda v: int(v) if isinstance(v, float) else v, 1, 1)(value)

    def dtype_of(self, x: Operands, slot: int) -> None:
        return None

    def constant(self, value: np.ndarray) -> np.ndarray:
        if value.dtype.kind not in "iu":
            raise Unknown("not an integer constant")
        return value.astype(object)


def _sympy_max(a, b):
    import sympy
    return sympy.Max(a, b)


def _sympy_min(a, b):
    import sympy
    return sympy.Min(a, b)


# --- the ops -------------------------------------------------------------------------------------

Op = Callable[[Any, Operands, dict], Any]


class ValueOp(NamedTuple):
    fn: Op
    backends: Backend


def interpret(op: ValueOp, backend, x: Operands, attrs: dict) -> Any:
    """The value `op` computes from `x` on `backend`; Unknown where the backend does not follow it."""
    if not op.backends & backend.kind:
        raise Unknown("not followed")
    return op.fn(backend, x, attrs)


def indices(b, value) -> np.ndarray:
    """Index operands as int64, in their own shape."""
    return np.asarray(b.ints(value), dtype=np.int64).reshape(np.shape(value))


def mean_axes(op_type: str, attrs: dict, axes: Sequence[int] | None, rank: int) -> tuple | None:
    """The axes a GlobalAveragePool or ReduceMean averages over (sorted, non-negative); None where
    it keeps every axis (noop_with_empty_axes)."""
    if op_type == "GlobalAveragePool":
        return tuple(range(2, rank))
    axes = attrs.get("axes") if axes is None else axes
    if axes is None:
        return None if attrs.get("noop_with_empty_axes", 0) else tuple(range(rank))
    return tuple(sorted(int(a) % rank for a in axes))


def _shape(b, x, a):
    return b.dims(b.shape(x, 0)[a.get("start", 0):a.get("end")])


def _size(b, x, a):
    """Size = ∏ dims."""
    return b.dims(math.prod(b.whole(b.shape(x, 0))))


def _unsqueeze(b, x, a):
    axes = b.ints(x[1]) if x.given(1) else a["axes"]
    return np.expand_dims(x[0], tuple(axes))


def _squeeze(b, x, a):
    axes = b.ints(x[1]) if x.given(1) else a.get("axes")
    return np.squeeze(x[0], axis=None if axes is None else tuple(axes))


def _slice(b, x, a):
    data, starts, ends = x[0], b.ints(x[1]), b.ints(x[2])
    axes = b.ints(x[3]) if x.given(3) else range(len(starts))
    steps = b.ints(x[4]) if x.given(4) else [1] * len(starts)
    index = [slice(None)] * data.ndim
    for axis, start, end, step in zip(axes, starts, ends, steps):
        index[axis] = slice(start, end, step)  # numpy clamps out-of-range bounds as ONNX does
    return data[tuple(index)]


def _reshape(b, x, a):
    data, shape = x[0], b.ints(x[1])
    if not a.get("allowzero", 0):  # a 0 keeps the input's dim
        shape = [data.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return data.reshape(shape)


def _expand(b, x, a):
    """Broadcast both ways: the input to the shape, and dims of 1 in the shape to the input's."""
    shape = np.broadcast_shapes(x[0].shape, tuple(b.ints(x[1])))
    return np.array(np.broadcast_to(x[0], shape))


def _cumsum(b, x, a):
    if a.get("exclusive", 0) or a.get("reverse", 0):
        raise NotImplementedError("CumSum exclusive or reverse")
    return np.cumsum(x[0], axis=int(x[1].reshape(())), dtype=x[0].dtype)


def _sqrt(b, x, a):
    with np.errstate(invalid="ignore"):  # √ of a negative is NaN, as ONNX has it
        return np.sqrt(x[0])


def _constant_of_shape(b, x, a):
    fill = numpy_helper.to_array(a["value"]) if "value" in a else np.zeros(1, np.float32)
    return np.full(tuple(b.ints(x[0])), fill.reshape(-1)[0], dtype=fill.dtype)


def _constant(b, x, a):
    for key in ("value", "value_ints", "value_int"):
        if key in a:
            value = numpy_helper.to_array(a[key]) if key == "value" else np.asarray(a[key])
            return b.constant(value)
    raise Unknown("Constant of another kind")


def _gather_elements(b, x, a):
    data, index, axis = x[0], x[1], a.get("axis", 0)
    index = np.where(index < 0, index + data.shape[axis], index)  # negative: from the end
    return np.take_along_axis(data, index, axis=axis)


def _where(b, x, a):
    return np.where(np.asarray(b.whole(x[0])).astype(bool), x[1], x[2])


def _clip(b, x, a):
    low = x[1] if x.given(1) else a.get("min")
    high = x[2] if x.given(2) else a.get("max")
    return np.clip(x[0], low, high)


def _mean(b, x, a):
    data = x[0]
    axes = mean_axes("ReduceMean", a, b.ints(x[1]) if x.given(1) else None, data.ndim)
    return data if axes is None else np.mean(data, axis=axes, keepdims=bool(a.get("keepdims", 1)))


def _global_mean(b, x, a):
    return np.mean(x[0], axis=mean_axes("GlobalAveragePool", a, None, x[0].ndim), keepdims=True)


def _unary(fn: Callable) -> Op:
    return lambda b, x, a: fn(x[0])


def _arithmetic(fn: Callable) -> Op:
    """An elementwise op of two operands, or folded left to right over more (Sum, Max)."""
    return lambda b, x, a: functools.reduce(b.binary(fn), list(x))


def erf(v: np.ndarray) -> np.ndarray:
    """erf elementwise, in float64."""
    return np.vectorize(math.erf)(v)


_ALL = EXACT | SYMBOLIC | PROBE

VALUES: dict[str, ValueOp] = {
    # Shape arithmetic: what exporters compute shapes with.
    "Identity": ValueOp(lambda b, x, a: x[0], _ALL),
    "Constant": ValueOp(_constant, SYMBOLIC),
    "Shape": ValueOp(_shape, EXACT | SYMBOLIC),
    "Size": ValueOp(_size, EXACT | SYMBOLIC),
    "Gather": ValueOp(lambda b, x, a: np.take(x[0], indices(b, x[1]), axis=a.get("axis", 0)),
                      EXACT | SYMBOLIC),
    "GatherElements": ValueOp(_gather_elements, EXACT),
    "Concat": ValueOp(lambda b, x, a: np.concatenate(list(x), axis=a["axis"]), EXACT | SYMBOLIC),
    "Unsqueeze": ValueOp(_unsqueeze, EXACT | SYMBOLIC),
    "Squeeze": ValueOp(_squeeze, EXACT | SYMBOLIC),
    "Slice": ValueOp(_slice, EXACT | SYMBOLIC),
    "Reshape": ValueOp(_reshape, EXACT | SYMBOLIC),
    "Expand": ValueOp(_expand, EXACT),
    "Transpose": ValueOp(lambda b, x, a: np.transpose(x[0], a.get("perm")), EXACT),
    "CumSum": ValueOp(_cumsum, EXACT),
    "ConstantOfShape": ValueOp(_constant_of_shape, EXACT),
    "Range": ValueOp(lambda b, x, a: np.arange(x[0], x[1], x[2], dtype=x[0].dtype), EXACT),
    "Where": ValueOp(_where, EXACT | SYMBOLIC),
    "Cast": ValueOp(lambda b, x, a: b.cast(x[0], a["to"]), _ALL),
    "CastLike": ValueOp(lambda b, x, a: b.cast(x[0], b.dtype_of(x, 1)), _ALL),
    # Arithmetic.
    "Add": ValueOp(_arithmetic(operator.add), _ALL),
    "Sub": ValueOp(_arithmetic(operator.sub), _ALL),
    "Mul": ValueOp(_arithmetic(operator.mul), _ALL),
    "Div": ValueOp(lambda b, x, a: functools.reduce(b.divide, list(x)), SYMBOLIC | PROBE),
    "Sum": ValueOp(_arithmetic(operator.add), PROBE),
    "Pow": ValueOp(_arithmetic(np.power), PROBE),
    "Max": ValueOp(lambda b, x, a: functools.reduce(b.maximum, list(x)), _ALL),
    "Min": ValueOp(lambda b, x, a: functools.reduce(b.minimum, list(x)), _ALL),
    "Equal": ValueOp(_arithmetic(operator.eq), EXACT | SYMBOLIC),
    "Not": ValueOp(_unary(np.logical_not), EXACT),
    "Neg": ValueOp(_unary(np.negative), _ALL),  # −prompt: a slice of the last prompt positions
    "Sqrt": ValueOp(_sqrt, EXACT | PROBE),  # an attention scale, √(1/√d)
    "Abs": ValueOp(_unary(np.abs), PROBE),
    "Reciprocal": ValueOp(_unary(np.reciprocal), PROBE),
    "Exp": ValueOp(_unary(np.exp), PROBE),
    "Log": ValueOp(_unary(np.log), PROBE),
    "Tanh": ValueOp(_unary(np.tanh), PROBE),
    "Erf": ValueOp(_unary(erf), PROBE),
    "Sigmoid": ValueOp(_unary(lambda v: 1.0 / (1.0 + np.exp(-v))), PROBE),
    "Relu": ValueOp(_unary(lambda v: np.maximum(v, 0.0)), PROBE),
    "Softplus": ValueOp(_unary(lambda v: np.log1p(np.exp(v))), PROBE),
    "Clip": ValueOp(_clip, PROBE),
    "ReduceMean": ValueOp(_mean, PROBE),
    "GlobalAveragePool": ValueOp(_global_mean, PROBE),
}


def followed_by(backend: Backend) -> frozenset[str]:
    """The ops `backend` interprets."""
    return frozenset(op for op, row in VALUES.items() if row.backends & backend)
