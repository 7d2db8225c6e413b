"""Stage 2: bind the graph inputs' dynamic dims to concrete sizes."""

from __future__ import annotations

import numbers
import re
from typing import Iterable, Mapping, Sequence

import numpy as np
import onnx

from onnxflops.dims import INT64_MAX, SYMBOL_MARK, format_shape, symbol_name
from onnxflops.errors import OnnxFlopsError, did_you_mean, in_callers_words, input_hint
from onnxflops.graph import is_standard_domain, write_declared_shapes, write_sequence_inputs

Shape = Sequence[int]


def checked_dim(value, what: str, smallest: int = 1) -> int:
    """`value` as a dim: a whole number from `smallest` to 2^63-1; else an error naming `what`.
    An input's dim may be 0 (a model may run on an empty tensor); a batch is 1 at least."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise OnnxFlopsError(f"{what}: {value!r} is not a whole number")
    if not smallest <= value <= INT64_MAX:
        raise OnnxFlopsError(f"{what}: {value} is out of range ({smallest} to 2^63-1)")
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


class SequenceShape(tuple):
    """The shapes of a sequence input's elements, in order: `SequenceShape([(1, 2, 2)] * 3)`,
    on the command line `--input x=seq(3;1x2x2)` (3 elements of shape 1x2x2). A sequence's
    length is not part of its type: the count of the ops that read it needs it bound."""

    def __new__(cls, elements: Iterable[Iterable[int]]):
        if isinstance(elements, (str, bytes)) or not isinstance(elements, Iterable):
            raise OnnxFlopsError(f"a sequence's shapes: expected a list of shapes, not "
                                 f"{elements!r}")
        return super().__new__(cls, (tuple(e) if isinstance(e, Iterable) else e
                                     for e in elements))


# What binds an optional input to no value (Python: None): `--input x=none`.
_NO_VALUE = "none"
_SEQUENCE = re.compile(r"^seq\((\d+);([^()]*)\)$")

_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64")


def parse_input_spec(spec: str) -> tuple[str, tuple[int, ...]]:
    """'NAME=1x3x224x224' → ('NAME', (1, 3, 224, 224)); a scalar is 'NAME=scalar';
    'NAME=1x128:int64' gives a TypedShape; 'NAME=seq(3;1x2x2)' a SequenceShape of 3 elements
    of shape 1x2x2; 'NAME=none' an optional input holding no value (None)."""
    name, sep, dims = spec.rpartition("=")
    if not sep or not name:
        raise OnnxFlopsError(f"--input '{spec}': expected NAME=DIMS[:DTYPE], e.g. "
                             "input=1x3x224x224 or input_ids=1x128:int64")
    if dims.strip().lower() == _NO_VALUE:
        return name, None
    sequence = _SEQUENCE.match(dims.strip().lower().replace(" ", ""))
    if sequence:
        length, element = sequence.groups()
        return name, SequenceShape([parse_input_spec(f"{name}={element}")[1]] * int(length))
    if dims.strip().lower().startswith("seq"):
        raise OnnxFlopsError(f"--input '{spec}': a sequence is seq(LENGTH;DIMS), e.g. "
                             f"{name}=seq(3;1x2x2)")
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
        raise OnnxFlopsError(f"--input '{spec}': malformed shape '{dims}', expected whole numbers "
                             "joined by 'x', e.g. 1x3x224x224")
    return name, tuple(checked_dim(int(d), f"--input '{spec}'", smallest=0)
                       for d in dims.split("x"))


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

    `inputs` maps names to shapes; a sequence input's to a SequenceShape (its elements'), an
    optional input's to its tensor's shape or None (no value). `batch` binds every symbolic or
    unknown leading dim. A dynamic dim left unbound is an error naming
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
        checked_dim(batch, in_callers_words("--batch", "batch"))

    # Every shape is resolved before any is set: an error leaves `model` as it was.
    kinds = {vi.name: _kind(vi.type) for vi in graph_inputs}
    declared = {vi.name: _declared_shape(vi.type) for vi in graph_inputs}
    given = {name: _given_value(name, kinds[name], declared[name], shape)
             for name, shape in inputs.items()}
    named = _named_dims(declared, {name: shape for name, shape in given.items()
                                   if kinds[name] in ("tensor", "optional")
                                   and shape is not None})
    shapes = {name: given[name] if name in given else
              _resolve(name, kinds[name], _with_named(shape, named), batch, allow_unbound)
              for name, shape in declared.items()}
    bound = model
    if not in_place:
        bound = onnx.ModelProto()
        bound.CopyFrom(model)
    sequences = {}
    for vi in bound.graph.input:
        shape = shapes.get(vi.name)
        if isinstance(shape, SequenceShape):
            sequences[vi.name] = shape
            alike = set(shape)
            _set_shape(vi, next(iter(alike)) if len(alike) == 1 else None)
        elif shape is not None:
            _set_shape(vi, shape)
    if sequences:
        write_sequence_inputs(bound, sequences)
    # Shapes the exporter recorded for intermediate tensors may still carry the old symbols, and
    # inference finds them again from the bound inputs; but not those of custom ops, which only
    # the model declares: they are kept, their named dims bound as the inputs' are.
    # Their element types stay: onnxruntime refuses a node that writes another (validity.py).
    bound_names = _bound_names(declared, shapes)
    custom = _declared_custom_outputs(bound, bound_names)
    written = {o for n in bound.graph.node for o in n.output}
    # What the model declares, where every dim is fixed or named by a bound input, for the
    # tensors whose shapes inference cannot find (a Resize to sizes read from an input).
    stated = {vi.name: shape for vi in [*bound.graph.value_info, *bound.graph.output]
              if vi.name in written and vi.name not in custom
              and (shape := _stated_shape(vi, bound_names)) is not None}
    if stated:
        write_declared_shapes(bound, stated)
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


def _stated_shape(vi: onnx.ValueInfoProto, named: Mapping[str, int]) -> tuple | None:
    """The shape a tensor's declaration gives, its named dims bound by `named`; None where a
    dim is left open."""
    tensor = vi.type.tensor_type
    if not vi.type.HasField("tensor_type") or not tensor.HasField("shape"):
        return None
    dims = [d.dim_value if d.HasField("dim_value") else named.get(d.dim_param)
            for d in tensor.shape.dim]
    return tuple(dims) if all(isinstance(d, int) for d in dims) else None


def _element_type_only(vi: onnx.ValueInfoProto) -> onnx.ValueInfoProto:
    return onnx.helper.make_tensor_value_info(vi.name, vi.type.tensor_type.elem_type, None)


def _kind(type_proto: onnx.TypeProto) -> str:
    """'tensor', 'sequence' (of tensors), 'optional' (of a tensor), 'optional sequence', or
    'other' (a map, a sparse tensor): what an input holds, for binding it."""
    which = type_proto.WhichOneof("value")
    if which == "optional_type":
        inner = _kind(type_proto.optional_type.elem_type)
        return {"tensor": "optional", "sequence": "optional sequence"}.get(inner, "other")
    if which == "sequence_type":
        return "sequence" if _kind(type_proto.sequence_type.elem_type) == "tensor" else "other"
    return "tensor" if which in ("tensor_type", None) else "other"


def _held_tensor(type_proto: onnx.TypeProto) -> onnx.TypeProto.Tensor | None:
    """The type of the tensors an input holds: its own, its sequence's elements', its
    optional's."""
    which = type_proto.WhichOneof("value")
    if which == "optional_type":
        return _held_tensor(type_proto.optional_type.elem_type)
    if which == "sequence_type":
        return _held_tensor(type_proto.sequence_type.elem_type)
    return type_proto.tensor_type if which in ("tensor_type", None) else None


