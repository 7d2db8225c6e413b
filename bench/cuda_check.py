"""The measuring half on a GPU, in one call (bench/cuda_check.sh installs onnxruntime-gpu, then
runs this): the GPU's ceilings, ResNet-50 and BERT-base profiled on the CUDA execution provider,
and a Llama's prefill and decode step timed in torch against `onnxflops llm`'s estimate for the
GPU found.

1. ceilings: onnxflops.profiling.ceilings probes the provider's peak FLOP/s and bandwidth
   (float32, and float16 on CUDA), beside the hardware table's datasheet figures;
2. profiles: ResNet-50 (torchvision) and BERT-base (transformers, from its config: random
   weights, nothing downloaded), each exported as a user deploys it (torch.onnx.export,
   dynamo=True, its default optimization) and run through onnxflops.profile on the provider:
   latency, achieved FLOP/s, and the per-node join of times to counted FLOPs (slowest nodes);
3. Llama: a Llama-3.2-1B-shaped config (hidden 2048, 16 layers, 32 heads over 8 KV heads,
   intermediate 8192, vocab 128256, tied head) built on the GPU in bf16 with random weights;
   the prefill of 512 tokens and 32 decode steps after it timed with CUDA events, against
   onnxflops.llm's roofline estimate on the table entry of the GPU found (H100, H200, ...) and
   the bandwidth limit (weights and KV cache read once per step). Eager torch launches each
   kernel from Python: a small model's decode step is bound by launches as much as by
   bandwidth, and the ratio says how far.

`--dry-run` runs the same steps on the CPU: the CPU provider, tiny models (a one-block ResNet,
a two-layer BERT, a two-layer Llama in float32) and this machine's measured ceilings in place of
a table entry, so that everything but the GPU is exercised anywhere (tests/test_cuda_check.py).
Every number is printed as it comes, then a summary; an error is one line and exit status 2.

    bash bench/cuda_check.sh [--dry-run]      # or: python bench/cuda_check.py [--dry-run]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from onnxflops.errors import OnnxFlopsError  # noqa: E402
from onnxflops.results import human  # noqa: E402


@dataclass(frozen=True)
class Plan:
    """What one run measures: the provider, the models' sizes, the Llama and its lengths."""

    provider: str
    models: tuple[str, str]  # the names of the ResNet and the BERT
    dtypes: tuple[str, ...]  # the ceilings' probe dtypes
    quick: bool  # small probes
    image: int  # ResNet input side
    resnet_blocks: list[int]  # ResNet-50: [3, 4, 6, 3] bottlenecks
    bert: dict  # BertConfig sizes
    sequence: int  # BERT tokens
    llama: dict  # LlamaConfig sizes
    prompt: int
    generate: int
    runs: int


GPU = Plan("cuda", ("ResNet-50", "BERT-base"), ("float32", "float16"), False, 224, [3, 4, 6, 3], {}, 128,
           {"hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
            "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
            "max_position_embeddings": 4096, "rope_theta": 500000.0,
            "tie_word_embeddings": True},
           512, 32, 50)
DRY = Plan("cpu", ("tiny ResNet", "tiny BERT"), ("float32",), True, 32, [1, 1, 1, 1],
           {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
            "intermediate_size": 128, "vocab_size": 512, "max_position_embeddings": 64}, 16,
           {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
            "max_position_embeddings": 64, "tie_word_embeddings": False},
           16, 4, 3)

# A GPU's name (torch.cuda.get_device_name) → the hardware table's entry, most specific first:
# an SXM part's name carries no form factor ("NVIDIA H100 80GB HBM3", "NVIDIA H200").
_TABLE_ENTRIES = (("H200 NVL", "h200nvl"), ("H100 NVL", "h100nvl"), ("H100 PCIe", "h100pcie"),
                  ("H200", "h200"), ("H100", "h100"), ("A100-SXM4-80GB", "a100"),
                  ("A100 80GB", "a100"), ("L4", "l4"), ("MI300X", "mi300x"))


def table_entry(device_name: str) -> str | None:
    """The hardware table's entry for a GPU named so, None where the table has none (an A100
    of 40 GB, a T4: the Llama is then compared with the probed ceilings)."""
    for part, entry in _TABLE_ENTRIES:
        if part.lower() in device_name.lower():
            return entry
    return None


class Summary:
    """Every number, printed as it is measured and again at the end."""

    def __init__(self):
        self.lines: list[str] = []
        self.started = time.perf_counter()

    def say(self, line: str) -> None:
        self.lines.append(line)
        print(line, flush=True)

    def elapsed(self) -> str:
        return f"{time.perf_counter() - self.started:.0f} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true",
                        help="the same steps on the CPU, on tiny models")
    args = parser.parse_args(argv)
    plan = DRY if args.dry_run else GPU
    try:
        run(plan)
    except OnnxFlopsError as e:
        print(f"cuda_check: error: {e}", file=sys.stderr)
        return 2
    return 0


