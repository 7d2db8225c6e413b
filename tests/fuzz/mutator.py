"""Mutations of seed .onnx files, as an attacker or a careless exporter would make them.

Used by the property tests (tests/fuzz/) and by the long runner (tools/fuzz.py). A case is a seed
name and an integer: `mutate(seed_bytes, random.Random(case))` makes the same bytes every time, so
any case the runner reports is replayed with `python tools/fuzz.py --replay SEED:CASE`.

Byte mutations: bit flips, truncation, junk, duplicated chunks, huge length prefixes, names made
invalid UTF-8. Structural mutations (on the parsed model, in the main graph or a nested Loop/If/Scan
body): dims (0, negative, up to 2^63-1, rank changes), dtypes (undefined, unknown), attributes
(removed, wrong type, out-of-range), op types and domains, dangling inputs, duplicate and empty
names, cycles, deleted nodes/inputs/outputs/initializers, opsets (0, 1, 99, 2^40), initializer dims
and values against their data, recursive functions.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Callable

import onnx
from onnx import AttributeProto, TensorProto, helper

SEEDS_DIR = Path(__file__).resolve().parent / "seeds"

HUGE = (2**31 - 1, 2**31, 2**32, 2**40, 2**62, 2**63 - 1)
ODD_INTS = (0, -1, -2, -(2**31), 1, 2, 3, 7, 2**30) + HUGE
ODD_DIMS = (0, -1, -7, 1, 3, 1000, 10**9) + HUGE
ODD_DTYPES = (0, 1, 2, 6, 7, 9, 10, 11, 16, 17, 21, 22, 23, 24, 25, 26, 99, 2**20)
ODD_OPSETS = (0, 1, 5, 7, 11, 13, 99, 2**40)
DOMAINS = ("", "ai.onnx", "ai.onnx.ml", "com.microsoft", "ai.onnx.preview.training", "bogus",
           "pkg.onnxscript.torch_lib")
OP_TYPES = ("Conv", "ConvTranspose", "Gemm", "MatMul", "Einsum", "MaxPool", "AveragePool", "LRN",
            "LSTM", "GRU", "RNN", "Scan", "Loop", "If", "Resize", "TopK", "NonMaxSuppression",
            "Attention", "LayerNormalization", "BatchNormalization", "Softmax", "Reshape", "Expand",
            "Tile", "Gather", "Slice", "Pad", "ConstantOfShape", "Range", "Split", "Concat",
            "ReduceSum", "CumSum", "DFT", "STFT", "QLinearConv", "MatMulInteger", "Unique",
            "NoSuchOp", "", "Identity", "Relu", "Add", "Where", "Cast", "Shape", "Size", "Trilu",
            "GridSample", "RoiAlign", "Col2Im", "CenterCropPad", "Compress", "OneHot")


# --- helpers -----------------------------------------------------------------------------------

def graphs_of(model: onnx.ModelProto) -> list[onnx.GraphProto]:
    """The main graph, every nested Loop/If/Scan body, and the graphs inside functions' nodes."""
    found = []

    def visit(g: onnx.GraphProto) -> None:
        found.append(g)
        for n in g.node:
            for a in n.attribute:
                if a.type == AttributeProto.GRAPH:
                    visit(a.g)
                for sub in a.graphs:
                    visit(sub)
    visit(model.graph)
    return found


def _nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    nodes = [n for g in graphs_of(model) for n in g.node]
    return nodes + [n for f in model.functions for n in f.node]


def _value_infos(g: onnx.GraphProto) -> list[onnx.ValueInfoProto]:
    return list(g.input) + list(g.output) + list(g.value_info)


def _tensor_types(model: onnx.ModelProto) -> list[onnx.TypeProto.Tensor]:
    return [vi.type.tensor_type for g in graphs_of(model) for vi in _value_infos(g)
            if vi.type.HasField("tensor_type")]


def _names(model: onnx.ModelProto) -> list[str]:
    names = set()
    for g in graphs_of(model):
        names.update(v.name for v in _value_infos(g))
        names.update(t.name for t in g.initializer)
        for n in g.node:
            names.update(n.input)
            names.update(n.output)
    return sorted(names)


def _random_node(model: onnx.ModelProto, rng: random.Random) -> onnx.NodeProto | None:
    nodes = _nodes(model)
    return rng.choice(nodes) if nodes else None


def _odd_int(rng: random.Random) -> int:
    return rng.choice(ODD_INTS)


# --- structural mutations: each changes `model` in place and says what it did ------------------

