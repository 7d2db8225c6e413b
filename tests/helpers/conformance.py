"""ONNX's own backend test models, counted: the conformance suite.

The onnx wheel ships the node tests as their Python definitions (onnx.backend.test.case.node),
not as files, and the simple, pytorch-converted, pytorch-operator and light "real" models as
files. `backend_cases` writes the node tests once per onnx version to a cache under the temp dir
(a model and the shapes its test data feed), and lists them with the shipped ones. `outcome`
counts one case with the shapes its data give, as a user would bind them.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import pkgutil
import re
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

SHIPPED = Path(onnx.__file__).parent / "backend" / "test" / "data"
SHIPPED_KINDS = ("simple", "pytorch-converted", "pytorch-operator")


@dataclass
class Case:
    name: str
    kind: str  # node, simple, pytorch-converted, pytorch-operator, real
    path: Path  # the model file
    inputs: dict  # input name -> shape, or ("seq", [shapes]), or ("optional", shape or None)
    outputs: list = field(default_factory=list)  # the shapes the test data's outputs have

    def model(self) -> onnx.ModelProto:
        return onnx.load(str(self.path))


def _spec(value, type_proto: onnx.TypeProto):
    """What an input's test value binds: a shape, a sequence of shapes, or an optional's."""
    which = type_proto.WhichOneof("value")
    if which == "sequence_type" or isinstance(value, list):
        return ["seq", [_spec(v, type_proto.sequence_type.elem_type) for v in value]]
    if which == "optional_type":
        inner = None if value is None else _spec(value, type_proto.optional_type.elem_type)
        return ["optional", inner]
    if isinstance(value, onnx.TensorProto):
        return list(value.dims)
    return list(np.shape(value))


def _cache_dir() -> Path:
    root = os.environ.get("ONNXFLOPS_BACKEND_CACHE") or tempfile.gettempdir()
    return Path(root) / f"onnxflops-backend-node-{onnx.__version__}"


def node_modules() -> list[str]:
    """The modules of onnx's node test definitions (each defines the tests of one op or two)."""
    from onnx.backend.test.case import node as definitions

    return sorted(name.removeprefix(definitions.__name__ + ".") for _, name, package
                  in pkgutil.walk_packages(definitions.__path__, definitions.__name__ + ".")
                  if not package)


def _written_module(module: str) -> dict:
    """The node tests one module defines, written once as model files with the shapes of
    their data; importing a module runs its definitions, which register the tests."""
    from onnx.backend.test.case import node as definitions

    target = _cache_dir() / module
    index_file = target / "index.json"
    if index_file.exists():
        return json.loads(index_file.read_text())
    target.mkdir(parents=True, exist_ok=True)
    before = len(definitions._NodeTestCases)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        importlib.import_module(f"{definitions.__name__}.{module}")
    index = {}
    for case in definitions._NodeTestCases[before:]:
        inputs, outputs = case.data_sets[0]
        graph = case.model.graph
        onnx.save(case.model, str(target / f"{case.name}.onnx"))
        index[case.name] = {
            "inputs": {vi.name: _spec(v, vi.type) for vi, v in zip(graph.input, inputs)},
            "outputs": [_spec(v, vi.type) for vi, v in zip(graph.output, outputs)]}
    partial = target / f"index.json.{os.getpid()}"
    partial.write_text(json.dumps(index))
    partial.replace(index_file)
    return index


def node_cases(modules: list[str] | None = None) -> list[Case]:
    """The node tests of these definition modules (default: all), by name; a module this onnx
    does not define (an older onnx names some otherwise) is left out."""
    cases = []
    defined = node_modules()
    for module in [m for m in modules if m in defined] if modules is not None else defined:
        index = _written_module(module)
        cases += [Case(name, "node", _cache_dir() / module / f"{name}.onnx", entry["inputs"],
                       entry["outputs"]) for name, entry in index.items()]
    return sorted(cases, key=lambda c: c.name)