def run(plan: Plan) -> None:
    import torch

    summary = Summary()
    device = _device(plan, torch)
    summary.say(f"device: {device}; provider {plan.provider}; torch {torch.__version__}, "
                f"onnxruntime {_ort_version()}")
    hw = _ceilings(plan, device, summary)
    for name, build in zip(plan.models, (_resnet, _bert)):
        _profile(name, *build(plan), plan, summary)
    _llama(plan, hw, summary)
    print("\n== summary (" + summary.elapsed() + ")")
    print("\n".join(line for line in summary.lines if not line.startswith("  ")))


def _device(plan: Plan, torch) -> str:
    """The GPU's name, checked usable by torch and by onnxruntime's CUDA provider; "cpu"."""
    if plan.provider == "cpu":
        return "cpu"
    if not torch.cuda.is_available():
        raise OnnxFlopsError(f"no CUDA GPU usable by torch {torch.__version__} (built for CUDA "
                             f"{torch.version.cuda}): run on a machine with an NVIDIA GPU, or "
                             "with --dry-run for the CPU")
    from onnxflops.profiling.runtime import check_provider, import_ort

    preload = getattr(import_ort(), "preload_dlls", None)  # onnxruntime >= 1.21: the CUDA and
    if preload is not None:                                # cuDNN libraries pip installed
        preload()
    check_provider("cuda")  # one line saying what to install where onnxruntime lacks it
    return torch.cuda.get_device_name(0)


def _ort_version() -> str:
    from onnxflops.profiling.runtime import import_ort

    ort = import_ort()
    return f"{ort.__version__} ({', '.join(ort.get_available_providers())})"


def _ceilings(plan: Plan, device: str, summary: Summary):
    """The provider's probed ceilings, printed beside the table's; the Hardware the Llama's
    estimate uses: the table entry of the GPU, or on CPU this machine's probed float32 ceilings."""
    from onnxflops.profiling.ceilings import machine_ceilings
    from onnxflops.profiling.runtime import SessionConfig
    from onnxflops.serving.hardware import HARDWARE, Hardware

    probed = {}
    for dtype in plan.dtypes:
        c = machine_ceilings(SessionConfig(plan.provider), dtype, quick=plan.quick, refresh=True)
        probed[dtype] = c
        summary.say(f"ceilings {plan.provider} {dtype}: peak {human(c.peak_flops_per_s)}FLOP/s, "
                    f"bandwidth {human(c.bandwidth_bytes_per_s)}B/s (onnxruntime probes)")
    if plan.provider == "cpu":
        c = probed["float32"]
        return Hardware("local CPU (probed)", {"fp32": c.peak_flops_per_s},
                        c.bandwidth_bytes_per_s, computes_in="fp32")
    entry = table_entry(device)
    if entry is None:
        summary.say(f"table: no entry for {device}; the Llama is compared with its probed "
                    "float16 ceilings")
        c = probed["float16"]
        return Hardware(f"{device} (probed)", {"bf16": c.peak_flops_per_s},
                        c.bandwidth_bytes_per_s)
    hw = HARDWARE[entry]
    summary.say(f"table {entry} ({hw.name}): bf16 {human(hw.peak('bf16'))}FLOP/s, fp32 "
                f"{human(hw.peak('fp32'))}FLOP/s, {human(hw.bandwidth_bytes_per_s)}B/s "
                "(datasheet)")
    return hw


def _resnet(plan: Plan):
    """(module, input name → array): torchvision's ResNet of `plan.resnet_blocks` bottlenecks
    (ResNet-50's [3, 4, 6, 3]), random weights."""
    import torch
    from torchvision.models.resnet import Bottleneck, ResNet

    torch.manual_seed(0)
    model = ResNet(Bottleneck, plan.resnet_blocks).eval()
    x = np.random.default_rng(0).standard_normal((1, 3, plan.image, plan.image), np.float32)
    return model, {"x": x}


def _bert(plan: Plan):
    """(module, inputs): BERT-base from transformers' default BertConfig (12 layers, hidden 768),
    random weights, fed int64 token ids."""
    import torch

    from onnxflops.converters.common import import_transformers

    transformers = import_transformers()
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig(**plan.bert)).eval()
    ids = np.random.default_rng(0).integers(0, model.config.vocab_size, (1, plan.sequence))
    return model, {"input_ids": ids.astype(np.int64)}


