"""Real size: converting and counting framework models as whole processes, before and after.

    python bench/real_size.py [--before main] [--only NAME] [--limit-gb 8]

For each model (VGG16 and ResNet50 from Keras Applications, ResNet-50 from torch, Llama-3-8B
built on the meta device; Llama-2-70B with --only llama2-70b-meta) one child process imports
onnxflops, builds the model, and counts it with `onnxflops.count(model, ...)`; llama3-8b-llm runs
`onnxflops.llm` on Llama-3-8B's config.json (prompt 2048, generate 256). Wall time, CPU time
(user + system: what the child itself spent, whatever else the machine runs) and peak RSS are the
whole process's, as a user waits for them. "before" runs the same code against a git revision of the
repository (exported to a temporary directory), "after" against this checkout, side by side.
Every child runs under an address-space cap (RLIMIT_AS, --limit-gb): a conversion that would take
the machine's memory fails inside its cap instead. Counts must agree where both sides count.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_PRELUDE = """
import importlib.util, json, os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import onnxflops
spec = importlib.util.spec_from_file_location("llama_builder", {llama!r})
llama = sys.modules["llama_builder"] = importlib.util.module_from_spec(spec)
"""
_REPORT = "print(json.dumps({counts}))"
_COUNTS = "{'macs': report.total.macs, 'params': report.total.params}"

CASES = {
    "vgg16-keras": "import keras\n"
                   "report = onnxflops.count(keras.applications.VGG16(weights=None))",
    "resnet50-keras": "import keras\n"
                      "report = onnxflops.count(keras.applications.ResNet50(weights=None))",
    "resnet50-torch": "from onnxflops.models.resnet50 import ResNet50\n"
                      "report = onnxflops.count(ResNet50(), inputs=((1, 3, 224, 224),))",
    "llama3-8b-meta": "spec.loader.exec_module(llama)\n"
                      "report = onnxflops.count(llama.llama_on_meta('llama3-8b'), "
                      "inputs=(llama.token_ids(512),))",
    "llama2-70b-meta": "spec.loader.exec_module(llama)\n"
                       "report = onnxflops.count(llama.llama_on_meta('llama2-70b'), "
                       "inputs=(llama.token_ids(512),))",
    "llama3-8b-llm": "spec.loader.exec_module(llama)\n"
                     "import tempfile\n"
                     "config = llama.llama_config('llama3-8b')\n"
                     "config.use_cache = True\n"
                     "path = os.path.join(tempfile.mkdtemp(), 'config.json')\n"
                     "config.to_json_file(path)\n"
                     "report = onnxflops.llm(path, prompt=2048, generate=256)",
}
# What a case prints: MACs (for llm: the prefill and all decode steps) and params.
COUNTS = {"llama3-8b-llm": "{'macs': report.prefill.macs + report.decode_total.macs, "
                           "'params': report.params.total}"}
DEFAULT = ("vgg16-keras", "resnet50-keras", "resnet50-torch", "llama3-8b-meta", "llama3-8b-llm")


def run_case(name: str, tree: Path, limit_bytes: int) -> dict:
    """One child: seconds, peak RSS in bytes, and the count or the error's last line."""
    code = (_PRELUDE.format(llama=str(REPO / "models" / "llama.py")) + CASES[name] + "\n"
            + _REPORT.format(counts=COUNTS.get(name, _COUNTS)))
    env = dict(os.environ, PYTHONPATH=str(tree))

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-c", code], cwd=tree, env=env,
                                 preexec_fn=cap, stdout=subprocess.PIPE, stderr=err)
        out = child.stdout.read()
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        err.seek(0)
        lines = [line for line in err.read().decode(errors="replace").splitlines() if line.strip()]
    result = {"seconds": seconds, "cpu_seconds": usage.ru_utime + usage.ru_stime,
              "peak_rss": usage.ru_maxrss * 1024}
    code = os.waitstatus_to_exitcode(status)
    if code == 0:
        result.update(json.loads(out.decode().strip().splitlines()[-1]))
    else:
        result["error"] = f"exit {code}: " + (lines[-1][:90] if lines else "")
    return result


def exported_tree(revision: str, into: Path) -> Path:
    archive = subprocess.run(["git", "-C", str(REPO), "archive", revision], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def describe(result: dict) -> str:
    memory = f"{result['peak_rss'] / 2**30:5.2f} GiB"
    outcome = result.get("error") or f"{result['macs']:,} MACs"
    return f"{result['seconds']:6.1f} s  {result['cpu_seconds']:6.1f} s  {memory}  {outcome}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", default="main", help="git revision of the 'before' code")
    p.add_argument("--only", action="append", choices=sorted(CASES))
    p.add_argument("--limit-gb", type=float, default=8.0)
    args = p.parse_args(argv)
    limit = int(args.limit_gb * 1e9)
    with tempfile.TemporaryDirectory() as tmp:
        before_tree = exported_tree(args.before, Path(tmp))
        print(f"{'model':16} {'side':6} {'wall':>8}  {'CPU':>8}  {'peak RSS':>9}  "
              f"count (cap {args.limit_gb} GB)")
        for name in args.only or DEFAULT:
            results = {side: run_case(name, tree, limit)
                       for side, tree in (("before", before_tree), ("after", REPO))}
            for side in ("before", "after"):
                print(f"{name:16} {side:6} {describe(results[side])}", flush=True)
            counts = [(r["macs"], r["params"]) for r in results.values() if "macs" in r]
            if len(counts) == 2 and counts[0] != counts[1]:
                print(f"{name:16} COUNTS DIFFER: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
