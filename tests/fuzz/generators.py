"""Hostile models made whole, beside the mutations of seeds (mutator.py): the classes a small
mutation never reaches. Each generator takes a random.Random and returns (model bytes, what it
made, the count options the class needs); `large_external_data` also writes a sparse data file.

- function_bomb: local functions that call the one below twice, 12 to 24 levels deep (up to 16
  million nodes once inlined);
- symbolic_chain: Mul/Add/Sub on symbolic dims whose expressions double at each step;
- trip_products: nested Loops whose trip counts multiply past 10^9, up to 30 levels; a Scan
  over up to 100,000 rows;
- large_external_data: an initializer whose external data file is up to 2.2 GB (sparse);
- invalid_graph: well-formed protobuf that onnxruntime refuses to load (a Reshape to another
  element count or to an empty shape, a node writing an initializer, two nodes writing one name,
  a cycle at the top or in a Loop body, a read of what nothing defines, an undefined output, an
  output declared of another element type than its node writes);
- function_opsets: a local function importing another opset of ai.onnx than its model (or a
  model importing none, or an opset no version can be; the domain spelled '' or 'ai.onnx'), its
  node written for one opset or the
  other (ops whose schema changed between them: ReduceMax, ReduceSum, Softmax, Clip, Gelu),
  called or not, in an If branch or not, sometimes with an input or output too many;
- framework_file, llm_config, factory_spec: the other input kinds (.pt2, .keras, .h5, SavedModel
  folders that are not what they say; config.json files claiming impossible sizes; factory specs
  naming nothing or factories that misbehave), run by `count`, `convert`, `profile` or `llm`.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

_OPSET = 17
_vi = helper.make_tensor_value_info


def _model(nodes, inputs, outputs, initializers=(), functions=(), domains=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "generated", inputs, outputs, list(initializers))
    opsets = [helper.make_opsetid("", _OPSET)] + [helper.make_opsetid(d, 1) for d in domains]
    return helper.make_model(graph, opset_imports=opsets, functions=list(functions))


def function_bomb(rng: random.Random, workdir: Path) -> tuple[bytes, str, tuple]:
    depth, fan = rng.randint(12, 24), rng.choice((2, 2, 3))
    opsets = [helper.make_opsetid("", _OPSET), helper.make_opsetid("local", 1)]
    functions = [helper.make_function("local", "f0", ["x"], ["y"],
                                      [helper.make_node(rng.choice(("Relu", "Sigmoid")), ["x"],
                                                        ["y"])], opsets)]
    for level in range(1, depth + 1):
        names = ["x"] + [f"t{i}" for i in range(1, fan)] + ["y"]
        calls = [helper.make_node(f"f{level - 1}", [names[i]], [names[i + 1]], domain="local")
                 for i in range(fan)]
        functions.append(helper.make_function("local", f"f{level}", ["x"], ["y"], calls, opsets))
    model = _model([helper.make_node(f"f{depth}", ["x"], ["y"], domain="local")],
                   [_vi("x", TensorProto.FLOAT, [2, 8])], [_vi("y", TensorProto.FLOAT, None)],
                   functions=functions, domains=["local"])
    return model.SerializeToString(), f"function bomb {fan}^{depth}", ()


def symbolic_chain(rng: random.Random, workdir: Path) -> tuple[bytes, str, tuple]:
    steps = rng.randint(20, 80)
    nodes = [helper.make_node("Shape", ["x"], ["s0"], start=0, end=1),
             helper.make_node("Shape", ["x"], ["u0"], start=1, end=2)]
    for k in range(steps):
        op = rng.choice(("Mul", "Add", "Mul", "Sub"))
        other = rng.choice((f"s{k}", f"u{k}"))
        nodes.append(helper.make_node(op, [f"s{k}", other], [f"s{k + 1}"]))
        nodes.append(helper.make_node("Add", [f"u{k}", f"s{k}"], [f"u{k + 1}"]))
    last = rng.choice(("Expand", "ConstantOfShape", "Reshape"))
    if last == "ConstantOfShape":
        nodes.append(helper.make_node(last, [f"s{steps}"], ["y"]))
    else:
        nodes.append(helper.make_node(last, ["x" if last == "Reshape" else "one", f"s{steps}"],
                                      ["y"]))
    model = _model(nodes, [_vi("x", TensorProto.FLOAT, ["n", "m"]),
                           _vi("one", TensorProto.FLOAT, [1])],
                   [_vi("y", TensorProto.FLOAT, None)])
    return model.SerializeToString(), f"symbolic chain of {steps} ({last})", OPTIONS["gen_symbolic_chain"]


def trip_products(rng: random.Random, workdir: Path) -> tuple[bytes, str, tuple]:
    if rng.random() < 0.3:
        rows = rng.choice((1000, 100_000))
        body = helper.make_graph(
            [helper.make_node("Add", ["state", "row"], ["next"]),
             helper.make_node("Identity", ["next"], ["out"])], "scan_body",
            [_vi("state", TensorProto.FLOAT, [16]), _vi("row", TensorProto.FLOAT, [16])],
            [_vi("next", TensorProto.FLOAT, [16]), _vi("out", TensorProto.FLOAT, [16])])
        scan = helper.make_node("Scan", ["init", "rows"], ["final", "stacked"], body=body,
                                num_scan_inputs=1)
        model = _model([scan], [_vi("init", TensorProto.FLOAT, [16]),
                                _vi("rows", TensorProto.FLOAT, [rows, 16])],
                       [_vi("final", TensorProto.FLOAT, None), _vi("stacked", TensorProto.FLOAT, None)])
        return model.SerializeToString(), f"Scan over {rows} rows", ()
    depth = rng.choice((2, 3, 5, 10, 30))
    trips = [rng.choice((10, 100, 1000, 10**5)) for _ in range(depth)]
    inner = [helper.make_node("Relu", ["v"], ["v_next"])]
    for level in range(depth - 1, -1, -1):
        body = helper.make_graph(
            inner + [helper.make_node("Identity", ["cond"], ["cond_next"])], f"body{level}",
            [_vi(f"i{level}", TensorProto.INT64, []), _vi("cond", TensorProto.BOOL, []),
             _vi("v", TensorProto.FLOAT, [4])],
            [_vi("cond_next", TensorProto.BOOL, []), _vi("v_next", TensorProto.FLOAT, [4])])
        trip = helper.make_node("Constant", [], [f"trip{level}"],
                                value=numpy_helper.from_array(np.array(trips[level], np.int64)))
        inner = [trip, helper.make_node("Loop", [f"trip{level}", "", "v"], ["v_next"], body=body)]
    inner[1].output[0] = "y"
    inner[1].input[2] = "x"
    model = _model(inner, [_vi("x", TensorProto.FLOAT, [4])], [_vi("y", TensorProto.FLOAT, None)])
    return model.SerializeToString(), f"{depth} nested Loops, {np.prod(trips, dtype=float):.0e} trips", ()


def large_external_data(rng: random.Random, workdir: Path) -> tuple[bytes, str, tuple]:
    rows = rng.choice((1024, 65536, 550_000))  # x 1024 float32: 4 MB, 256 MB, 2.2 GB
    data = workdir / f"weights{rng.randrange(10**9)}.bin"
    missing = rng.random() < 0.2
    if not missing:
        with open(data, "wb") as f:
            f.truncate(rows * 1024 * 4)  # sparse: no disk used
    weight = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[rows, 1024],
                         data_location=TensorProto.EXTERNAL)
    weight.external_data.add(key="location", value=data.name)
    model = _model([helper.make_node("Gather", ["w", "ids"], ["y"])],
                   [_vi("ids", TensorProto.INT64, ["batch", 8])],
                   [_vi("y", TensorProto.FLOAT, None)], [weight])
    return model.SerializeToString(), f"external data {rows}x1024 float32" + \
        (" (file missing)" if missing else ""), ()


_INVALID = ("reshape count", "reshape empty", "writes initializer", "two writers", "cycle",
            "loop body cycle", "undefined read", "undefined output", "declared type value_info",
            "declared type output")


def invalid_graph(rng: random.Random, workdir: Path) -> tuple[bytes, str, tuple]:
    kind = rng.choice(_INVALID)
    x = _vi("x", TensorProto.FLOAT, [2, 3])
    y = _vi("y", TensorProto.FLOAT, None)
    relu, sigmoid = helper.make_node("Relu", ["x"], ["y"]), helper.make_node("Sigmoid", ["x"], ["y"])
    if kind.startswith("reshape"):
        shape = [] if kind == "reshape empty" else rng.choice(([4, 2], [7], [3, 3], [1, 5]))
        model = _model([helper.make_node("Reshape", ["x", "shape"], ["y"])], [x], [y],
                       [numpy_helper.from_array(np.array(shape, np.int64), "shape")])
    elif kind == "writes initializer":
        model = _model([helper.make_node("Relu", ["x"], ["w"]), helper.make_node("Add", ["w", "x"], ["y"])],
                       [x], [y], [numpy_helper.from_array(np.ones((2, 3), np.float32), "w")])
    elif kind == "two writers":
        model = _model([relu, sigmoid], [x], [y])
    elif kind == "cycle":
        model = _model([helper.make_node("Add", ["x", "z"], ["y"]),
                        helper.make_node("Relu", ["y"], ["z"])], [x], [y])
    elif kind == "loop body cycle":
        body = helper.make_graph(
            [helper.make_node("Add", ["v", "b"], ["a"]), helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Identity", ["cond"], ["cond_next"])], "body",
            [_vi("i", TensorProto.INT64, []), _vi("cond", TensorProto.BOOL, []),
             _vi("v", TensorProto.FLOAT, [2, 3])],
            [_vi("cond_next", TensorProto.BOOL, []), _vi("b", TensorProto.FLOAT, [2, 3])])
        model = _model([helper.make_node("Loop", ["trip", "", "x"], ["y"], body=body)], [x], [y],
                       [numpy_helper.from_array(np.array(3, np.int64), "trip")])
    elif kind == "undefined read":
        model = _model([helper.make_node("Add", ["x", "nowhere"], ["y"])], [x], [y])
    elif kind.startswith("declared type"):  # onnxruntime: "Type Error: Type (...) of output arg"
        declared = _vi("t", rng.choice((TensorProto.INT64, TensorProto.DOUBLE, TensorProto.FLOAT16)),
                       rng.choice(([2, 3], None, [7])))
        model = _model([helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Relu", ["t"], ["y"])],
                       [x], [y] if kind.endswith("value_info") else [y, declared])
        if kind.endswith("value_info"):
            model.graph.value_info.append(declared)
    else:
        model = _model([relu], [x], [y, _vi("nowhere", TensorProto.FLOAT, [2])])
    return model.SerializeToString(), f"invalid graph: {kind}", ()


def _axes(name: str) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name],
                            value=helper.make_tensor(name, TensorProto.INT64, [1], [1]))


# Bodies (a -> b) of a local function, each written for one opset, by what they are.
_FUNCTION_BODIES = {
    "Relu": lambda: [helper.make_node("Relu", ["a"], ["b"], name="n")],
    "ReduceMax-13 (axes attribute)": lambda: [helper.make_node("ReduceMax", ["a"], ["b"], name="n", axes=[1])],
    "ReduceMax-18 (axes input)": lambda: [_axes("k"), helper.make_node("ReduceMax", ["a", "k"], ["b"], name="n")],
    "ReduceSum-11 (axes attribute)": lambda: [helper.make_node("ReduceSum", ["a"], ["b"], name="n", axes=[1])],
    "ReduceSum-13 (axes input)": lambda: [_axes("k"), helper.make_node("ReduceSum", ["a", "k"], ["b"], name="n")],
    "Softmax": lambda: [helper.make_node("Softmax", ["a"], ["b"], name="n", axis=1)],
    "Clip-6 (bounds attributes)": lambda: [helper.make_node("Clip", ["a"], ["b"], name="n", min=0.0, max=1.0)],
    "Gelu-20": lambda: [helper.make_node("Gelu", ["a"], ["b"], name="n")],
}


def function_opsets(rng: random.Random, workdir: Path) -> tuple[bytes, str, tuple]:
    kind = rng.choice(sorted(_FUNCTION_BODIES))
    body = _FUNCTION_BODIES[kind]()
    inner = rng.choice((6, 11, 13, 17, 18, 20, 0, 2**31)) if rng.random() < 0.1 \
        else rng.choice((6, 11, 13, 17, 18, 20))
    outer = rng.choice((6, 11, 13, 17, 18, 20, None))
    called, branch, extra = rng.random() < 0.8, rng.random() < 0.2, rng.random() < 0.15
    if extra:  # one input or output more than its op takes, or than its function has
        node = body[-1] if rng.random() < 0.5 else None
        if node is not None:
            node.output.append("surplus")
    spelled = rng.choice(("", "", "", "ai.onnx"))  # the function's name of the standard domain
    if rng.random() < 0.1:
        body[-1].domain = "ai.onnx"
    function = helper.make_function("local", "F", ["a"], ["b"], body,
                                    [helper.make_opsetid(spelled, inner)])
    call = helper.make_node("F", ["x", "x"] if extra and node is None else ["x"], ["y"],
                            domain="local", name="call") if called \
        else helper.make_node("Relu", ["x"], ["y"], name="relu")
    x, y = _vi("x", TensorProto.FLOAT, [2, 3, 4]), _vi("y", TensorProto.FLOAT, None)
    nodes = [call]
    if branch:
        call.output[:] = ["t"]
        then = helper.make_graph([call], "then", [], [_vi("t", TensorProto.FLOAT, None)])
        other = helper.make_graph([helper.make_node("Identity", ["x"], ["e"])], "else", [],
                                  [_vi("e", TensorProto.FLOAT, None)])
        nodes = [helper.make_node("Constant", [], ["c"],
                                  value=helper.make_tensor("c", TensorProto.BOOL, [], [True])),
                 helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)]
        if outer is None:
            outer = _OPSET  # the If needs ai.onnx
    opsets = ([helper.make_opsetid("", outer)] if outer else []) + [helper.make_opsetid("local", 1)]
    model = helper.make_model(helper.make_graph(nodes, "generated", [x], [y]),
                              opset_imports=opsets, functions=[function])
    model.ir_version = 8
    return model.SerializeToString(), (
        f"function opsets: {kind}{' of ai.onnx spelled out' if body[-1].domain else ''} in a "
        f"function importing opset {inner}{' of ai.onnx spelled out' if spelled else ''}, the model "
        f"{outer or 'none'}{', called' if called else ''}{' in a branch' if branch else ''}"
        f"{', an input or output too many' if extra else ''}"), ()


# --- other input kinds: each generator writes its input under `workdir` and returns an Invocation
# (what to run on it) in place of count options. -------------------------------------------------

def Invocation(command: str, model: str, *argv: str, kind: str, api: bool = True) -> dict:
    """`onnxflops COMMAND MODEL ARGV...` (MODEL relative to the case's folder, or "spec:" and a
    factory spec) on an input of `kind`; `api`: count(MODEL) too."""
    return {"command": command, "model": model, "argv": argv, "api": api, "env": {},
            "runtime": False, "kind": kind}


def _zip(path: Path, members: dict[str, bytes]) -> None:
    import zipfile
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)


def _junk(rng: random.Random) -> bytes:
    return bytes(rng.randrange(256) for _ in range(rng.choice((0, 7, 512))))


def framework_file(rng: random.Random, workdir: Path) -> tuple[None, str, dict]:
    """A .pt2, .keras, .h5 or SavedModel folder that is not what its name says: random bytes, a
    zip of the wrong archive, a plain torch.save archive, a Keras zip whose config lies."""
    kind = rng.choice(("pt2 junk", "pt2 zip", "pt2 torch.save", "keras junk", "keras zip",
                       "h5 junk", "h5 signature", "savedmodel junk", "savedmodel empty"))
    if kind.startswith("pt2"):
        path = workdir / "model.pt2"
        if kind == "pt2 junk":
            path.write_bytes(_junk(rng))
        elif kind == "pt2 zip":
            _zip(path, {"archive/data.pkl": _junk(rng), "archive/version": b"3\n"})
        else:
            import torch
            torch.save({"w": torch.zeros(2)}, path)
    elif kind.startswith("keras"):
        path = workdir / "model.keras"
        if kind == "keras junk":
            path.write_bytes(_junk(rng))
        else:
            config = rng.choice((b"{", b"[]", b'{"class_name": "Sequential", "config": 7}',
                                 b'{"class_name": "Lambda", "config": {"function": "os.system"}}',
                                 b'{"class_name": "Dense", "config": {"units": -5}}'))
            _zip(path, {"config.json": config, "metadata.json": b"{}",
                        "model.weights.h5": _junk(rng)})
    elif kind.startswith("h5"):
        path = workdir / "model.h5"
        path.write_bytes((b"\x89HDF\r\n\x1a\n" if kind == "h5 signature" else b"") + _junk(rng))
    else:
        path = workdir / "saved"
        path.mkdir()
        if kind == "savedmodel junk":
            (path / "saved_model.pb").write_bytes(_junk(rng))
        (path / "variables").mkdir()
    command = rng.choice(("count", "convert"))
    argv = ("-b", "1") if command == "count" else ("-o", "out.onnx")
    return None, f"framework file: {kind} ({command})", Invocation(
        command, path.name, *argv, kind="SavedModel" if path.is_dir() else path.suffix,
        api=command == "count")


LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 32,
          "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2,
          "num_key_value_heads": 2, "vocab_size": 100, "max_position_embeddings": 64}


def llm_config(rng: random.Random, workdir: Path) -> tuple[None, str, dict]:
    """A transformers config.json claiming what no model has (negative, zero, vast or non-numeric
    sizes, an unknown model type), or no JSON at all; in a file or a folder."""
    config = dict(LLAMA)
    field = rng.choice(sorted(config))
    value = rng.choice((-1, 0, 10**9, 2**63, 1.5, "32", None, [], {"a": 1}, "gpt-0"))
    config[field] = value
    text = json.dumps(config) if rng.random() < 0.85 else rng.choice(("{", "", "[]", "null"))
    folder = rng.random() < 0.3
    path = workdir / ("model" if folder else "config.json")
    if folder:
        path.mkdir()
        (path / "config.json").write_text(text)
    else:
        path.write_text(text)
    argv = ("--prompt", rng.choice(("8", "0", "-3", "99999999")), "--generate", "4",
            "--hardware", rng.choice(("h100", "cpu")), "--dtype", "fp32")
    return None, f"llm config: {field}={value!r}", Invocation("llm", path.name, *argv, kind="config.json",
                                                                 api=False)


_FACTORIES = {
    "returns None": "def make():\n    return None\n",
    "returns a number": "def make():\n    return 3\n",
    "raises": "def make():\n    raise RuntimeError('factory broke')\n",
    "exits": "def make():\n    raise SystemExit(9)\n",
    "takes arguments": "def make(a, b):\n    return a\n",
    "fails at import": "raise ImportError('no')\ndef make():\n    return None\n",
    "not callable": "make = 5\n",
    "returns a module": "import os\ndef make():\n    return os\n",
}


def factory_spec(rng: random.Random, workdir: Path) -> tuple[None, str, dict]:
    """A package.module:factory spec that names nothing, or a factory that misbehaves."""
    kind = rng.choice(sorted(_FACTORIES) + ["no module", "no attribute", "odd spec"])
    module = f"fuzzfactory{rng.randrange(10**9)}"
    if kind in _FACTORIES:
        (workdir / f"{module}.py").write_text(_FACTORIES[kind])
        spec = f"{module}:make"
    elif kind == "no module":
        spec = f"{module}.missing:make"
    elif kind == "no attribute":
        spec = "os.path:no_such_factory"
    else:
        spec = rng.choice((":", "a:b:c", "os:", ":make", "os.path:join(1)"))
    command = rng.choice(("count", "count", "convert", "profile"))
    argv = {"count": ("-b", "1"), "convert": ("-o", "out.onnx"),
            "profile": ("-b", "1", "--runs", "1", "--warmup", "0", "--no-ceilings")}[command]
    return None, f"factory spec: {kind} ({command})", Invocation(
        command, "spec:" + spec, *argv, kind="factory spec", api=command == "count")


# The generators whose cases are other input kinds (an Invocation each).
INVOCATIONS = frozenset(("gen_framework_file", "gen_llm_config", "gen_factory_spec"))
# The count options a generator's cases always take.
OPTIONS = {"gen_symbolic_chain": ("--symbolic",)}

GENERATORS = {"gen_function_bomb": function_bomb, "gen_symbolic_chain": symbolic_chain,
              "gen_trip_products": trip_products, "gen_large_external_data": large_external_data,
              "gen_invalid_graph": invalid_graph, "gen_function_opsets": function_opsets,
              "gen_framework_file": framework_file,
              "gen_llm_config": llm_config, "gen_factory_spec": factory_spec}