def mutate_dim(model, rng):
    types = [t for t in _tensor_types(model) if t.HasField("shape")]
    if not types:
        return None
    shape = rng.choice(types).shape
    choice = rng.random()
    if choice < 0.2 or not shape.dim:
        for _ in range(rng.choice((1, 2, 5))):
            shape.dim.add().dim_value = rng.choice((1, 2, 3))
        return "rank raised"
    if choice < 0.35:
        del shape.dim[rng.randrange(len(shape.dim))]
        return "rank lowered"
    if choice < 0.45:
        shape.ClearField("dim")
        return "rank 0"
    d = rng.choice(shape.dim)
    if choice < 0.55:
        d.dim_param = rng.choice(("", "batch", "N", "-1", "1.5", "\u00e9", "x" * 200))
        return f"dim_param {d.dim_param!r}"
    d.dim_value = rng.choice(ODD_DIMS)
    return f"dim {d.dim_value}"


def mutate_dtype(model, rng):
    types = _tensor_types(model)
    inits = [t for g in graphs_of(model) for t in g.initializer]
    if rng.random() < 0.5 and inits:
        t = rng.choice(inits)
        t.data_type = rng.choice(ODD_DTYPES)
        return f"initializer dtype {t.data_type}"
    if not types:
        return None
    t = rng.choice(types)
    t.elem_type = rng.choice(ODD_DTYPES)
    return f"elem_type {t.elem_type}"


def mutate_attribute(model, rng):
    nodes = [n for n in _nodes(model) if n.attribute]
    if not nodes:
        return None
    n = rng.choice(nodes)
    a = rng.choice(n.attribute)
    choice = rng.random()
    if choice < 0.3:
        n.attribute.remove(a)
        return f"{n.op_type}: attribute {a.name} removed"
    if choice < 0.55:
        kind = rng.choice(("tensor", "string", "floats", "ints_empty", "graph", "float"))
        name = a.name
        n.attribute.remove(a)
        if kind == "tensor":
            new = helper.make_attribute(name, helper.make_tensor("t", TensorProto.INT64, [2], [3, 3]))
        elif kind == "string":
            new = helper.make_attribute(name, "junk")
        elif kind == "floats":
            new = helper.make_attribute(name, [1.5, -2.0])
        elif kind == "ints_empty":
            new = AttributeProto(name=name, type=AttributeProto.INTS)
        elif kind == "float":
            new = helper.make_attribute(name, 1e30)
        else:
            new = helper.make_attribute(name, helper.make_graph([], "empty", [], []))
        n.attribute.append(new)
        return f"{n.op_type}: attribute {name} as {kind}"
    if a.type == AttributeProto.INT:
        a.i = _odd_int(rng)
        return f"{n.op_type}: {a.name}={a.i}"
    if a.type == AttributeProto.INTS:
        if a.ints and rng.random() < 0.7:
            a.ints[rng.randrange(len(a.ints))] = _odd_int(rng)
        else:
            a.ints.append(_odd_int(rng))
        return f"{n.op_type}: {a.name}={list(a.ints)}"
    if a.type == AttributeProto.FLOAT:
        a.f = rng.choice((0.0, -1.0, float("inf"), float("nan"), 1e38))
        return f"{n.op_type}: {a.name}={a.f}"
    if a.type == AttributeProto.STRING:
        a.s = rng.choice((b"", b"junk", b"\xff\xfe", b"ij,jk->", b"...,->", b"NOTSET"))
        return f"{n.op_type}: {a.name}={a.s!r}"
    a.type = rng.choice((AttributeProto.UNDEFINED, AttributeProto.INT, AttributeProto.SPARSE_TENSOR))
    return f"{n.op_type}: {a.name} type {a.type}"


def add_attribute(model, rng):
    n = _random_node(model, rng)
    if n is None:
        return None
    name = rng.choice(("kernel_shape", "strides", "pads", "dilations", "group", "axis", "axes",
                       "num_scan_inputs", "size", "equation", "transA", "transB", "hidden_size",
                       "direction", "perm", "body", "junk"))
    n.attribute.append(helper.make_attribute(name, rng.choice((
        _odd_int(rng), [_odd_int(rng)], [_odd_int(rng)] * rng.choice((1, 2, 4, 9)), "junk",
        1.5, b"...,->"))))
    return f"{n.op_type}: added {name}"


def mutate_op(model, rng):
    n = _random_node(model, rng)
    if n is None:
        return None
    if rng.random() < 0.7:
        old, n.op_type = n.op_type, rng.choice(OP_TYPES)
        return f"{old} -> {n.op_type}"
    n.domain = rng.choice(DOMAINS)
    return f"{n.op_type} domain {n.domain!r}"


