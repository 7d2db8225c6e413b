"""Serving costs of a causal LM from its own graphs: the prompt, each generated token, the KV
cache, the parameters active per token, and a roofline estimate on named hardware."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from onnxflops import formats
from onnxflops.errors import OnnxFlopsError
from onnxflops.formats import Rows, Table
from onnxflops.serving.cache import STATE, KvLayer, kv_layers, layer_runs, state_layers
from onnxflops.progress import step, steps
from onnxflops.serving.hardware import Hardware, hardware as find_hardware
from onnxflops.serving.phases import (DEFAULT_DTYPE, DTYPE_BITS, LayersNotAlike, Phase,
                                      PhaseCost, Timing, Traffic)
from onnxflops.results import human
from onnxflops.sources import causal_lm, is_causal_lm

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
    # What the prefill graph holds (and the framework's params no node reads), extended to all
    # layers as its MACs are: the count's own params, where `total` is the framework's.
    counted: int | None = None


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
    hardware: Hardware
    estimate: Estimate
    decode_phase: Phase = field(repr=False)
    prefill_phase: Phase = field(repr=False)
    # Each layer's cache at the end of generation: its kind, positions held, bytes per token;
    # then each recurrent layer's state (kind "state").
    kv_layers: list[KvLayer] = field(default_factory=list, repr=False)
    # Where the weights' dtype came from: "as given", "the config's bfloat16", "the default: ...".
    dtype_from: str = "as given"

    @property
    def kv_cache_bytes(self) -> int:
        """Σ bytes of the layers' keys and values at the end of generation (prompt + generate
        tokens), as served: Σ kv_cache_by_layer."""
        return sum(self.kv_cache_by_layer().values())

    def kv_cache_by_layer(self) -> dict[int, int]:
        """{layer: bytes of its keys and values at the end of generation}: every kv_layers entry
        but the recurrent states."""
        return {layer.layer: layer.bytes for layer in self.kv_layers if layer.kind != STATE}

    @property
    def state_bytes(self) -> int:
        """Σ bytes of the recurrent states (kind "state": linear-attention and Mamba-like
        layers), a fixed size per sequence whatever the tokens; not in kv_cache_bytes."""
        return sum(layer.bytes for layer in self.kv_layers if layer.kind == STATE)

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
            "kv_cache_bytes": self.kv_cache_bytes, "state_bytes": self.state_bytes,
            "kv_cache_layers": [layer.to_dict() for layer in self.kv_layers],
            "hardware": {"name": hw.name, "peak_flops_per_s": hw.peak(compute),
                         "precision": hw.precision(compute),
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
        """One record per phase (prefill, the first and last decode steps, all decode steps),
        or with by="kv" per layer's KV cache at the end of generation."""
        if by == "kv":
            return Rows(["layer", "kind", "positions", "bytes_per_token", "bytes"],
                        [layer.to_dict() for layer in self.kv_layers])
        if by != "phase":
            raise ValueError(f"by={by!r}: phase or kv")
        return Rows(["phase"], [{"phase": name, **cost.to_dict()} for name, cost in self.phases()])

    def kv_kinds(self) -> list[tuple[str, list[int], int, float, int, str]]:
        """The cache's layers grouped by form: (kind, layers, positions held, bytes per token,
        bytes of them all, note), in order of first appearance."""
        groups: dict[tuple, list[KvLayer]] = {}
        for layer in self.kv_layers:
            groups.setdefault((layer.kind, layer.positions, layer.bytes_per_token, layer.note),
                              []).append(layer)
        return [(kind, [x.layer for x in layers], positions, per_token,
                 sum(x.bytes for x in layers), note)
                for (kind, positions, per_token, note), layers in groups.items()]

    def view(self) -> list:
        e, hw = self.estimate, self.hardware
        blocks: list = [
            f"{self.model}: batch {self.batch}, prompt {self.prompt}, generate "
            f"{self.generate}, weights {self.dtype} ({self.dtype_from}), KV cache "
            f"{self.kv_dtype}",
            f"params: {human(self.params.total)} total, {human(self.params.active)} active "
            f"per token; KV cache at the end: {human(self.kv_cache_bytes)}B"
            + (f"; recurrent state: {human(self.state_bytes)}B" if self.state_bytes else ""),
            "",
            Table(["phase", "MACs", "FLOPs", "read", "written"],
                  [[name, human(cost.macs), human(cost.flops), human(cost.bytes_read) + "B",
                    human(cost.bytes_written) + "B"] for name, cost in self.phases()],
                  left=1, widths=[14, 10, 10, 10, 10], gap="")]
        if self.kv_layers:
            kinds = self.kv_kinds()
            blocks += ["", Table(["KV cache", "layers", "positions", "per token per layer",
                                  "bytes"],
                                 [[kind, layer_runs(layers), str(positions),
                                   human(per_token) + "B", human(size) + "B"]
                                  for kind, layers, positions, per_token, size, _ in kinds],
                                 left=2),
                       *(f"  {kind}: {note}" for kind, note in dict.fromkeys(
                           (kind, note) for kind, *_, note in kinds if kind != "full"))]
        reads = self.decode_reads()
        layer = next((b for b in reads if b.split(".")[-1].isdigit()), None)
        if layer is not None:
            blocks += ["", f"a decode step at context {self.prompt} reads, per layer ({layer}): "
                           f"{human(reads[layer]['weights'])}B of weights ({self.dtype}), "
                           f"{human(reads[layer]['other'])}B of KV cache and activations "
                           f"({self.kv_dtype})"]
        compute = compute_dtype(self.dtype)
        blocks += ["", f"on {hw.name} ({human(hw.peak(compute))}FLOP/s {hw.precision(compute)}, "
                       f"{human(hw.bandwidth_bytes_per_s)}B/s), roofline per node:",
                   f"  prefill {_ms(e.prefill_s)} ({e.bound['prefill']}-bound); decode "
                   f"{_ms(e.decode_s_per_token)} per step ({e.bound['decode']}-bound), "
                   f"{e.tokens_per_s:,.0f} tokens/s"]
        return blocks


