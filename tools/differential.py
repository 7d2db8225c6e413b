"""Old-vs-new differential: every model the fast tests, the fuzz seeds, the zoo, the survey's CI
sample and the model pairs build, counted in every mode, byte-identical JSON or each difference.

    python tools/differential.py collect DIR [--bench] [PYTEST_ARGS ...]
        # keep every model the fast layer counts (pytest -m "not slow", or PYTEST_ARGS), the fuzz
        # seeds, the zoo, the survey's CI sample (its torchvision/timm/transformers/keras rows,
        # built in-process) and the Keras/both-exporter pairs of models/ (and, with --bench, the
        # bench graphs) into DIR
    PYTHONPATH=CHECKOUT python tools/differential.py count DIR OUT.json [--cpu-seconds S]
        # count each model the default way, with --training, with --convention exact and, where a
        # model declares a symbolic input dim, --symbolic; a count past S seconds of CPU (default
        # 60) is recorded as timed out, in every way (an old checkout meeting a hostile model
        # fixed since; the timer cannot stop one stuck inside onnx's C++ code, as a function
        # bomb gets an old checkout: set such models apart, as tools/differential-house.md did)
    python tools/differential.py diff A.json B.json   # 'byte-identical', or each difference

The models are collected once, so both checkouts count the very same files. `collect` runs the
fast tests with this file as a pytest plugin: it keeps the model (after any conversion) and the
inputs and batch of every count made in-process; the other sources are built in-process by
`build SOURCE DIR` (one process each: TensorFlow and torch's triton do not share one) with the
same hook on the pipeline's binding step. Most pairs are the parity tests' models again: kept once.
A count that fails records its error's first line, so a changed error is a difference too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
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
    if directory:
        keep_every_count(Path(directory))


def keep_every_count(directory: Path) -> None:
    """From now on, every model this process counts is kept in `directory` with its bindings."""
    import onnxflops.api as api

    bind_inputs = api.bind_inputs

    def keeping(proto, inputs=None, batch=None, *args, **kwargs):
        try:
            _keep(directory, proto, inputs, batch, kwargs.get("allow_unbound", False))
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


# The survey's CI sample (tests/frameworks/test_survey_models.py), by the process that builds it.
SURVEY_SAMPLE = {
    "survey-torch": [
        "timm:test_byobnet", "timm:test_coatnet", "timm:test_convnext", "timm:test_convnext3",
        "timm:test_efficientnet", "timm:test_efficientnet_evos", "timm:test_efficientnet_gn",
        "timm:test_efficientnet_ln", "timm:test_nfnet", "timm:test_resnet", "timm:test_vit",
        "timm:test_vit2", "timm:test_vit4", "torchvision:squeezenet1_1",
        "torchvision:mobilenet_v3_small", "torchvision:alexnet", "torchvision:mnasnet0_5",
        "torchvision:shufflenet_v2_x0_5", "transformers:bert", "transformers:llama",
        "transformers:vit", "transformers:t5", "transformers:gpt2", "transformers:qwen2"],
    "survey-keras": ["keras.applications:MobileNet", "keras_hub:DebertaV3Backbone",
                     "keras_hub:XLNetBackbone", "keras_hub:BertBackbone"],
}
SOURCES = ("seeds", "pairs", "zoo-torch", "zoo-keras", *SURVEY_SAMPLE)


def collect(directory: Path, pytest_args: list[str], bench: bool) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, DIFFERENTIAL_DIR=str(directory.resolve()),
               PYTHONPATH=os.pathsep.join(p for p in (str(REPO), str(TOOLS),
                                                      os.environ.get("PYTHONPATH")) if p))
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "-p", "differential", *(pytest_args or ["-m", "not slow"])],
                           cwd=REPO, env=env)
    failed = [source for source in SOURCES if subprocess.run(
        [sys.executable, str(TOOLS / "differential.py"), "build", source, str(directory)],
        env=env).returncode]
    if bench:
        _collect_bench(directory, env)
    print(f"{len(list(directory.glob('*.onnx')))} models in {directory} (the tests exited "
          f"{tests.returncode}; builds that failed: {', '.join(failed) or 'none'})")
    return 0


def _collect_bench(directory: Path, env: dict) -> None:
    built = subprocess.run([sys.executable, str(REPO / "bench" / "models.py"), str(directory)],
                           env=env, check=True, stdout=subprocess.PIPE, text=True)
    for case in json.loads(built.stdout):
        inputs = {name: [int(d) for d in shape.split("x")]
                  for name, shape in (spec.split("=", 1) for spec in case["inputs"])}
        bindings = {"inputs": inputs, "batch": None, "symbolic": False}
        Path(case["path"]).with_suffix(".json").write_text(json.dumps(bindings, sort_keys=True))


def build(source: str, directory: Path) -> int:
    """Build one source's models in this process and keep each as the pipeline binds it."""
    import warnings

    if source.startswith(("zoo-torch", "survey-torch", "pairs")):
        import torch  # noqa: F401 - before TensorFlow: triton after it segfaults
    directory.mkdir(parents=True, exist_ok=True)
    keep_every_count(directory)
    import onnxflops

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, make in _builders(source):
            try:
                model, bindings = make()
                onnxflops.count(model, **bindings)
            except Exception as error:  # noqa: BLE001 - a model that fails to build is reported
                print(f"{source} {name}: {type(error).__name__}: {str(error)[:200]}")
            else:
                print(f"{source} {name}: kept", flush=True)
    return 0


