"""Stage 1: load a model as a ModelProto that holds tensor headers but never weight bytes."""

from __future__ import annotations

import os
from pathlib import Path

import onnx
from google.protobuf.message import DecodeError

from onnxflops.errors import OnnxFlopsError


# Initializers at most this large keep their bytes: they are shape arithmetic, axes, scalars.
SMALL_TENSOR_ELEMENTS = 4096


def load_model(source: str | os.PathLike | onnx.ModelProto) -> onnx.ModelProto:
    """Read an .onnx file, or take a proto, keeping tensor headers but no weight bytes.

    External data is never read (a missing data file is fine); inline weight bytes are dropped right
    after parsing, so later stages hold only dims and dtypes.
    """
    if isinstance(source, onnx.ModelProto):
        return without_weight_bytes(source)
    path = Path(source)
    if not path.exists():
        raise OnnxFlopsError(f"{path}: no such file")
    if path.is_dir():
        raise OnnxFlopsError(f"{path}: is a directory, not an .onnx file")
    try:
        model = onnx.load(str(path), load_external_data=False)
    except (DecodeError, RuntimeError, ValueError, OSError) as e:
        raise OnnxFlopsError(f"{path}: not a readable ONNX model ({_first_line(e)})") from None
    if not model.graph.node and not model.graph.input and not model.graph.output:
        raise OnnxFlopsError(f"{path}: not an ONNX model (no graph found)")
    _drop_weight_bytes(model.graph.initializer)
    return model


def without_weight_bytes(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` whose large initializers carry headers only; `model` is left untouched."""
    copy = onnx.ModelProto()
    _copy_fields(model, copy, skip="graph")
    _copy_fields(model.graph, copy.graph, skip="initializer")
    for t in model.graph.initializer:
        copy.graph.initializer.append(_header(t) if _is_large(t) else t)
    return copy


def _copy_fields(src, dst, skip: str) -> None:
    for field, value in src.ListFields():
        if field.name == skip:
            continue
        if field.is_repeated:
            getattr(dst, field.name).extend(value)
        elif field.message_type:
            getattr(dst, field.name).CopyFrom(value)
        else:
            setattr(dst, field.name, value)


def _is_large(t: onnx.TensorProto) -> bool:
    n = 1
    for d in t.dims:
        n *= d
    return n > SMALL_TENSOR_ELEMENTS and t.data_location != onnx.TensorProto.EXTERNAL


def _header(t: onnx.TensorProto) -> onnx.TensorProto:
    """The tensor's name, dims and dtype, marked external so nothing tries to read its values."""
    h = onnx.TensorProto(name=t.name, dims=t.dims, data_type=t.data_type,
                         data_location=onnx.TensorProto.EXTERNAL)
    h.external_data.add(key="location", value="<weights not loaded>")
    return h


def _drop_weight_bytes(initializers) -> None:
    for i, t in enumerate(initializers):
        if _is_large(t):
            initializers[i].CopyFrom(_header(t))


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__