def mutate_edge(model, rng):
    """Dangling inputs, duplicate and empty names, cycles."""
    graph = rng.choice(graphs_of(model))
    nodes = list(graph.node)
    if not nodes:
        return None
    n = rng.choice(nodes)
    choice = rng.random()
    if choice < 0.25 and n.input:
        i = rng.randrange(len(n.input))
        n.input[i] = rng.choice(("dangling", "", n.input[i] + "_missing"))
        return f"{n.op_type}: input {i} -> {n.input[i]!r}"
    if choice < 0.45 and n.output:
        names = _names(model)
        i = rng.randrange(len(n.output))
        n.output[i] = rng.choice(names + [""])
        return f"{n.op_type}: output {i} -> {n.output[i]!r}"
    if choice < 0.7 and n.input:
        later = nodes[nodes.index(n):]
        outputs = [o for m in later for o in m.output if o]
        if outputs:
            n.input[rng.randrange(len(n.input))] = rng.choice(outputs)
            return f"{n.op_type}: cycle"
    if choice < 0.85:
        n.name = rng.choice(("", nodes[0].name, "/" * 50, "a/b/../c", "x" * 1000))
        return f"node name {n.name[:20]!r}"
    n.input.append(rng.choice(_names(model) + [""]))
    return f"{n.op_type}: extra input"


def delete_something(model, rng):
    graph = rng.choice(graphs_of(model))
    fields = [f for f in ("node", "input", "output", "initializer", "value_info")
              if len(getattr(graph, f))]
    if not fields:
        return None
    field = rng.choice(fields)
    items = getattr(graph, field)
    del items[rng.randrange(len(items))]
    return f"deleted a graph {field}"


def mutate_opset(model, rng):
    choice = rng.random()
    if choice < 0.6 and model.opset_import:
        op = rng.choice(model.opset_import)
        op.version = rng.choice(ODD_OPSETS)
        return f"opset {op.domain!r} {op.version}"
    if choice < 0.8:
        model.opset_import.add(domain=rng.choice(DOMAINS), version=rng.choice(ODD_OPSETS))
        return "extra opset"
    model.ClearField("opset_import")
    return "no opset import"


def mutate_initializer(model, rng):
    inits = [t for g in graphs_of(model) for t in g.initializer]
    if not inits:
        return None
    t = rng.choice(inits)
    choice = rng.random()
    if choice < 0.4:
        if t.dims and rng.random() < 0.7:
            t.dims[rng.randrange(len(t.dims))] = rng.choice(ODD_DIMS)
        else:
            t.dims.append(rng.choice(ODD_DIMS))
        return f"initializer {t.name} dims {list(t.dims)}"
    if choice < 0.6:
        t.ClearField("dims")
        return f"initializer {t.name} scalar"
    if choice < 0.8:
        # Values the model reads: trip counts, shapes, axes, pads.
        if t.data_type in (TensorProto.INT64, TensorProto.INT32) and not t.raw_data:
            values = [_odd_int(rng) for _ in range(max(1, len(t.int64_data) or len(t.int32_data)))]
            t.ClearField("int64_data")
            t.ClearField("int32_data")
            if t.data_type == TensorProto.INT64:
                t.int64_data.extend(values)
            else:
                t.int32_data.extend(max(-(2**31), min(2**31 - 1, v)) for v in values)
            return f"initializer {t.name} values {values}"
        if t.raw_data:
            raw = bytearray(t.raw_data)
            raw[rng.randrange(len(raw))] = rng.randrange(256)
            t.raw_data = bytes(raw[:rng.randrange(len(raw) + 1)] if rng.random() < 0.3 else raw)
            return f"initializer {t.name} raw data changed"
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value=rng.choice(("../../etc/passwd", "/dev/zero", "x.bin")))
    return f"initializer {t.name} external"


def add_function(model, rng):
    """A local function calling itself (or another that calls it back), used by the graph."""
    domain = "local"
    model.opset_import.add(domain=domain, version=1)
    recursive = rng.random() < 0.6
    f = helper.make_function(domain, "F", ["a"], ["b"],
                             [helper.make_node("F" if recursive else "Relu", ["a"], ["b"],
                                               domain=domain if recursive else "")],
                             [helper.make_opsetid("", 17), helper.make_opsetid(domain, 1)])
    model.functions.append(f)
    graph = rng.choice(graphs_of(model))
    names = _names(model)
    graph.node.append(helper.make_node("F", [rng.choice(names)], ["f_out"], domain=domain))
    return "recursive function" if recursive else "function"


def _odd_count(rng: random.Random):
    return rng.choice((-1, -(2**40), 0, 2**50 + 1, 2**63, 1.5, "12", None, [3], float("nan")))


