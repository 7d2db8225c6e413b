"""Real size: converting and counting framework models as whole processes, before and after.

    python bench/real_size.py [--before main] [--only NAME] [--limit-gb 8]

For each model one child process imports onnxflops, builds the model, and counts it with
`onnxflops.count(model, ...)`; llama3-8b-llm runs `onnxflops.llm` on Llama-3-8B's config.json
(prompt 2048, generate 256). Wall time, CPU time (user + system: what the child itself spent,
whatever else the machine runs) and peak RSS are the whole process's, as a user waits for them.
The models: VGG16, ResNet50 and EfficientNetB0 from Keras Applications (weights=None);
keras-hub's BERT-base, GPT-2 (base) and Llama-3.2-1B backbones at 512 tokens, from their presets'
configs with random init (the Llama built in `keras.StatelessScope(initialize_variables=False)`,
so that its 4.9 GB of weights are never allocated); ResNet-50 from torch; Llama-3-8B built on the
meta device (Llama-2-70B with --only llama2-70b-meta). "before" runs the same code against a
git revision of the repository (exported to a temporary directory), "after" against this
checkout, side by side; the model builders load from this checkout by path, so that both sides
build the same model. Every child runs under an address-space cap (RLIMIT_AS, --limit-gb): a
conversion that would take the machine's memory fails inside its cap instead. Counts must agree
where both sides count.
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

def builder(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
"""
_REPORT = "print(json.dumps({counts}))"
_COUNTS = "{'macs': report.total.macs, 'params': report.total.params}"
_TOKENS = 512
# keras-hub presets' configs (bert_base_en_uncased, gpt2_base_en, llama3.2_1b), random init.
_KERAS_HUB = {
    "BertBackbone": dict(vocabulary_size=30522, num_layers=12, num_heads=12, hidden_dim=768,
                         intermediate_dim=3072, max_sequence_length=512),
    "GPT2Backbone": dict(vocabulary_size=50257, num_layers=12, num_heads=12, hidden_dim=768,
                         intermediate_dim=3072, max_sequence_length=1024),
    "Llama3Backbone": dict(vocabulary_size=128256, num_layers=16, num_query_heads=32,
                           num_key_value_heads=8, hidden_dim=2048, intermediate_dim=8192,
                           rope_max_wavelength=500000, layer_norm_epsilon=1e-5,
                           tie_word_embeddings=True),
}


def _keras_hub(backbone: str, inputs: tuple[str, ...], stateless: bool = False) -> str:
    scope = "keras.StatelessScope(initialize_variables=False)" if stateless else \
        "contextlib.nullcontext()"
    shapes = {name: (1, _TOKENS) for name in inputs}
    return (f"import contextlib, keras, keras_hub\nwith {scope}:\n"
            f"    model = keras_hub.models.{backbone}(**{_KERAS_HUB[backbone]!r})\n"
            f"report = onnxflops.count(model, inputs={shapes!r})")


def _builder(name: str) -> str:
    """Loads models/NAME.py of this checkout by path: the "before" revision may not have it."""
    return f"{name} = builder('{name}_builder', {str(REPO / 'models' / f'{name}.py')!r})\n"


CASES = {
    "vgg16-keras": "import keras\n"
                   "report = onnxflops.count(keras.applications.VGG16(weights=None))",
    "resnet50-keras": "import keras\n"
                      "report = onnxflops.count(keras.applications.ResNet50(weights=None))",
    "effb0-keras": "import keras\n"
                   "report = onnxflops.count(keras.applications.EfficientNetB0(weights=None))",
    "bert-base-keras-hub": _keras_hub("BertBackbone", ("token_ids", "segment_ids", "padding_mask")),
    "gpt2-keras-hub": _keras_hub("GPT2Backbone", ("token_ids", "padding_mask")),
    "llama3.2-1b-keras-hub": _keras_hub("Llama3Backbone", ("token_ids", "padding_mask"),
                                        stateless=True),
    "resnet50-torch": _builder("resnet50") +
                      "report = onnxflops.count(resnet50.ResNet50(), inputs=((1, 3, 224, 224),))",
    "llama3-8b-meta": _builder("llama") +
                      "report = onnxflops.count(llama.llama_on_meta('llama3-8b'), "
                      "inputs=(llama.token_ids(512),))",
    "llama2-70b-meta": _builder("llama") +
                       "report = onnxflops.count(llama.llama_on_meta('llama2-70b'), "
                       "inputs=(llama.token_ids(512),))",
    "llama3-8b-llm": _builder("llama") +
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
DEFAULT = ("vgg16-keras", "resnet50-keras", "effb0-keras", "bert-base-keras-hub",
           "gpt2-keras-hub", "llama3.2-1b-keras-hub", "resnet50-torch", "llama3-8b-meta",
           "llama3-8b-llm")


def run_case(name: str, tree: Path, limit_bytes: int) -> dict:
    """One child: seconds, peak RSS in bytes, and the count or the error's last line."""
    code = _PRELUDE + CASES[name] + "\n" + _REPORT.format(counts=COUNTS.get(name, _COUNTS))
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
    outcome = result.get("error") or f"{result['macs']:,} MACs, {result['params']:,} params"
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
        print(f"{'model':22} {'side':6} {'wall':>8}  {'CPU':>8}  {'peak RSS':>9}  "
              f"count (cap {args.limit_gb} GB)")
        for name in args.only or DEFAULT:
            results = {side: run_case(name, tree, limit)
                       for side, tree in (("before", before_tree), ("after", REPO))}
            for side in ("before", "after"):
                print(f"{name:22} {side:6} {describe(results[side])}", flush=True)
            counts = [(r["macs"], r["params"]) for r in results.values() if "macs" in r]
            if len(counts) == 2 and counts[0] != counts[1]:
                print(f"{name:22} COUNTS DIFFER: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