def _builders(source: str):
    """(name, build) pairs of one source; build() gives (model, its bindings for count)."""
    if source == "seeds":  # bound as the fuzz tests bind them
        for path in sorted((REPO / "tests" / "fuzz" / "seeds").glob("*.onnx")):
            yield path.name, lambda path=path: (str(path), {"batch": 2})
    elif source == "pairs":
        from onnxflops.converters import keras_to_onnx, torch_to_onnx
        from onnxflops.models import PAIRS

        for p in PAIRS:
            yield f"{p.name} keras", lambda p=p: (keras_to_onnx(p.keras_model()), {})
            for exporter in ("dynamo", "legacy"):
                yield f"{p.name} {exporter}", lambda p=p, e=exporter: (
                    torch_to_onnx(p.torch_module(), p.torch_example(), exporter=e), {})
    elif source.startswith("zoo-"):
        from onnxflops.models.zoo import ZOO

        for m in ZOO:
            if m.framework == source[len("zoo-"):]:
                yield m.name, lambda m=m: (m.build(), {"inputs": m.inputs() or None})
    else:
        from onnxflops.survey.measure import build as survey_build
        from onnxflops.survey.sources import tasks

        for spec in SURVEY_SAMPLE[source]:
            def make(spec=spec):
                subject, _ = survey_build(tasks([spec])[0], memory_gb=4)
                return subject.model, {"inputs": subject.kwargs or subject.args or None}
            yield spec, make


# -- count ----------------------------------------------------------------------------------------

def count_all(directory: Path, out: Path, cpu_seconds: float = 60) -> int:
    import onnxflops

    signal.signal(signal.SIGPROF, _out_of_time)
    results = {}
    for path in sorted(directory.glob("*.onnx")):
        bindings = json.loads(path.with_suffix(".json").read_text())
        results[path.name] = counted = {}
        for way, kwargs in WAYS.items():
            counted[way] = _count(onnxflops, path, bindings, kwargs, cpu_seconds)
            if counted[way] == TIMED_OUT:  # the other ways would take as long: not tried
                results[path.name] = dict.fromkeys(WAYS, TIMED_OUT)
                break
        if counted.get("default") != TIMED_OUT and not bindings["symbolic"] \
                and _declares_symbolic_dims(path):
            results[path.name]["symbolic"] = _count(onnxflops, path, {
                "inputs": None, "batch": None, "symbolic": True}, {}, cpu_seconds)
        print(path.name, flush=True)
    out.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    print(f"{len(results)} models x {len(WAYS)} ways "
          f"(+ {sum('symbolic' in r for r in results.values())} symbolic) -> {out}")
    return 0


TIMED_OUT = {"error": "timed out"}


class _OutOfTime(BaseException):
    """Past the CPU allowed: no `except Exception` of the pipeline takes it for its own."""


def _out_of_time(signum, frame):
    raise _OutOfTime


def _count(onnxflops, path: Path, bindings: dict, kwargs: dict, cpu_seconds: float):
    # CPU time, not wall time: a loaded machine slows both checkouts alike.
    signal.setitimer(signal.ITIMER_PROF, cpu_seconds)
    try:
        report = onnxflops.count(str(path), inputs=bindings["inputs"], batch=bindings["batch"],
                                 symbolic=bindings["symbolic"], **kwargs)
        return json.loads(report.to_json())
    except _OutOfTime:
        return TIMED_OUT
    except Exception as error:  # a changed failure is a difference like any other
        lines = str(error).strip().splitlines()
        return {"error": f"{type(error).__name__}: {lines[0] if lines else ''}"}
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)


def _declares_symbolic_dims(path: Path) -> bool:
    """Whether an input of the model has a named or unknown dim: --symbolic applies to it."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    weights = {t.name for t in graph.initializer}
    return any(not d.HasField("dim_value") for i in graph.input if i.name not in weights
               for d in i.type.tensor_type.shape.dim)


# -- diff -----------------------------------------------------------------------------------------

def diff(a: Path, b: Path) -> int:
    if a.read_bytes() == b.read_bytes():
        print("byte-identical")
        return 0
    old, new = json.loads(a.read_text()), json.loads(b.read_text())
    for name in sorted(old.keys() | new.keys()):
        for way in (*WAYS, "symbolic"):
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
    p = sub.add_parser("collect", help="keep the models of every source into DIR")
    p.add_argument("directory", type=Path)
    p.add_argument("--bench", action="store_true", help="the bench graphs too (minutes)")
    p.add_argument("pytest_args", nargs="*", help='passed to pytest (default: -m "not slow")')
    p = sub.add_parser("build", help="build one source's models into DIR (part of collect)")
    p.add_argument("source", choices=SOURCES)
    p.add_argument("directory", type=Path)
    p = sub.add_parser("count", help="count every collected model in every mode into a JSON file")
    p.add_argument("directory", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--cpu-seconds", type=float, default=60,
                   help="a count past this much CPU time is recorded as timed out (default 60)")
    p = sub.add_parser("diff", help="'byte-identical', or each difference between two counts")
    p.add_argument("a", type=Path)
    p.add_argument("b", type=Path)
    args = parser.parse_args(argv)
    if args.command == "collect":
        return collect(args.directory, args.pytest_args, args.bench)
    if args.command == "build":
        return build(args.source, args.directory)
    if args.command == "count":
        return count_all(args.directory, args.out, args.cpu_seconds)
    return diff(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