def _declared_shape(type_proto: onnx.TypeProto) -> tuple | None:
    """The shape the model declares of the tensors an input holds (a sequence's elements)."""
    held = _held_tensor(type_proto)
    if held is None or not held.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                 for d in held.shape.dim)


def _given_value(name: str, kind: str, declared: tuple | None, given) -> tuple | None:
    """What is given for input `name` (a shape, a SequenceShape, None: no value), checked
    against what it holds and the shape the model declares."""
    if given is None:
        if not kind.startswith("optional"):
            raise OnnxFlopsError(f"input '{name}': only an optional input can be bound to no "
                                 f"value ({_NO_VALUE}); it holds a {kind}")
        return None
    if kind.endswith("sequence"):
        if not isinstance(given, SequenceShape):
            raise OnnxFlopsError(f"input '{name}' is a sequence: bind its elements' shapes "
                                 f"with --input {name}=seq(LENGTH;DIMS)")
        return SequenceShape(_given(f"{name}[{i}]", declared, shape)
                             for i, shape in enumerate(given))
    if isinstance(given, SequenceShape):
        raise OnnxFlopsError(f"input '{name}' holds a {kind}, not a sequence: bind it with "
                             f"--input {name}=DIMS")
    if kind == "other":
        raise OnnxFlopsError(f"input '{name}' is neither a tensor nor a sequence or optional "
                             "of tensors: it cannot be bound")
    return _given(name, declared, given)


def _given(name: str, declared: tuple | None, given: Shape) -> tuple:
    """The shape given for input `name`, checked against the one the model declares."""
    if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
        raise OnnxFlopsError(f"input '{name}': expected a shape (a sequence of dims), "
                             f"not {given!r}")
    given = tuple(checked_dim(d, f"input '{name}'", smallest=0) for d in given)
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


def _resolve(name: str, kind: str, declared: tuple | None, batch: int | None,
             allow_unbound: bool) -> tuple | None:
    if kind.endswith("sequence"):
        if allow_unbound:
            return None
        # its length is no part of its type: only the user can say it
        none = f" or --input {name}={_NO_VALUE}" if kind.startswith("optional") else ""
        dims = "x".join(str(d) if _is_fixed(d) else "N" for d in declared or ()) or "DIMS"
        raise OnnxFlopsError(f"input '{name}' is a sequence: bind its length and its elements' "
                             f"shape with --input {name}=seq(LENGTH;{dims}){none}")
    if declared is None:
        if allow_unbound:
            return None
        none = in_callers_words(f" or --input {name}={_NO_VALUE}", f" or inputs={{{name!r}: None}}") \
            if kind == "optional" else ""
        raise OnnxFlopsError(f"input '{name}' has no declared shape: bind it with "
                             f"{input_hint(name)}{none}")
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
        hint = input_hint(name, [x if _is_fixed(x) else "N" for x in shape])
        batch_hint = in_callers_words(" or --batch N", " or batch=N") if axis == 0 else ""
        raise OnnxFlopsError(f"input '{name}' dim {axis}{label} is dynamic: bind it with "
                             f"{hint}{batch_hint}")
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


def _set_shape(vi: onnx.ValueInfoProto, shape: Iterable | None) -> None:
    """Give the tensors input `vi` holds this shape (None: a sequence's elements, unlike)."""
    tt = _held_tensor(vi.type)
    tt.ClearField("shape")
    if shape is None:
        return
    tt.shape.SetInParent()
    for d in shape:
        dim = tt.shape.dim.add()
        if isinstance(d, int):
            dim.dim_value = d
        elif isinstance(d, str):
            dim.dim_param = d
