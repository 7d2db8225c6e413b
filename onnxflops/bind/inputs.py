"""Stage 2: bind the graph inputs' dynamic dims to concrete sizes."""

from __future__ import annotations

import numbers
import re
from typing import Iterable, Mapping, Sequence

import numpy as np
import onnx

from onnxflops.dims import INT64_MAX, SYMBOL_MARK, format_shape, symbol_name
from onnxflops.errors import OnnxFlopsError, did_you_mean
from onnxflops.graph import info_from_value_info, is_standard_domain

Shape = Sequence[int]


def checked_dim(value, what: str) -> int:
    """`value` as a dim: a whole number from 1 to 2^63-1; else an error naming `what`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise OnnxFlopsError(f"{what}: {value!r} is not a whole number")
    if not 1 <= value <= INT64_MAX:
        raise OnnxFlopsError(f"{what}: {value} is out of range (1 to 2^63-1)")
    return int(value)

_SHAPE = re.compile(r"^\d+(x\d+)*$")


class TypedShape(tuple):
    """A shape with the dtype its input takes (`--input input_ids=1x128:int64`): a model that is
    converted first gets example inputs of that dtype (token ids rather than floats)."""

    dtype: str

    def __new__(cls, dims: Iterable[int], dtype: str):
        shape = super().__new__(cls, dims)
        shape.dtype = dtype
        return shape


_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64")


def parse_input_spec(spec: str) -> tuple[str, tuple[int, ...]]:
    """'NAME=1x3x224x224' → ('NAME', (1, 3, 224, 224)); a scalar is 'NAME=scalar';
    'NAME=1x128:int64' gives a TypedShape."""
    name, sep, dims = spec.rpartition("=")
    if not sep or not name:
        raise OnnxFlopsError(f"--input '{spec}': expected NAME=DIMS[:DTYPE], e.g. "
                             "input=1x3x224x224 or input_ids=1x128:int64")
    dims, _, dtype = dims.partition(":")
    if dtype:
        if dtype.strip().lower() not in _DTYPES:
            raise OnnxFlopsError(f"--input '{spec}': unknown dtype '{dtype}' (choose from "
                                 f"{', '.join(_DTYPES)})")
        name, shape = parse_input_spec(f"{name}={dims}")
        return name, TypedShape(shape, dtype.strip().lower())
    dims = dims.strip().lower().replace("*", "x").replace(",", "x")
    if dims == "scalar":
        return name, ()
    if not _SHAPE.match(dims):
        raise OnnxFlopsError(f"--input '{spec}': malformed shape '{dims}', expected positive integers "
                             "joined by 'x', e.g. 1x3x224x224")
    return name, tuple(checked_dim(int(d), f"--input '{spec}'") for d in dims.split("x"))


def is_single_input(value) -> bool:
    """A lone shape (a sequence of ints) or a lone array or tensor, as opposed to a sequence of
    them."""
    if _is_tensor(value):
        return True
    return isinstance(value, Sequence) and all(isinstance(d, numbers.Integral) for d in value)


def inputs_by_name(inputs, names: Sequence[str]) -> dict:
    """Inputs as every command and function takes them, by input name: a mapping as it is, one
    input (a shape, TypedShape, array or tensor) or a sequence of them in the order of `names`
    (a graph's real inputs). The values are left as given (`shape_of`, `array_of` read them)."""
    if inputs is None:
        return {}
    if isinstance(inputs, Mapping):
        return dict(inputs)
    if not is_single_input(inputs) and (isinstance(inputs, (str, bytes))
                                        or not isinstance(inputs, Iterable)):
        raise OnnxFlopsError(f"inputs: expected shapes or tensors by input name (a mapping) or "
                             f"in order (a sequence), not a {type(inputs).__name__}")
    items = [inputs] if is_single_input(inputs) else list(inputs)
    if len(items) > len(names):
        raise OnnxFlopsError(f"inputs: {len(items)} given in order, the model takes "
                             f"{len(names)} ({', '.join(names) or 'none'})")
    return dict(zip(names, items))


def shape_of(value):
    """The shape an input value binds: an array's or tensor's as a TypedShape of its dtype (token
    ids stay integers), a shape or TypedShape as given."""
    if _is_tensor(value):
        return TypedShape((int(d) for d in value.shape), dtype_name(value.dtype))
    return value


def array_of(value):
    """An input value's data as a numpy array (a torch tensor's too); None for a shape."""
    if not _is_tensor(value):
        return None
    if hasattr(value, "detach"):  # torch: no import of it here
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def _is_tensor(value) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


def dtype_name(dtype) -> str:
    """'int64' from numpy's int64, torch.int64, tf.int64 alike."""
    return getattr(dtype, "name", None) or str(dtype).rsplit(".", 1)[-1]


def real_inputs(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    """Graph inputs that are not initializers (old exporters list weights as inputs too)."""
    weights = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in weights]


def bind_inputs(model: onnx.ModelProto, inputs: Mapping[str, Shape] | None = None,
                batch: int | None = None, *, allow_unbound: bool = False,
                in_place: bool = False) -> onnx.ModelProto:
    """Return a copy of `model` whose inputs have the given concrete shapes; with `in_place`,
    `model` itself so changed (for a model the caller owns: copying a large graph takes time).

    `batch` binds every symbolic or unknown leading dim. A dynamic dim left unbound is an error naming
    the input and the dim, unless `allow_unbound` (symbolic counting) keeps it as a symbol: named
    by its dim_param, or `<input>_<axis>` where it has none (see symbolic.py).
    """
    if inputs is not None and not isinstance(inputs, Mapping):
        raise OnnxFlopsError(f"inputs: expected a mapping of input names to shapes, not a "
                             f"{type(inputs).__name__}")
    inputs = dict(inputs or {})
    graph_inputs = real_inputs(model)
    known = {i.name for i in graph_inputs}
    for name in inputs:
        if name not in known:
            raise OnnxFlopsError(f"model has no input '{name}'{did_you_mean(name, known)}; its "
                                 f"inputs are: {', '.join(sorted(known)) or '(none)'}")
    if batch is not None:
        checked_dim(batch, "--batch")

    # Every shape is resolved before any is set: an error leaves `model` as it was.
    declared = {vi.name: info_from_value_info(vi).shape for vi in graph_inputs}
    given = {name: _given(name, declared[name], shape) for name, shape in inputs.items()}
    named = _named_dims(declared, given)
    shapes = {name: given[name] if name in given else
              _resolve(name, _with_named(shape, named), batch, allow_unbound)
              for name, shape in declared.items()}
    bound = model
    if not in_place:
        bound = onnx.ModelProto()
        bound.CopyFrom(model)
    for vi in bound.graph.input:
        if shapes.get(vi.name) is not None:
            _set_shape(vi, shapes[vi.name])
    # Shapes the exporter recorded for intermediate tensors may still carry the old symbols, and
    # inference finds them again from the bound inputs; but not those of custom ops, which only
    # the model declares: they are kept, their named dims bound as the inputs' are.
    # Their element types stay: onnxruntime refuses a node that writes another (validity.py).
    custom = _declared_custom_outputs(bound, _bound_names(declared, shapes))
    written = {o for n in bound.graph.node for o in n.output}
    element_types = [_element_type_only(vi) for vi in bound.graph.value_info
                     if vi.type.tensor_type.elem_type and vi.name in written
                     and vi.name not in custom]
    del bound.graph.value_info[:]
    bound.graph.value_info.extend(element_types)
    bound.graph.value_info.extend(custom.values())
    for out in bound.graph.output:
        if out.type.HasField("tensor_type"):
            out.type.tensor_type.ClearField("shape")
    return bound


def _element_type_only(vi: onnx.ValueInfoProto) -> onnx.ValueInfoProto:
    return onnx.helper.make_tensor_value_info(vi.name, vi.type.tensor_type.elem_type, None)


def _given(name: str, declared: tuple | None, given: Shape) -> tuple:
    """The shape given for input `name`, checked against the one the model declares."""
    if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
        raise OnnxFlopsError(f"input '{name}': expected a shape (a sequence of dims), "
                             f"not {given!r}")
    given = tuple(checked_dim(d, f"input '{name}'") for d in given)
    if declared is not None:
        if len(declared) != len(given):
            raise OnnxFlopsError(f"input '{name}': given shape {format_shape(given)} has rank "
                                 f"{len(given)}, the model declares {format_shape(declared)} "
                                 f"(rank {len(declared)})")
        for axis, (d, g) in enumerate(zip(declared, given)):
            if _is_fixed(d) and d != g:
                raise OnnxFlopsError(f"input '{name}': dim {axis} is fixed to {d} in the model, "
                                     f"but {g} was given ({format_shape(given)})")
    return given


def _named_dims(declared: Mapping[str, tuple | None], given: Mapping[str, tuple]) -> dict:
    """The size each named dim (dim_param) takes in the shapes given: a model that names one dim
    'seq' in input_ids and attention_mask has it bound for both by binding either."""
    sizes: dict[str, tuple[int, str]] = {}
    for name, shape in given.items():
        for d, g in zip(declared[name] or (), shape):
            if not isinstance(d, str) or not d:
                continue
            if d in sizes and sizes[d][0] != g:
                raise OnnxFlopsError(f"input '{name}': dim '{d}' is {g} here but "
                                     f"{sizes[d][0]} in input '{sizes[d][1]}', which the model "
                                     "says is the same dim")
            sizes.setdefault(d, (g, name))
    return {d: size for d, (size, _) in sizes.items()}


def _with_named(declared: tuple | None, named: Mapping[str, int]) -> tuple | None:
    if declared is None or not named:
        return declared
    return tuple(named.get(d, d) if isinstance(d, str) else d for d in declared)


def _resolve(name: str, declared: tuple | None, batch: int | None,
             allow_unbound: bool) -> tuple | None:
    if declared is None:
        if allow_unbound:
            return None
        raise OnnxFlopsError(f"input '{name}' has no declared shape: bind it with --input {name}=DIMS")
    shape = list(declared)
    if batch is not None and shape and not _is_fixed(shape[0]):
        shape[0] = batch
    for axis, d in enumerate(shape):
        if _is_fixed(d):
            continue
        if allow_unbound:
            shape[axis] = SYMBOL_MARK + symbol_name(d if isinstance(d, str) else f"{name}_{axis}")
            continue
        label = f" ('{d}')" if isinstance(d, str) else ""
        hint = "x".join(str(x) if _is_fixed(x) else "N" for x in shape)
        raise OnnxFlopsError(f"input '{name}' dim {axis}{label} is dynamic: bind it with "
                             f"--input {name}={hint}" + (" or --batch N" if axis == 0 else ""))
    return tuple(shape)


def _bound_names(declared: Mapping[str, tuple | None], shapes: Mapping[str, tuple | None]) -> dict:
    """Each named dim of the inputs with the size it was bound to."""
    return {d: b for name, shape in declared.items() if shapes.get(name) is not None
            for d, b in zip(shape or (), shapes[name]) if isinstance(d, str) and d and
            isinstance(b, int)}


def _declared_custom_outputs(model: onnx.ModelProto, named: Mapping[str, int]
                             ) -> dict[str, onnx.ValueInfoProto]:
    """The value_info the model declares for outputs of ops onnx knows no schema of (custom
    domains, whose shapes no inference can find), each named dim bound by `named` and any other
    left unknown."""
    produced = {o for n in model.graph.node for o in n.output
                if not is_standard_domain(n.domain) and n.domain != "com.microsoft"
                and not onnx.defs.has(n.op_type, n.domain)}
    kept = {}
    for vi in model.graph.value_info:
        if vi.name not in produced or not vi.type.tensor_type.HasField("shape"):
            continue
        copy = onnx.ValueInfoProto()
        copy.CopyFrom(vi)
        for dim in copy.type.tensor_type.shape.dim:
            if dim.HasField("dim_param"):
                if dim.dim_param in named:
                    dim.dim_value = named[dim.dim_param]
                else:
                    dim.Clear()
        kept[vi.name] = copy
    return kept


def _is_fixed(d) -> bool:
    """A dim the model fixes: a dim_value, 0 included, as onnxruntime reads it (a Gemm of an
    input declared [batch, 0] by an 8-row weight: "Dimension mismatch in unification between 8
    and 0"; a [2, 8] fed to it: "Got: 8 Expected: 0"); a dim_param or no value is open."""
    return isinstance(d, int) and d >= 0


def _set_shape(vi: onnx.ValueInfoProto, shape: Iterable) -> None:
    tt = vi.type.tensor_type
    tt.ClearField("shape")
    tt.shape.SetInParent()
    for d in shape:
        dim = tt.shape.dim.add()
        if isinstance(d, int):
            dim.dim_value = d
        elif isinstance(d, str):
            dim.dim_param = d
