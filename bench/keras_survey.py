"""Every keras.applications builder and keras-hub backbone, counted and checked against the Keras oracle.

    nice -n 15 python bench/keras_survey.py [-o survey/keras.csv] [--timeout 600] [--limit-gb 4]
        [--jobs N] [--redo VERDICT ...] [--only NAME ...] [keras.applications] [keras_hub]

Each model runs in its own process under an address-space cap (prlimit --as) and a timeout, and
one row per model is appended to the CSV as it finishes (a rerun skips the rows already there,
except those whose verdict --redo names). The columns: model, input, macs, flops, params,
unused_params, buffers, oracle_macs, oracle_params, oracle_unused_params, oracle_buffers,
verdict, reason, seconds, peak_mb. The oracle is `onnxflops.oracles.keras` (the model's layers
walked, never through ONNX; Keras's own trainable and non-trainable weights; the trainable ones
the traced forward pass never reads): a row is exact when MACs, params, unused params and buffers
all equal the oracle's (params + unused params = Keras's trainable count) and no node is left
uncosted. Verdicts: exact, differs, not counted, oracle failed, not
built.

keras.applications builders run at their default input size with weights=None, built in
`keras.StatelessScope(initialize_variables=False)` (no weight value is allocated: neither the
count nor the oracle reads one, and the cap then bounds what counting takes); where a builder
leaves the input's height and width open (MobileNetV3), they are bound to 224, the size its
ImageNet weights were trained at, by the input's Keras name. keras-hub backbones are built from a
small config by one rule (`small_config`), token inputs at 16 tokens, images at 64×64.
"""

from __future__ import annotations

import argparse
import csv
import inspect
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COLUMNS = ["model", "input", "macs", "flops", "params", "unused_params", "buffers", "oracle_macs",
           "oracle_params", "oracle_unused_params", "oracle_buffers", "verdict", "reason", "seconds", "peak_mb"]
TRAINED_SIZE = 224  # the ImageNet size of the builders whose input is left open
TOKENS = 16
IMAGE = 64
# The one rule for keras-hub configs: each hyperparameter a backbone's constructor names, small.
SMALL = {
    "vocabulary_size": 1000, "num_layers": 2, "num_heads": 4, "num_query_heads": 4,
    "num_key_value_heads": 2, "hidden_dim": 64, "intermediate_dim": 128, "head_dim": 16,
    "max_sequence_length": 64, "num_experts": 4, "top_k": 2, "num_experts_per_tok": 2,
    "image_size": IMAGE, "patch_size": 8, "num_channels": 3, "mlp_dim": 128,
    "embedding_dim": 64, "key_value_dim": 16, "num_encoder_layers": 2, "num_decoder_layers": 2,
    "attention_head_dim": 16, "intermediate_size": 128, "hidden_size": 64,
    "num_attention_heads": 4, "num_hidden_layers": 2, "window_size": 4,
}


def application_builders() -> list[str]:
    import keras

    return sorted(name for name in dir(keras.applications)
                  if name[:1].isupper() and callable(getattr(keras.applications, name)))


def hub_backbones() -> list[str]:
    import keras_hub

    return sorted(name for name in dir(keras_hub.models)
                  if name.endswith("Backbone") and name != "Backbone"
                  and inspect.isclass(getattr(keras_hub.models, name)))


def small_config(cls) -> dict:
    """The constructor's arguments that `SMALL` names, and only those without a default or
    with a numeric default (a size, a count): the backbone is otherwise as its library builds it."""
    parameters = inspect.signature(cls.__init__).parameters
    config = {}
    for name, parameter in parameters.items():
        if name in SMALL and (parameter.default is inspect.Parameter.empty
                              or isinstance(parameter.default, int)):
            config[name] = SMALL[name]
    return config


def build(source: str, name: str):
    import keras

    if source == "keras.applications":
        # Built without weight values: nothing reads them, and the largest (ConvNeXtXLarge's
        # 1.4 GB) would take most of the cap before the conversion starts.
        with keras.StatelessScope(initialize_variables=False):
            model = getattr(keras.applications, name)(weights=None)
        return model, _open_dims_bound(model, TRAINED_SIZE)
    import keras_hub

    model = getattr(keras_hub.models, name)(**small_config(getattr(keras_hub.models, name)))
    return model, _open_dims_bound(model, None)


def _open_dims_bound(model, side: int | None) -> dict:
    """Shapes by Keras input name for inputs with an open dim past the batch: image height and
    width → `side` (or IMAGE), sequence lengths → TOKENS."""
    shapes = {}
    for tensor in model.inputs:
        shape = tuple(tensor.shape)
        if None not in shape[1:]:
            continue
        image = len(shape) == 4
        fill = (side or IMAGE) if image else TOKENS
        shapes[tensor.name] = (1, *[fill if d is None else d for d in shape[1:]])
    return shapes