def shipped_cases() -> list[Case]:
    """The models the wheel ships as files: simple, pytorch-converted, pytorch-operator and the
    light versions of the real ones."""
    cases = []
    for kind in SHIPPED_KINDS:
        for directory in sorted((SHIPPED / kind).iterdir()):
            model_file = directory / "model.onnx"
            if not model_file.exists():
                continue
            model = onnx.load(str(model_file), load_external_data=False)
            data = directory / "test_data_set_0"
            real = [vi for vi in model.graph.input
                    if vi.name not in {t.name for t in model.graph.initializer}]
            inputs = {}
            for j, vi in enumerate(real):
                pb = data / f"input_{j}.pb"
                if pb.exists() and vi.type.HasField("tensor_type"):
                    tensor = onnx.TensorProto()
                    tensor.ParseFromString(pb.read_bytes())
                    inputs[vi.name] = list(tensor.dims)
            cases.append(Case(directory.name, kind, model_file, inputs))
    for model_file in sorted((SHIPPED / "light").glob("*.onnx")):
        cases.append(Case(model_file.stem, "real", model_file, {}))
    return cases


def backend_cases() -> list[Case]:
    """Every backend test model the onnx wheel defines or ships."""
    return node_cases() + shipped_cases()


def binding(case: Case, model: onnx.ModelProto) -> dict:
    """What a user binds, as the Python API takes it: the shape its data gives each input whose
    shape the model leaves open (a tensor's; an optional's element, or where it holds
    nothing: None), a sequence's element shapes (onnxflops.SequenceShape). An input the model
    declares in full is left to its declaration."""
    from onnxflops import SequenceShape

    def bound(spec):
        if isinstance(spec, list) and spec and spec[0] == "seq":
            return SequenceShape(bound(element) for element in spec[1])
        if isinstance(spec, list) and spec and spec[0] == "optional":
            return None if spec[1] is None else bound(spec[1])
        return tuple(spec)

    declared = {vi.name for vi in model.graph.input if _fully_declared(vi.type)}
    return {name: bound(spec) for name, spec in case.inputs.items() if name not in declared}


def _fully_declared(type_proto: onnx.TypeProto) -> bool:
    tensor = type_proto.tensor_type
    return type_proto.HasField("tensor_type") and tensor.HasField("shape") \
        and all(d.HasField("dim_value") for d in tensor.shape.dim)


@dataclass
class Outcome:
    status: str  # counted, uncosted, refused, error
    message: str = ""
    macs: int | None = None
    uncosted: list = field(default_factory=list)


def outcome(case: Case) -> Outcome:
    """Count the case as `onnxflops count MODEL --input ...` would."""
    from onnxflops.api import count_with_model
    from onnxflops.errors import OnnxFlopsError

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = case.model()
            report = count_with_model(model, binding(case, model), keep_bound=False).report
    except OnnxFlopsError as e:
        return Outcome("refused", str(e))
    except Exception as e:  # noqa: BLE001 - what the suite looks for
        return Outcome("error", f"{type(e).__name__}: {e}")
    if report.uncosted:
        return Outcome("uncosted", report.uncosted_summary(1), report.total.macs,
                       [u.op_type for u in report.uncosted])
    return Outcome("counted", "", report.total.macs)