def mutate_metadata(model, rng):
    """Untrusted metadata: a weight-roles record (load/weight_roles.py) that lies or is no JSON,
    or producer fields and metadata of odd text and size."""
    names = [t.name for g in graphs_of(model) for t in g.initializer] or ["w"]
    choice = rng.random()
    if choice < 0.6:
        name = rng.choice(names)
        record = {"parameters": {name: "p"}, "buffers": {}, "sizes": {"p": _odd_count(rng)},
                  "constants": [], "exhaustive": rng.choice((True, False, "yes", None))}
        field = rng.choice(("sizes", "unused", "unread_buffers", "parameters", "constants",
                            "buffers", "exhaustive"))
        record[field] = rng.choice(({"p": _odd_count(rng)}, [name], name, 7, None,
                                    {name: {"deep": [1]}}, {"": -1}))
        text = json.dumps(record) if rng.random() < 0.8 else rng.choice(
            ("{", "[]", "null", "1e999", '{"parameters": 3}', "\x00" * 9))
        model.metadata_props.add(key="onnxflops.weight_roles", value=text)
        return f"weight roles: {text[:60]}"
    if choice < 0.8:
        field = rng.choice(("producer_name", "producer_version", "domain", "doc_string"))
        setattr(model, field, rng.choice(("", "x" * 100_000, "\n\r\x00", "é" * 50, "-1")))
        return f"{field} odd"
    model.metadata_props.add(key=rng.choice(("", "onnxflops.layers", "x" * 1000, "\n")),
                             value=rng.choice(("", "{}", "[1,", "y" * 100_000)))
    return "metadata property"


STRUCTURAL: tuple[Callable, ...] = (mutate_dim, mutate_dtype, mutate_attribute, add_attribute,
                                    mutate_op, mutate_edge, delete_something, mutate_opset,
                                    mutate_initializer, add_function, mutate_metadata)


# --- byte mutations ----------------------------------------------------------------------------

def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def mutate_bytes(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    buf = bytearray(data)
    choice = rng.randrange(7)
    if choice == 0 and buf:
        for _ in range(rng.choice((1, 2, 8))):
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        return bytes(buf), "bit flips"
    if choice == 1:
        return bytes(buf[:rng.randrange(len(buf) + 1)]), "truncated"
    if choice == 2:
        at = rng.randrange(len(buf) + 1)
        junk = bytes(rng.randrange(256) for _ in range(rng.choice((1, 4, 64))))
        return bytes(buf[:at] + junk + buf[at:]), "junk inserted"
    if choice == 3 and buf:
        a = rng.randrange(len(buf))
        b = min(len(buf), a + rng.choice((4, 32, 256)))
        return bytes(buf[:b] + buf[a:b] + buf[b:]), "chunk duplicated"
    if choice == 4:
        # A length-delimited record (graph, initializer, raw_data) claiming an absurd length.
        field = rng.choice((7, 5, 9, 1))
        record = _varint(field << 3 | 2) + _varint(rng.choice(HUGE)) + b"\x00" * 8
        at = rng.choice((0, len(buf), rng.randrange(len(buf) + 1)))
        return bytes(buf[:at] + record + buf[at:]), "huge length prefix"
    if choice == 5:
        # A name's bytes made invalid UTF-8 (protobuf parses them; the names come back as bytes).
        words = [w for w in (b"x", b"w", b"input", b"Conv", b"body", b"h_in", b"row", b"/")
                 if w in buf]
        if words:
            word = rng.choice(words)
            at = buf.find(word, rng.randrange(len(buf)))
            at = at if at >= 0 else buf.find(word)
            buf[at] = rng.choice((0xFF, 0xC3, 0x80, 0xED))
            return bytes(buf), "invalid UTF-8 name"
    return bytes(rng.randrange(256) for _ in range(rng.choice((0, 1, 16, 512)))), "random bytes"


# --- one case ----------------------------------------------------------------------------------

def mutate(data: bytes, rng: random.Random) -> tuple[bytes, list[str]]:
    """`data` mutated one to three times: structurally (mostly) or byte-wise."""
    done = []
    if rng.random() < 0.75:
        model = onnx.load_from_string(data)
        for _ in range(rng.choice((1, 1, 2, 3))):
            try:
                what = rng.choice(STRUCTURAL)(model, rng)
            except (ValueError, TypeError, IndexError):  # a value protobuf refuses to hold
                continue
            if what:
                done.append(what)
        data = model.SerializeToString()
    if not done or rng.random() < 0.1:
        data, what = mutate_bytes(data, rng)
        done.append(what)
    return data, done


def load_seeds() -> dict[str, bytes]:
    return {p.stem: p.read_bytes() for p in sorted(SEEDS_DIR.glob("*.onnx"))}


def case_bytes(seeds: dict[str, bytes], seed: str, case: int) -> tuple[bytes, list[str]]:
    return mutate(seeds[seed], random.Random(f"{seed}:{case}"))
