"""Stage 1: load a model as a ModelProto that holds tensor headers but never weight bytes."""

from __future__ import annotations

import mmap
import os
import stat
from pathlib import Path
from typing import Iterator

import onnx
from google.protobuf.message import DecodeError

from onnxflops.errors import OnnxFlopsError
from onnxflops.graph import MAX_VALUE_ELEMENTS, domain_key
from onnxflops.load.text_names import NodeNames
from onnxflops.load.validate import check_model

# Initializers at most MAX_VALUE_ELEMENTS large keep their bytes: analysis reads them as shape
# arithmetic, axes, scalars. A tensor record no longer than this cannot hold more: no dtype packs
# more than four elements a byte.
_SMALL_TENSOR_RECORD = MAX_VALUE_ELEMENTS // 4

# Field numbers in onnx.proto, and protobuf's wire types, that the reader walks through.
_MODEL_GRAPH = 7
_GRAPH_INITIALIZER = 5
_TENSOR_DATA = frozenset((4, 5, 6, 7, 9, 10, 11))  # float_data … raw_data, double_data, uint64_data
_VARINT, _FIXED64, _LENGTH_DELIMITED, _FIXED32 = 0, 1, 2, 5


def load_model(source: str | os.PathLike | onnx.ModelProto) -> onnx.ModelProto:
    """Read an .onnx file, or take a proto, keeping tensor headers but no weight bytes.

    External data is never read (a missing data file is fine), nor are the bytes of inline weights:
    later stages hold only dims and dtypes.
    """
    if not isinstance(source, (str, os.PathLike, onnx.ModelProto)):
        hint = ": parse serialized bytes with onnx.load_from_string first" \
            if isinstance(source, (bytes, bytearray)) else ""
        raise OnnxFlopsError(f"cannot count a {type(source).__name__}: give an .onnx path or an "
                             f"onnx.ModelProto (or a framework model){hint}")
    if isinstance(source, onnx.ModelProto):
        check_model(source, source.graph.name or "model")  # before headers hide what data it holds
        return _imports_as_onnxruntime_reads(without_weight_bytes(source))
    if not str(source):
        raise OnnxFlopsError("no model given: the path is an empty string")
    path = Path(source)
    try:
        kind = path.stat().st_mode
    except FileNotFoundError:
        raise OnnxFlopsError(f"{path}: no such file") from None
    except OSError as e:  # a name too long, a folder of the path not searchable
        raise OnnxFlopsError(f"{_shortened(str(path))}: {e.strerror}") from None
    if stat.S_ISDIR(kind):
        raise OnnxFlopsError(f"{path}: is a directory, not an .onnx file")
    if not stat.S_ISREG(kind):  # /dev/zero, a pipe: its size says nothing, and reading may not end
        raise OnnxFlopsError(f"{path}: not a regular file (a device, a pipe or a socket)")
    names = NodeNames()
    try:
        model = _read_without_weights(path, names)
    except (DecodeError, RuntimeError, ValueError, OSError) as e:
        raise OnnxFlopsError(f"{path}: not a readable ONNX model ({_first_line(e)})") from None
    if not model.graph.node and not model.graph.input and not model.graph.output:
        raise OnnxFlopsError(f"{path}: not an ONNX model (no graph found)")
    check_model(model, str(path), names_text=names.text)
    return _imports_as_onnxruntime_reads(model)


