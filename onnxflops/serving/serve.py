"""Serving costs of a causal LM from its own graphs: the prompt, each generated token, the KV
cache, the parameters active per token, and a roofline estimate on named hardware."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from onnxflops import formats
from onnxflops.errors import OnnxFlopsError
from onnxflops.formats import Rows, Table
from onnxflops.serving.hardware import Hardware, hardware as find_hardware
from onnxflops.serving.phases import (DTYPE_BITS, LayersNotAlike, Phase, PhaseCost, Timing,
                                      Traffic, tensor_bytes)
from onnxflops.report import human

# What the tensor cores compute in when weights are stored so: int4 weights are dequantised to
# bf16 (weight-only quantisation); int8 ones run int8 GEMMs (W8A8).
_COMPUTE_DTYPE = {"fp32": "fp32", "bf16": "bf16", "fp16": "fp16", "int8": "int8", "int4": "bf16"}


def compute_dtype(weights: str) -> str:
    """The dtype the products run in, whose peak applies, for weights stored as `weights`."""
    return _COMPUTE_DTYPE[weights]


@dataclass
class Params:
    total: int
    active: int  # per token: all but the experts a token is not routed to


@dataclass
class Estimate:
    prefill_s: float
    decode_s_per_token: float  # one decode step of the whole batch, averaged over the generation
    tokens_per_s: float  # tokens generated per second over the batch
    bound: dict[str, str]  # per phase: "compute" or "memory"
    by_op_type: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)


@dataclass
class LlmReport(formats.Rendered):
    """Serving costs of a causal LM: the phases, the KV cache, the estimate on `hardware`.
    `to_table`, `to_json` (and onnxflops.formats) write it; `rows()` and `to_pandas()` give its
    phases as records."""
    model: str
    batch: int
    prompt: int
    generate: int
    dtype: str
    kv_dtype: str
    params: Params
    prefill: PhaseCost
    decode_first: PhaseCost  # one token generated with `prompt` tokens in the cache
    decode_last: PhaseCost  # with prompt + generate - 1
    decode_total: PhaseCost  # all `generate` steps
    kv_cache_bytes: int  # at the end of generation: prompt + generate tokens
    hardware: Hardware
    estimate: Estimate
    decode_phase: Phase = field(repr=False)
    prefill_phase: Phase = field(repr=False)

    def decode_at(self, context: Any) -> PhaseCost:
        """One decode step with `context` tokens in the cache; a symbol or a name gives formulas."""
        if isinstance(context, str):
            context = self.decode_phase.symbols[1]  # the `context` symbol itself
        return self.decode_phase.at(batch=self.batch, context=context)

    def decode_reads(self, context: int | None = None) -> dict[str, dict[str, Any]]:
        """What one decode step reads per block (each transformer layer, the embedding, the
        head): its weights, and the rest (the KV cache, activations). Default: context prompt."""
        return self.decode_phase.by_block(batch=self.batch,
                                          context=self.prompt if context is None else context)

    def to_dict(self) -> dict[str, Any]:
        hw = self.hardware
        compute = compute_dtype(self.dtype)
        return {
            "model": self.model, "batch": self.batch, "prompt": self.prompt,
            "generate": self.generate, "dtype": self.dtype, "kv_dtype": self.kv_dtype,
            "params": {"total": self.params.total, "active": self.params.active},
            "prefill": self.prefill.to_dict(), "decode_first": self.decode_first.to_dict(),
            "decode_last": self.decode_last.to_dict(), "decode_total": self.decode_total.to_dict(),
            "kv_cache_bytes": self.kv_cache_bytes,
            "hardware": {"name": hw.name, "peak_flops_per_s": hw.peak(compute),
                         "bandwidth_bytes_per_s": hw.bandwidth_bytes_per_s},
            "estimate": {"prefill_s": self.estimate.prefill_s,
                         "decode_s_per_token": self.estimate.decode_s_per_token,
                         "tokens_per_s": self.estimate.tokens_per_s,
                         "bound": self.estimate.bound},
        }

    def to_json(self) -> str:
        return formats.to_json(self)

    def to_table(self) -> str:
        return formats.to_text(self)

    def phases(self) -> tuple[tuple[str, PhaseCost], ...]:
        """The phases by name: prefill, the first and last decode steps, all decode steps."""
        return (("prefill", self.prefill), ("decode first", self.decode_first),
                ("decode last", self.decode_last), ("decode total", self.decode_total))

    def rows(self, by: str = "phase") -> Rows:
        """One record per phase: prefill, the first and last decode steps, all decode steps."""
        if by != "phase":
            raise ValueError(f"by={by!r}: phase")
        return Rows(["phase"], [{"phase": name, **cost.to_dict()} for name, cost in self.phases()])

    def view(self) -> list:
        e, hw = self.estimate, self.hardware
        blocks: list = [
            f"{self.model}: batch {self.batch}, prompt {self.prompt}, generate "
            f"{self.generate}, weights {self.dtype}, KV cache {self.kv_dtype}",
            f"params: {human(self.params.total)} total, {human(self.params.active)} active "
            f"per token; KV cache at the end: {human(self.kv_cache_bytes)}B", "",
            Table(["phase", "MACs", "FLOPs", "read", "written"],
                  [[name, human(cost.macs), human(cost.flops), human(cost.bytes_read) + "B",
                    human(cost.bytes_written) + "B"] for name, cost in self.phases()],
                  left=1, widths=[14, 10, 10, 10, 10], gap="")]
        reads = self.decode_reads()
        layer = next((b for b in reads if b.split(".")[-1].isdigit()), None)
        if layer is not None:
            blocks += ["", f"a decode step at context {self.prompt} reads, per layer ({layer}): "
                           f"{human(reads[layer]['weights'])}B of weights, "
                           f"{human(reads[layer]['other'])}B of KV cache and activations"]
        blocks += ["", f"on {hw.name} ({human(hw.peak(compute_dtype(self.dtype)))}FLOP/s "
                       f"{compute_dtype(self.dtype)}, {human(hw.bandwidth_bytes_per_s)}B/s), "
                       "roofline per node:",
                   f"  prefill {_ms(e.prefill_s)} ({e.bound['prefill']}-bound); decode "
                   f"{_ms(e.decode_s_per_token)} per step ({e.bound['decode']}-bound), "
                   f"{e.tokens_per_s:,.0f} tokens/s"]
        return blocks


def llm(model, prompt: int, generate: int, batch: int = 1, hardware: str | Hardware = "h100",
        dtype: str = "bf16", kv_dtype: str | None = None) -> LlmReport:
    """Serving costs of the causal LM `model`: a transformers model, its config (object,
    config.json or folder), a `package.module:factory` spec, or its graphs already exported
    (converters.causal_lm_to_onnx).

    The prompt pass and one decode step (one token, the KV cache as input) are each exported once
    with their lengths symbolic and counted as formulas; `decode_total` sums the steps at contexts
    prompt … prompt + generate - 1. A model whose decoder layers are all alike is exported cut to
    one layer and to two, and every number extended exactly to all its layers
    (Phase.extended); others with all their layers. Bytes are in the serving dtypes: weights in `dtype`
    (fp32, bf16, fp16, int8, int4), activations and the KV cache in `kv_dtype` (default: bf16,
    fp32 for fp32 weights, fp16 for fp16 ones).
    """
    from onnxflops.converters.causal_lm import CausalLM, causal_lm_to_onnx

    for name, value in (("prompt", prompt), ("generate", generate), ("batch", batch)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise OnnxFlopsError(f"{name} must be a positive integer, not {value!r}")
    if dtype not in DTYPE_BITS:
        raise OnnxFlopsError(f"unknown dtype '{dtype}': choose one of {', '.join(DTYPE_BITS)}")
    kv_dtype = kv_dtype or (dtype if dtype in ("fp32", "fp16") else "bf16")
    if kv_dtype not in DTYPE_BITS:
        raise OnnxFlopsError(f"unknown KV cache dtype '{kv_dtype}': choose one of "
                             f"{', '.join(DTYPE_BITS)}")
    hw = find_hardware(hardware)
    traffic = Traffic(DTYPE_BITS[dtype], DTYPE_BITS[kv_dtype])
    lm = model if isinstance(model, CausalLM) else causal_lm_to_onnx(model, extend_layers=True)
    try:
        prefill, decode = _phases(lm, traffic)
    except LayersNotAlike as e:
        if isinstance(model, CausalLM):
            raise OnnxFlopsError(f"{lm.name}: its counts cut to one and two layers do not extend "
                                 f"to {lm.layers} ({e}); export it with causal_lm_to_onnx("
                                 "model) instead") from None
        lm = causal_lm_to_onnx(model)  # all layers, as the model has them
        prefill, decode = _phases(lm, traffic)
    last = prompt + generate - 1
    first_step, last_step = (decode.at(batch=batch, context=c) for c in (prompt, last))
    decode_total = _sum_affine(decode, batch, prompt, last, first_step, last_step)
    total = lm.params
    active = total - lm.expert_params + (lm.expert_params * lm.experts_per_token // lm.experts
                                         if lm.experts else lm.expert_params)
    compute = compute_dtype(dtype)
    contexts = np.arange(prompt, last + 1)
    prefill_time = prefill.seconds(hw, compute, batch=batch, prompt=prompt)
    decode_time = decode.seconds(hw, compute, batch=batch, context=contexts)
    decode_s = float(np.sum(decode_time.seconds))
    estimate = Estimate(float(prefill_time.seconds), decode_s / generate,
                        batch * generate / decode_s if decode_s else float("inf"),
                        {"prefill": prefill_time.bound, "decode": decode_time.bound},
                        {"prefill": _floats(prefill_time), "decode": _floats(decode_time)})
    return LlmReport(lm.name, batch, prompt, generate, dtype, kv_dtype, Params(total, active),
                     prefill.at(batch=batch, prompt=prompt), first_step, last_step, decode_total,
                     _kv_cache_bytes(decode, DTYPE_BITS[kv_dtype], batch, prompt + generate), hw,
                     estimate, decode, prefill)


def _phases(lm, traffic: Traffic) -> tuple[Phase, Phase]:
    """The prefill and decode-step phases of `lm`, counted as formulas; extended to all its
    layers where it was exported cut to fewer (see Phase.extended)."""
    from onnxflops.api import count_with_model

    graphs = [(lm.prefill, lm.decode), *([lm.one_layer] if lm.one_layer else [])]
    counted = []
    for prefill_graph, decode_graph in graphs:
        phases = (Phase(count_with_model(prefill_graph, symbolic=True, keep_bound=False),
                        ("batch", "prompt"), traffic),
                  Phase(count_with_model(decode_graph, symbolic=True, keep_bound=False),
                        ("batch", "context"), traffic))
        for phase, label in zip(phases, ("prefill", "decode step")):
            if phase.report.uncosted:
                first = phase.report.uncosted[0]
                raise OnnxFlopsError(f"{lm.name}: the {label} graph has "
                                     f"{len(phase.report.uncosted)} uncosted node(s), first "
                                     f"{first.name} ({first.op_type}): {first.reason}")
        counted.append(phases)
    if not lm.one_layer:
        return counted[0]
    (prefill, decode), (prefill_one, decode_one) = counted
    return prefill.extended(prefill_one, lm.layers), decode.extended(decode_one, lm.layers)


def _sum_affine(decode: Phase, batch: int, first: int, last: int, first_step: PhaseCost,
                last_step: PhaseCost) -> PhaseCost:
    """Σ of the decode step over contexts first … last. The step is affine in the context (the
    attention reads a cache that grows by one token): the sum is the mean of the two ends times
    their number, exact where the middle step checks it; summed one by one otherwise."""
    count = last - first + 1
    middle = (first + last) // 2
    middle_step = decode.at(batch=batch, context=middle)
    totals = []
    for key in ("macs", "flops", "bytes_read", "bytes_written"):
        a, m, b = (getattr(c, key) for c in (first_step, middle_step, last_step))
        affine = (m - a) * (last - first) == (b - a) * (middle - first)
        if affine and (a + b) * count % 2 == 0:
            totals.append((a + b) * count // 2)
        else:
            totals.append(sum(getattr(decode.at(batch=batch, context=c), key)
                              for c in range(first, last + 1)))
    return PhaseCost(*totals)


def _kv_cache_bytes(decode: Phase, bits: int, batch: int, tokens: int) -> int:
    """The cache inputs of the decode step at `tokens` tokens, in the cache's dtype."""
    return sum(tensor_bytes(shape, 1, bits, batch=batch, context=tokens)
               for name, shape in decode.inputs.items() if name.startswith("past_"))


def _floats(timing: Timing) -> dict[str, float]:
    return {op: float(np.sum(t)) for op, t in timing.by_op_type.items()}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"