def onnxruntime_loads(case: Case) -> str | None:
    """None where onnxruntime makes a session of the model; else its first line of refusal."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 4
    try:
        onnxruntime.InferenceSession(str(case.path), options, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - onnxruntime's refusals are of many types
        return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return None


# The contractions of the node tests, MACs from the shapes of their test data alone.

def _attr(node: onnx.NodeProto, name: str, default=None):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def expected_macs(case: Case) -> int | None:
    """The MACs of a one-node contraction test (or its function's expanded test), from its
    data's shapes; None for other tests."""
    if case.kind != "node":
        return None
    # A function's expanded test computes what the op's own test does, on the same data.
    own = case.path.with_name(re.sub(r"_expanded(_ver\d+)?$", "", case.name) + ".onnx")
    model = onnx.load(str(own), load_external_data=False)
    if len(model.graph.node) != 1:
        return None
    node = model.graph.node[0]
    present = [name for name in node.input]
    shapes = {vi.name: case.inputs[vi.name] for vi in model.graph.input if vi.name in case.inputs}

    def shape(slot: int):
        return shapes[present[slot]] if slot < len(present) and present[slot] else None

    out = case.outputs[0] if case.outputs else None
    op = node.op_type
    if op in ("MatMul", "MatMulInteger"):
        return math.prod(out) * shape(0)[-1]
    if op == "QLinearMatMul":
        return math.prod(out) * shape(0)[-1]
    if op == "Gemm":
        a, b = shape(0), shape(1)
        m, k = (a[1], a[0]) if _attr(node, "transA", 0) else (a[0], a[1])
        n = b[0] if _attr(node, "transB", 0) else b[1]
        return m * n * k
    if op in ("Conv", "ConvInteger", "QLinearConv"):
        w = shape(3 if op == "QLinearConv" else 1)
        return math.prod(out) * math.prod(w[1:])  # each output: (C_in/group)·prod(kernel) products
    if op == "ConvTranspose":
        w = shape(1)
        return math.prod(shape(0)) * math.prod(w[1:])  # each input scattered by C_out/group·kernel
    if op == "Einsum":
        return _einsum_macs(_attr(node, "equation").decode(), [shape(i) for i in range(len(present))])
    if op in ("RNN", "GRU", "LSTM"):
        gates = {"RNN": 1, "GRU": 3, "LSTM": 4}[op]
        x = shape(0)
        steps, batch = (x[1], x[0]) if _attr(node, "layout", 0) else (x[0], x[1])
        directions = 2 if _attr(node, "direction", b"forward") == b"bidirectional" else 1
        hidden = _attr(node, "hidden_size")
        return steps * directions * batch * gates * hidden * (x[-1] + hidden)
    if op == "Attention":
        return _attention_macs(node, shape)
    if op == "FlexAttention":  # Q·Kᵀ and P·V: B·Hq·L·S·(E + Ev)
        q, k, v = shape(0), shape(1), shape(2)
        return q[0] * q[1] * q[2] * k[2] * (q[3] + v[3])
    return None


def _einsum_macs(equation: str, shapes: list) -> int:
    """Two operands: one product over every index (each output element sums its contracted
    indices); one operand: no product (a sum or a copy)."""
    lhs = equation.replace(" ", "").split("->")[0]
    terms = lhs.split(",")
    if len(terms) == 1:
        return 0
    assert len(terms) == 2 and "..." not in lhs, equation  # what the node tests hold
    sizes = {}
    for term, dims in zip(terms, shapes):
        for letter, d in zip(term, dims):
            sizes[letter] = max(sizes.get(letter, 1), d)
    return math.prod(sizes.values())


def _attention_macs(node: onnx.NodeProto, shape) -> int:
    """Q·Kᵀ and P·V per query head: B·H_q·S_q·S_kv·(d_qk + d_v), S_kv past and new keys."""
    q, k, v = shape(0), shape(1), shape(2)
    past = shape(4)
    if len(q) == 3:  # (B, S, H·d): heads from the attributes
        heads_q, heads_kv = _attr(node, "q_num_heads"), _attr(node, "kv_num_heads")
        batch, s_q, d_qk = q[0], q[1], q[2] // heads_q
        s_kv, d_v = k[1], v[2] // heads_kv
    else:
        batch, heads_q, s_q, d_qk = q
        s_kv, d_v = k[2], v[3]
    if past is not None:
        s_kv += past[2]
    return batch * heads_q * s_q * s_kv * (d_qk + d_v)


CONTRACTIONS = ("MatMul", "MatMulInteger", "QLinearMatMul", "Gemm", "Conv", "ConvInteger",
                "QLinearConv", "ConvTranspose", "Einsum", "RNN", "GRU", "LSTM", "Attention",
                "FlexAttention")