def llm(model, prompt: int, generate: int, batch: int = 1, hardware: str | Hardware = "h100",
        dtype: str | None = None, kv_dtype: str | None = None) -> LlmReport:
    """Serving costs of the causal LM `model`: a transformers model, its config (object,
    config.json or folder), a `package.module:factory` spec, or its graphs already exported
    (converters.causal_lm_to_onnx).

    The prompt pass and one decode step (one token, the KV cache as input) are each exported once
    with their lengths symbolic and counted as formulas; `decode_total` sums the steps at contexts
    prompt … prompt + generate - 1. A model whose decoder layers are all alike is exported cut to
    one layer and to two, and every number extended exactly to all its layers
    (Phase.extended); others with all their layers. Bytes are in the serving dtypes: weights in
    `dtype` (fp32, bf16, fp16, int8, int4; default: the one the model's config names, its
    `dtype` or a config.json's `torch_dtype`, and bf16 where it names none: served_dtypes),
    activations and the KV cache in `kv_dtype` (default: bf16, fp32 for fp32 weights, fp16 for
    fp16 ones), whatever dtype the graphs hold their tensors in.
    """
    for name, value in (("prompt", prompt), ("generate", generate), ("batch", batch)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise OnnxFlopsError(f"{name} must be a positive integer, not {value!r}")
    for name, value in (("dtype", dtype), ("KV cache dtype", kv_dtype)):
        if value is not None and value not in DTYPE_BITS:
            raise OnnxFlopsError(f"unknown {name} '{value}': choose one of "
                                 f"{', '.join(DTYPE_BITS)}")
    with steps("llm"):
        with step("measuring the hardware"):
            hw = find_hardware(hardware)
        lm = _exported(model, prompt)
        dtype, kv_dtype, dtype_from = served_dtypes(dtype, kv_dtype, lm.dtype)
        lm, prefill, decode = _counted(model, lm, Traffic(DTYPE_BITS[dtype],
                                                          DTYPE_BITS[kv_dtype]), prompt)
    config = _config_mapping(getattr(lm, "config", None), model)
    last = prompt + generate - 1
    first_step, last_step = (decode.at(batch=batch, context=c) for c in (prompt, last))
    decode_total = decode.summed("context", prompt, last, batch=batch)
    total = lm.params
    active = active_params(total, lm.expert_params, lm.experts, lm.experts_per_token)
    compute = compute_dtype(dtype)
    contexts = np.arange(prompt, last + 1)
    prefill_time = prefill.seconds(hw, compute, batch=batch, prompt=prompt)
    decode_time = decode.seconds(hw, compute, batch=batch, context=contexts)
    decode_s = float(np.sum(decode_time.seconds))
    estimate = Estimate(float(prefill_time.seconds), decode_s / generate,
                        batch * generate / decode_s if decode_s else float("inf"),
                        {"prefill": prefill_time.bound, "decode": decode_time.bound},
                        {"prefill": _floats(prefill_time), "decode": _floats(decode_time)})
    cache = kv_layers(decode.inputs, config, DTYPE_BITS[kv_dtype], batch, prompt + generate)
    states = state_layers(decode.inputs, DTYPE_BITS[kv_dtype], batch)
    return LlmReport(lm.name, batch, prompt, generate, dtype, kv_dtype,
                     Params(total, active, prefill.params), prefill.at(batch=batch, prompt=prompt),
                     first_step, last_step, decode_total, hw, estimate, decode, prefill,
                     cache + states, dtype_from)


# The dtypes a config names (torch's names) that weights are served in, by onnxflops' names.
_NAMED_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def served_dtypes(dtype: str | None, kv_dtype: str | None,
                  named: str | None) -> tuple[str, str, str]:
    """(weights' dtype, KV cache's dtype, where the weights' came from): `dtype` where given,
    else the one the config names (`named`, torch's name: float32, bfloat16, float16), else
    DEFAULT_DTYPE (bf16); the KV cache's `kv_dtype` where given, else the weights' for fp32 and
    fp16 weights, bf16 otherwise."""
    if dtype is not None:
        where = "as given"
    elif named in _NAMED_DTYPES:
        dtype, where = _NAMED_DTYPES[named], f"the config's {named}"
    else:
        dtype = DEFAULT_DTYPE
        where = "the default: the config names " + (f"{named}, not served" if named else "none")
    return dtype, kv_dtype or (dtype if dtype in ("fp32", "fp16") else "bf16"), where


def _exported(model, prompt: int):
    """The causal LM exported, cut to fewer layers where they are alike; its prefill at `prompt`
    tokens where the model's code fixes the prompt's length."""
    lm = causal_lm(model, extend_layers=True, prompt=prompt)
    fixed = getattr(lm, "prefill_prompt", None)
    if fixed is not None and fixed != prompt:
        raise OnnxFlopsError(f"{lm.name}: its prefill graph was exported at a prompt of {fixed} "
                             f"tokens (its code fixes the length), not {prompt}")
    return lm


def _counted(model, lm, traffic: Traffic, prompt: int):
    """The phases of `lm` (exported from `model`), with `lm` itself: exported again with all its
    layers where its counts cut to one and two layers do not extend."""
    try:
        return (lm, *_phases(lm, traffic))
    except LayersNotAlike as e:
        if is_causal_lm(model):
            raise OnnxFlopsError(f"{lm.name}: its counts cut to one and two layers do not extend "
                                 f"to {lm.layers} ({e}); export it with causal_lm_to_onnx("
                                 "model) instead") from None
        lm = causal_lm(model, prompt=prompt)  # all layers, as the model has them
        return (lm, *_phases(lm, traffic))


def _phases(lm, traffic: Traffic) -> tuple[Phase, Phase]:
    """The prefill and decode-step phases of `lm`, counted as formulas; extended to all its
    layers where it was exported cut to fewer (see Phase.extended)."""
    from onnxflops.api import count_with_model

    graphs = [(lm.prefill, lm.decode), *([lm.one_layer] if lm.one_layer else [])]
    top_k = lm.experts_per_token if lm.experts else 0
    counted = []
    for prefill_graph, decode_graph in graphs:
        phases = (Phase(count_with_model(prefill_graph, symbolic=True, keep_bound=False),
                        ("batch", "prompt"), traffic, top_k),
                  Phase(count_with_model(decode_graph, symbolic=True, keep_bound=False),
                        ("batch", "context"), traffic, top_k))
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


def active_params(total: int, expert_params: int, experts: int, top_k: int) -> int:
    """Params a token runs: total − routed + routed · k/E. Its k routed experts of E per layer,
    and every other param: attention, dense layers, shared experts (not among the routed)."""
    return total - expert_params + (expert_params * top_k // experts if experts else
                                    expert_params)


def _config_mapping(config: Any, model: Any) -> Mapping[str, Any] | None:
    """The model's config as a mapping (kv_layers reads it): the CausalLM's where it carries one,
    else that of the transformers model or config `model` was given as; None for a spec or a
    path (loaded by the converter)."""
    if config is None and not isinstance(model, str):
        config = getattr(model, "config", None)
        if config is None and hasattr(model, "to_dict") and hasattr(model, "model_type"):
            config = model  # a transformers config itself
    if isinstance(config, Mapping):
        return config
    return config.to_dict() if hasattr(config, "to_dict") else None


def _floats(timing: Timing) -> dict[str, float]:
    return {op: float(np.sum(t)) for op, t in timing.by_op_type.items()}


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms" if seconds < 1 else f"{seconds:.3g} s"
