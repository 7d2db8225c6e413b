"""Old-vs-new differential: every model the tests, the pairs and the bench build, counted three ways.

    python tools/differential.py collect DIR   # run the test suite once, keeping each model it
                                               # counts, and build the bench models, into DIR
    PYTHONPATH=CHECKOUT python tools/differential.py count DIR OUT.json
                                               # count each model the default way, with
                                               # --training and with --convention exact
    python tools/differential.py diff A.json B.json

The models are collected once, so both checkouts count the very same files. `collect` runs the
suite with this file as a pytest plugin: it keeps the model (after any conversion) and the inputs
and batch of every count the tests make in-process; then it converts every pair of models/ from
Keras and with both torch exporters (most are the parity tests' models again: kept once), and
builds the bench models.
A count that fails records its error's first line, so a changed error is a difference too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
REPO = TOOLS.parent
WAYS = {"default": {}, "training": {"training": True}, "exact": {"convention": "exact"}}


# -- collect --------------------------------------------------------------------------------------

def pytest_configure(config) -> None:
    """As a pytest plugin: wrap the pipeline's binding step, which sees every model counted."""
    directory = os.environ.get("DIFFERENTIAL_DIR")
    if not directory:
        return
    import onnxflops.api as api

    bind_inputs = api.bind_inputs

    def keeping(proto, inputs=None, batch=None, *args, **kwargs):
        try:
            _keep(Path(directory), proto, inputs, batch, kwargs.get("allow_unbound", False))
        except (TypeError, ValueError):  # bindings a test makes wrong on purpose: bind says so
            pass
        return bind_inputs(proto, inputs, batch, *args, **kwargs)

    api.bind_inputs = keeping


def _keep(directory: Path, proto, inputs, batch, symbolic: bool) -> None:
    data = proto.SerializeToString()
    bindings = {"inputs": _plain_inputs(inputs), "batch": batch, "symbolic": bool(symbolic)}
    key = hashlib.sha256(data + json.dumps(bindings, sort_keys=True).encode()).hexdigest()[:16]
    path = directory / f"test-{key}.onnx"
    if not path.exists():
        path.write_bytes(data)
        (directory / f"test-{key}.json").write_text(json.dumps(bindings, sort_keys=True))


def _plain_inputs(inputs):
    if inputs is None:
        return None
    if isinstance(inputs, dict):
        return {name: [_plain_dim(d) for d in _shape(v)] for name, v in inputs.items()}
    return [[_plain_dim(d) for d in _shape(v)] for v in inputs]


def _shape(value):
    return list(value.shape) if hasattr(value, "shape") else list(value)


def _plain_dim(dim):
    return dim if isinstance(dim, str) else int(dim)


def collect(directory: Path, pytest_args: list[str]) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, DIFFERENTIAL_DIR=str(directory.resolve()),
               PYTHONPATH=os.pathsep.join(p for p in (str(REPO), str(TOOLS),
                                                      os.environ.get("PYTHONPATH")) if p))
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "-p", "differential", *pytest_args], cwd=REPO, env=env)
    subprocess.run([sys.executable, str(TOOLS / "differential.py"), "pairs", str(directory)],
                   env=env, check=True)
    built = subprocess.run([sys.executable, str(REPO / "bench" / "models.py"), str(directory)],
                           env=env, check=True, stdout=subprocess.PIPE, text=True)
    for case in json.loads(built.stdout):
        inputs = {name: [int(d) for d in shape.split("x")]
                  for name, shape in (spec.split("=", 1) for spec in case["inputs"])}
        bindings = {"inputs": inputs, "batch": None, "symbolic": False}
        Path(case["path"]).with_suffix(".json").write_text(json.dumps(bindings, sort_keys=True))
    print(f"{len(list(directory.glob('*.onnx')))} models in {directory} "
          f"(the tests exited {tests.returncode})")
    return 0


def collect_pairs(directory: Path) -> int:
    """Every pair of models/, from Keras and from PyTorch with each exporter."""
    from onnxflops.converters import keras_to_onnx, torch_to_onnx
    from onnxflops.models import PAIRS

    for p in PAIRS:
        _keep(directory, keras_to_onnx(p.keras_model()), None, None, False)
        for exporter in ("dynamo", "legacy"):
            _keep(directory, torch_to_onnx(p.torch_module(), p.torch_example(), exporter=exporter),
                  None, None, False)
    return 0


# -- count ----------------------------------------------------------------------------------------

def count_all(directory: Path, out: Path) -> int:
    import onnxflops

    results = {}
    for path in sorted(directory.glob("*.onnx")):
        bindings = json.loads(path.with_suffix(".json").read_text())
        results[path.name] = {way: _count(onnxflops, path, bindings, kwargs)
                              for way, kwargs in WAYS.items()}
    out.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    print(f"{len(results)} models x {len(WAYS)} ways -> {out}")
    return 0


def _count(onnxflops, path: Path, bindings: dict, kwargs: dict):
    try:
        report = onnxflops.count(str(path), inputs=bindings["inputs"], batch=bindings["batch"],
                                 symbolic=bindings["symbolic"], **kwargs)
    except Exception as error:  # a changed failure is a difference like any other
        lines = str(error).strip().splitlines()
        return {"error": f"{type(error).__name__}: {lines[0] if lines else ''}"}
    return json.loads(report.to_json())


# -- diff -----------------------------------------------------------------------------------------

def diff(a: Path, b: Path) -> int:
    if a.read_bytes() == b.read_bytes():
        print("byte-identical")
        return 0
    old, new = json.loads(a.read_text()), json.loads(b.read_text())
    for name in sorted(old.keys() | new.keys()):
        for way in WAYS:
            x, y = old.get(name, {}).get(way), new.get(name, {}).get(way)
            if x != y:
                print(f"{name} [{way}]:")
                for line in _differences(x, y, ""):
                    print(f"  {line}")
    return 1


def _differences(x, y, where: str):
    if isinstance(x, dict) and isinstance(y, dict):
        for key in sorted(x.keys() | y.keys(), key=str):
            if x.get(key) != y.get(key):
                yield from _differences(x.get(key), y.get(key), f"{where}.{key}")
    elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        for i, (u, v) in enumerate(zip(x, y)):
            if u != v:
                yield from _differences(u, v, f"{where}[{i}]")
    else:
        yield f"{where or '.'}: {json.dumps(x)[:200]} -> {json.dumps(y)[:200]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("collect", help="run the tests and the bench build, keeping their models")
    p.add_argument("directory", type=Path)
    p.add_argument("pytest_args", nargs="*", help="passed to pytest (e.g. a test file)")
    p = sub.add_parser("pairs", help="convert every pair of models/ into DIR (part of collect)")
    p.add_argument("directory", type=Path)
    p = sub.add_parser("count", help="count every collected model three ways into a JSON file")
    p.add_argument("directory", type=Path)
    p.add_argument("out", type=Path)
    p = sub.add_parser("diff", help="'byte-identical', or each difference between two counts")
    p.add_argument("a", type=Path)
    p.add_argument("b", type=Path)
    args = parser.parse_args(argv)
    if args.command == "collect":
        return collect(args.directory, args.pytest_args)
    if args.command == "pairs":
        return collect_pairs(args.directory)
    if args.command == "count":
        return count_all(args.directory, args.out)
    return diff(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
