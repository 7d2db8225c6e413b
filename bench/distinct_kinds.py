"""Counting N nodes of distinct kinds against N nodes of one kind, as whole processes.

Analysis and the counter cost a node once per kind (op, attributes, input and output types) and
reuse the result for alike nodes; a graph whose every node differs from the others must not cost
far more per node. Both graphs are chains of N nodes on a 4x4 tensor; in the distinct one each node
has its own alpha: LeakyRelu's (an op costed by expanding its ONNX function body) or Gemm's (an op
with a rule of its own). A kind leaves coefficients out (analysis/kinds.py): ONNX's inference
never reads them and LeakyRelu's body costs the same whatever its alpha, so those run once; Gemm's
rule reads alpha (alpha != 1 costs a scaling), so the counter still costs each Gemm by its own.

Target: the distinct-kinds count within 3x the same-kind count (time), peak RSS reported beside.

    python bench/distinct_kinds.py [--nodes 100000] [--reps 3] [--op LeakyRelu|Gemm]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGET_RATIO = 3.0

BUILD = """
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
n, distinct, path, op = int(sys.argv[1]), sys.argv[2] == "distinct", sys.argv[3], sys.argv[4]
weights = [numpy_helper.from_array(np.ones((4, 4), np.float32), "w")] if op == "Gemm" else []
nodes = [helper.make_node(op, [f"t{i}"] + [w.name for w in weights], [f"t{i + 1}"], name=f"n{i}",
                          alpha=(1 + i) * 1e-6 if distinct else 0.01) for i in range(n)]
graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [4, 4])],
                          [helper.make_tensor_value_info(f"t{n}", TensorProto.FLOAT, [4, 4])], weights)
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
"""


def timed(command: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one child process (its own, from wait4)."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, cwd=REPO)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise subprocess.CalledProcessError(child.returncode, command)
    return seconds, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--op", choices=["LeakyRelu", "Gemm"], default="Gemm")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for kind in ("same", "distinct"):
            paths[kind] = str(Path(tmp) / f"{kind}.onnx")
            subprocess.run([sys.executable, "-c", BUILD, str(args.nodes), kind, paths[kind], args.op],
                           check=True)
        times: dict[str, list[float]] = {"same": [], "distinct": []}
        peaks: dict[str, float] = {}
        for _ in range(args.reps):
            for kind in ("same", "distinct"):  # interleaved: a noisy machine drifts
                seconds, peak = timed([sys.executable, "-m", "onnxflops.cli", "count", paths[kind]])
                times[kind].append(seconds)
                peaks[kind] = peak
    same, distinct = (statistics.median(times[k]) for k in ("same", "distinct"))
    ratio = distinct / same
    print(f"{args.nodes:,} {args.op} nodes, median of {args.reps}: one kind {same:.2f} s; distinct kinds "
          f"{distinct:.2f} s; ratio {ratio:.2f} (target <= {TARGET_RATIO})")
    print(f"peak RSS: one kind {peaks['same']:.0f} MiB, distinct kinds {peaks['distinct']:.0f} MiB")
    return 0 if ratio <= TARGET_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