def _imports_as_onnxruntime_reads(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` (a copy of its own) importing each domain once, at the version of the last import
    of it and the default domain spelled "": onnxruntime reads a domain imported twice ("" and
    "ai.onnx" being one) at its last import, where onnx's inference keeps "" apart from "ai.onnx"
    (a model importing "" 17, then "ai.onnx" 1, runs at opset 1)."""
    versions = {domain_key(o.domain): o.version for o in model.opset_import}
    if len(versions) == len(model.opset_import):
        return model  # the common case: nothing imported twice, and the spelling kept
    del model.opset_import[:]
    model.opset_import.extend(onnx.helper.make_opsetid(d, v) for d, v in versions.items())
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
        elif isinstance(value, bytes) and field.type == field.TYPE_STRING:
            # proto2 strings are not validated: one that is not UTF-8 comes back as bytes, which
            # a string field refuses. Such a field (a producer, a doc string) is kept readable.
            setattr(dst, field.name, value.decode("utf-8", "backslashreplace"))
        else:
            setattr(dst, field.name, value)


def _is_large(t: onnx.TensorProto) -> bool:
    n = 1
    for d in t.dims:
        n *= d
    return n > MAX_VALUE_ELEMENTS and t.data_location != onnx.TensorProto.EXTERNAL


def _header(t: onnx.TensorProto) -> onnx.TensorProto:
    """The tensor's name, dims and dtype, marked external so nothing tries to read its values."""
    h = onnx.TensorProto(name=t.name, dims=t.dims, data_type=t.data_type,
                         data_location=onnx.TensorProto.EXTERNAL)
    h.external_data.add(key="location", value="<weights not loaded>")
    return h


def _read_without_weights(path: Path, names: NodeNames) -> onnx.ModelProto:
    """Parse an .onnx file, its large initializers reduced to headers without reading their data.

    The file is memory-mapped and its records walked down to the graph's initializers; the runs of
    records between large initializers go to protobuf's parser as they are (parsing records one
    after another merges them: repeated fields append), so peak memory holds no weight bytes.
    `names` is fed the same records, to find the node names text.
    """
    if path.stat().st_size == 0:
        raise ValueError("the file is empty")
    model = onnx.ModelProto()
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        try:
            for number, wire, start, payload, end in _records(data, 0, len(data)):
                if number == _MODEL_GRAPH and wire == _LENGTH_DELIMITED:
                    _merge_graph_without_weights(model.graph, data, payload, end, names)
                else:
                    record = data[start:end]
                    names.model_records(record)
                    model.MergeFromString(record)
        except IndexError:
            raise ValueError("truncated: the file ends inside a record") from None
    return model


def _merge_graph_without_weights(graph: onnx.GraphProto, data: mmap.mmap, begin: int,
                                 end: int, names: NodeNames) -> None:
    unchanged_from = begin
    for _, _, start, payload, stop in _records(data, begin, end, only=_GRAPH_INITIALIZER,
                                               longer_than=_SMALL_TENSOR_RECORD):
        tensor = _tensor_header(data, payload, stop)
        if not _is_large(tensor):
            continue
        _merge_graph_records(graph, data[unchanged_from:start], names)
        graph.initializer.append(_header(tensor))
        _unmap_before(data, stop)
        unchanged_from = stop
    _merge_graph_records(graph, data[unchanged_from:end], names)


def _merge_graph_records(graph: onnx.GraphProto, records: bytes, names: NodeNames) -> None:
    names.graph_records(records)
    graph.MergeFromString(records)


def _tensor_header(data: mmap.mmap, begin: int, end: int) -> onnx.TensorProto:
    """The tensor record's fields but its data."""
    return onnx.TensorProto.FromString(b"".join(
        data[start:stop] for number, _, start, _, stop in _records(data, begin, end)
        if number not in _TENSOR_DATA))


def _unmap_before(data: mmap.mmap, end: int) -> None:
    """Give back the pages before `end`, all read: touching a tensor's header maps pages of weights
    around it (fault-around, large folios), which would otherwise stay resident until the end."""
    if hasattr(mmap, "MADV_DONTNEED"):  # POSIX systems
        data.madvise(mmap.MADV_DONTNEED, 0, end - end % mmap.PAGESIZE)


def _records(data: mmap.mmap, begin: int, end: int, only: int | None = None,
             longer_than: int = -1) -> Iterator[tuple[int, int, int, int, int]]:
    """(field number, wire type, record start, payload start, record end) of each record; with
    `only`, just of that field's length-delimited records whose payload is longer than
    `longer_than` (a graph has a record per node: the others are stepped over in this loop)."""
    wanted = None if only is None else only << 3 | _LENGTH_DELIMITED
    pos = begin
    while pos < end:
        start = pos
        key = data[pos]
        pos += 1
        if key >= 0x80:
            key, pos = _varint(data, start)
        wire = key & 7
        if wire == _LENGTH_DELIMITED:
            size = shift = 0
            while True:  # _varint inline: a call per record would cost a third of the walk
                byte = data[pos]
                pos += 1
                size |= (byte & 0x7F) << shift
                if byte < 0x80:
                    break
                shift += 7
            payload, pos = pos, pos + size
        elif wire == _VARINT:
            payload = pos
            _, pos = _varint(data, pos)
        elif wire in (_FIXED64, _FIXED32):
            payload, pos = pos, pos + (8 if wire == _FIXED64 else 4)
        else:
            raise ValueError(f"unexpected protobuf wire type {wire} at byte {start}")
        if pos > end:
            raise ValueError(f"truncated: a record at byte {start} runs past the end")
        if wanted is None or key == wanted and pos - payload > longer_than:
            yield key >> 3, wire, start, payload, pos


def _varint(data: mmap.mmap, pos: int) -> tuple[int, int]:
    """The varint at `pos` and the position after it; IndexError when the data ends inside it."""
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _shortened(path: str) -> str:
    """A path fit for one line: a 5,000-character one is named by its ends."""
    return path if len(path) <= 200 else f"{path[:100]}...{path[-60:]} ({len(path)} characters)"


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__