def one(source: str, name: str) -> dict:
    """The row of one model (run in its own process)."""
    import warnings

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    warnings.simplefilter("ignore")
    sys.path.insert(0, str(REPO))
    import onnxflops
    from onnxflops.oracles.keras import input_shapes, keras_oracle

    # What converting and counting import, before the model takes its memory: the cap is on
    # the whole address space, and a shared library mapped late would fail first.
    import onnxflops.api  # noqa: F401
    import tf2onnx  # noqa: F401

    row = dict.fromkeys(COLUMNS, "")
    row["model"] = f"{source}:{name}"
    try:
        model, bound = build(source, name)
        shapes = input_shapes(model, bound)
        row["input"] = " ".join(f"{t.name}={'x'.join(map(str, s))}"
                                for t, s in zip(model.inputs, shapes))
    except Exception as e:  # noqa: BLE001 - the registry's own builder fails: a row says so
        return {**row, "verdict": "not built", "reason": _line(e)}
    try:
        oracle = keras_oracle(model, bound)
        row.update(oracle_macs=oracle.macs, oracle_params=oracle.params,
                   oracle_unused_params=oracle.unused_params, oracle_buffers=oracle.buffers)
    except Exception as e:  # noqa: BLE001
        oracle = None
        row.update(verdict="oracle failed", reason=_line(e))
    start = time.perf_counter()
    try:
        report = onnxflops.count(model, bound or None)
    except Exception as e:  # noqa: BLE001 - what cannot be counted is a row, not a crash
        row["seconds"] = round(time.perf_counter() - start, 1)
        return {**row, "verdict": "not counted", "reason": _line(e)}
    row["seconds"] = round(time.perf_counter() - start, 1)
    total = report.total
    unused = getattr(total, "unused_params", 0)
    row.update(macs=total.macs, flops=total.flops, params=total.params, unused_params=unused,
               buffers=total.buffers)
    if oracle is None:
        return row
    problems = [f"{what} {ours:,} vs {theirs:,} ({ours - theirs:+,})" for what, ours, theirs in (
        ("MACs", total.macs, oracle.macs), ("params", total.params,
                                            oracle.params - oracle.unused_params),
        ("unused params", unused, oracle.unused_params),
        ("buffers", total.buffers, oracle.buffers)) if ours != theirs]
    if report.uncosted:
        kinds = sorted({u.op_type for u in report.uncosted})
        problems.append(f"{len(report.uncosted)} uncosted ({', '.join(kinds)})")
    row.update(verdict="differs" if problems else "exact", reason="; ".join(problems))
    return row


def _line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:300] if text else ''}"


def run_child(source: str, name: str, timeout: int, limit_gb: float) -> dict:
    command = ["prlimit", f"--as={int(limit_gb * 1e9)}", sys.executable, __file__, "--child",
               source, name]
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                              cwd=REPO)
    except subprocess.TimeoutExpired:
        return {**dict.fromkeys(COLUMNS, ""), "model": f"{source}:{name}", "verdict": "not counted",
                "reason": f"timed out after {timeout} s",
                "seconds": round(time.perf_counter() - start, 1)}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode == 0 and lines:
        return json.loads(lines[-1])
    tail = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1][:300]
    return {**dict.fromkeys(COLUMNS, ""), "model": f"{source}:{name}", "verdict": "not counted",
            "reason": f"process ended (exit {done.returncode}): {tail}",
            "seconds": round(time.perf_counter() - start, 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sources", nargs="*", default=["keras.applications", "keras_hub"])
    parser.add_argument("-o", "--output", default=str(REPO / "survey" / "keras.csv"))
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--limit-gb", type=float, default=4)
    parser.add_argument("--redo", nargs="*", default=[])
    parser.add_argument("--only", nargs="*", default=[], help="these models, in this order")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--child", nargs=2)
    args = parser.parse_args()
    if args.child:
        source, name = args.child
        import resource

        row = one(source, name)
        row["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        print(json.dumps(row), flush=True)
        return
    output = Path(args.output)
    output.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    if output.exists():
        with open(output, newline="") as f:
            rows = list(csv.DictReader(f))
    done = {r["model"] for r in rows if r["verdict"] not in args.redo}
    rows = [r for r in rows if r["model"] in done]
    _write(output, rows)
    listing = {"keras.applications": application_builders, "keras_hub": hub_backbones}
    todo = [(source, name) for source in args.sources for name in listing[source]()
            if f"{source}:{name}" not in done and (not args.only or name in args.only)]
    if args.only:  # in the order given
        todo.sort(key=lambda row: args.only.index(row[1]))
    with ThreadPoolExecutor(args.jobs) as pool:  # each row is a child process of its own
        futures = [pool.submit(run_child, source, name, args.timeout, args.limit_gb)
                   for source, name in todo]
        for future in as_completed(futures):
            row = future.result()
            rows.append(row)
            _write(output, rows)
            print(f"{row['model']:50s} {row['verdict']:12s} {row['seconds']}s "
                  f"{row['peak_mb']}MB {row['reason']}", flush=True)
    totals: dict[str, int] = {}
    for r in rows:
        totals[r["verdict"]] = totals.get(r["verdict"], 0) + 1
    print("totals:", ", ".join(f"{v} {n}" for v, n in sorted(totals.items())))


def _write(output: Path, rows: list[dict]) -> None:
    temporary = output.with_suffix(".tmp")
    with open(temporary, "w", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS)
        writer.writeheader()
        writer.writerows(sorted(rows, key=lambda r: r["model"]))
    temporary.replace(output)


if __name__ == "__main__":
    main()