def _profile(name: str, model, inputs: dict, plan: Plan, summary: Summary) -> None:
    """`model` exported as a user deploys it (torch.onnx.export, dynamo=True, its default
    optimization), run through onnxflops.profile on the plan's provider."""
    import tempfile

    import torch

    import onnxflops
    from onnxflops.converters.common import framework_logging_silenced

    with tempfile.TemporaryDirectory(prefix="cuda-check-") as tmp:
        path = str(Path(tmp) / f"{name.replace(' ', '-')}.onnx")
        started = time.perf_counter()
        args = tuple(torch.from_numpy(a) for a in inputs.values())
        with framework_logging_silenced(), torch.no_grad():
            torch.onnx.export(model, args, path, input_names=list(inputs), dynamo=True,
                              verbose=False)
        exported = time.perf_counter() - started
        p = onnxflops.profile(path, provider=plan.provider, runs=plan.runs, inputs=inputs,
                              warmup=min(10, plan.runs), profile_runs=min(10, plan.runs),
                              quick=plan.quick)
    rate = p.achieved_flops_per_s
    summary.say(f"{name}: {p.latency.median:.3f} ms median, {human(p.flops)}FLOPs, "
                f"{human(rate) + 'FLOP/s' if rate else '-'}"
                + (f" ({p.efficiency:.0%} of the probed peak)" if p.efficiency else "")
                + f"; {len(p.nodes)} executed nodes, per-node times: {p.timing}; exported in "
                  f"{exported:.0f} s")
    print("\n".join("  " + line for line in p.to_text(top=8).splitlines()))


def _llama(plan: Plan, hw, summary: Summary) -> None:
    """A Llama's prefill and decode steps timed in torch (bf16 on the GPU, float32 on CPU)
    against onnxflops.llm's estimate on `hw` and the bandwidth limit."""
    import torch

    import onnxflops
    from onnxflops.converters.common import import_transformers

    transformers = import_transformers()
    cuda = plan.provider == "cuda"
    dtype, served = (torch.bfloat16, "bf16") if cuda else (torch.float32, "fp32")
    config = transformers.LlamaConfig(**plan.llama)
    started = time.perf_counter()
    r = onnxflops.llm(config, prompt=plan.prompt, generate=plan.generate, hardware=hw,
                      dtype=served)
    counted = time.perf_counter() - started
    model = _random_llama(transformers, config, "cuda" if cuda else "cpu", dtype, torch)
    prefill_ms, decode_ms = _timed_llama(model, plan, torch, cuda)
    bandwidth = hw.bandwidth_bytes_per_s
    multiplied = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    weight_bytes = multiplied * torch.finfo(dtype).bits // 8
    kv_per_token = r.kv_cache_bytes / (plan.prompt + plan.generate)
    middle = plan.prompt + plan.generate / 2
    limit_ms = (weight_bytes + kv_per_token * middle) / bandwidth * 1e3
    e = r.estimate
    summary.say(f"Llama ({config.num_hidden_layers} layers, hidden {config.hidden_size}, "
                f"{human(r.params.total)} params, {served}) on {hw.name}; llm counted in "
                f"{counted:.0f} s")
    summary.say(f"Llama decode steps read {human(r.decode_first.bytes_read)}B first, "
                f"{human(r.decode_last.bytes_read)}B last; weights multiplied "
                f"{human(weight_bytes)}B")
    summary.say(f"Llama prefill {plan.prompt} tokens: measured {prefill_ms:.3f} ms, llm "
                f"estimate {e.prefill_s * 1e3:.3f} ms ({e.bound['prefill']}-bound), measured / "
                f"estimate {prefill_ms / (e.prefill_s * 1e3):.2f}")
    summary.say(f"Llama decode step (context {plan.prompt}…{plan.prompt + plan.generate - 1}): "
                f"measured {decode_ms:.3f} ms, llm estimate {e.decode_s_per_token * 1e3:.3f} ms "
                f"({e.bound['decode']}-bound), bandwidth limit {limit_ms:.3f} ms; measured / "
                f"estimate {decode_ms / (e.decode_s_per_token * 1e3):.2f}, measured / limit "
                f"{decode_ms / limit_ms:.2f}")


def _random_llama(transformers, config, device: str, dtype, torch):
    """LlamaForCausalLM of `config` built on `device` (its random initialization drawn there),
    then cast to `dtype`."""
    torch.manual_seed(0)
    with torch.device(device):
        return transformers.LlamaForCausalLM(config).to(dtype).eval()


def _timed_llama(model, plan: Plan, torch, cuda: bool) -> tuple[float, float]:
    """(median ms of the prefill of `plan.prompt` tokens, mean ms of a decode step over
    `plan.generate` steps after it), with CUDA events on the GPU, perf_counter on CPU."""
    device = next(model.parameters()).device
    generator = torch.Generator(device="cpu").manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (1, plan.prompt), generator=generator)
    ids = ids.to(device)

    def clock():
        if not cuda:
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def ms(start, end) -> float:
        if not cuda:
            return (end - start) * 1e3
        end.synchronize()
        return start.elapsed_time(end)

    prefills, decodes = [], []
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # transformers' notes on the cache argument's name
        for _ in range(3):  # the first warms up the kernels and the allocator
            start = clock()
            out = model(input_ids=ids, use_cache=True)
            prefills.append(ms(start, clock()))
            cache, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
            start = clock()
            for _ in range(plan.generate):
                out = model(input_ids=token, past_key_values=cache, use_cache=True)
                cache, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
            decodes.append(ms(start, clock()) / plan.generate)
    return statistics.median(prefills[1:]), statistics.median(decodes[1:])


if __name__ == "__main__":
    sys.exit(main())
