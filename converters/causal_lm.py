"""A Hugging Face causal language model → its two serving graphs, each exported once.

- prefill: the model called on a prompt, dims `batch` × `prompt` left symbolic;
- decode: the model called on one new token with its KV cache (`past_key_values`) holding
  `context` tokens, `batch` and `context` left symbolic.

Counted with symbolic=True, each graph gives formulas that are then evaluated at any prompt or
context length.

A model whose decoder layers are all alike (the same modules with the same shapes and settings,
no per-layer list in its config that varies: no alternating sliding-window and dense attention,
no MoE on some layers only) can be exported cut to one layer and to two instead
(`extend_layers=True`): an export's time grows with the depth, theirs does not, and every count
extends exactly to all layers, one + (layers - 1) × (two - one), which serving does.

Mixture-of-experts layers are exported with transformers' `batched_mm` experts: each token is
dispatched to exactly its top-k experts by gathering their weights, so the graph holds the T·k
expert products that the model runs, with no data-dependent loop (the default implementation's
per-expert loop does not export). torch and transformers are imported only here.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import onnx

from onnxflops.converters.common import (framework_logging_silenced, framework_needed,
                                         import_transformers, root_cause)
from onnxflops.converters.factory import is_factory_spec, load_factory
from onnxflops.converters.torch_ops import experts_exported_as
from onnxflops.converters.from_torch import (OPSET, RECURRENT_STATES, captured_program, eval_mode,
                                             export_dynamo, record_torch_weight_roles,
                                             recurrent_state_tensors)
from onnxflops.progress import step
from onnxflops.errors import OnnxFlopsError, first_line

# Example sizes the graphs are traced at: neither may be 0 or 1, which torch.export would
# specialise on, and they differ so that no dim is taken for another.
_EXAMPLE_BATCH, _EXAMPLE_PROMPT, _EXAMPLE_CONTEXT = 2, 5, 7
# Where a cache tensor keeps its tokens: [batch, kv_heads, tokens, head_dim] in every HF model.
_TOKEN_AXIS = 2


@dataclass
class CausalLM:
    """The two graphs of a causal LM, and what the graphs cannot tell."""

    name: str
    prefill: onnx.ModelProto  # inputs: input_ids [batch, prompt]
    decode: onnx.ModelProto  # inputs: input_ids [batch, 1], one key and one value per layer
    experts: int  # experts per MoE layer (0: a dense model)
    experts_per_token: int  # top-k
    params: int  # the model's own count, each tied tensor once (the graphs record which of
    # their initializers are parameters and which buffers, as every torch conversion does)
    expert_params: int  # parameters of all experts of all layers
    layers: int = 0  # decoder layers of the model
    # Set when the model was exported cut to two layers (prefill and decode) and to one (these).
    one_layer: tuple[onnx.ModelProto, onnx.ModelProto] | None = None
    # The model's config as a plain dict (transformers' to_dict()): what the serving layer reads
    # of the cache's form per layer (layer_types, sliding_window, kv_lora_rank, ...).
    config: dict = field(default_factory=dict)
    # The prompt length the prefill graph holds where the model's code fixes it (a chunked
    # linear attention's Python loop over chunks); None: the graph's prompt is symbolic.
    prefill_prompt: int | None = None
    # The dtype the model's config names for its weights, by torch's name ("bfloat16"), which
    # serving reads them in unless told otherwise; None where it names none.
    dtype: str | None = None


def load_causal_lm(source):
    """A transformers model from what a user names: a model, a config (object, config.json or
    a folder holding one), or a `package.module:factory` spec returning a model. A config is
    built on the meta device: its graphs need no weight values, so an 8B config costs no memory
    for weights; and in float32 whatever dtype it names, so that its graphs are the same for
    every dtype (the dtype it names is the one served: named_dtype). The config given is not
    changed."""
    import torch

    transformers = import_transformers()
    source = _config_or_model(source, transformers)
    if isinstance(source, transformers.PretrainedConfig):
        _check_sizes(source)
        source = as_decoder(copy.deepcopy(source))
        try:
            with _quiet(), torch.device("meta"):
                return transformers.AutoModelForCausalLM.from_config(source, dtype=torch.float32)
        except (RuntimeError, ValueError, TypeError, KeyError, AttributeError, OverflowError,
                ZeroDivisionError, AssertionError) as e:  # what a config's odd values raise
            raise OnnxFlopsError(f"{type(source).__name__}: no model can be built from this "
                                 f"config ({first_line(e)})") from None
    if isinstance(source, transformers.PreTrainedModel):
        return source
    raise OnnxFlopsError(f"cannot serve a {type(source).__name__}: give a transformers causal LM, "
                         "its config (object or config.json) or a package.module:factory spec")


def _config_or_model(source, transformers):
    """A path read as its config.json, a factory spec called; anything else as it is."""
    if isinstance(source, (str, Path)) and not Path(source).exists() and \
            is_factory_spec(str(source)):
        with framework_needed(str(source)):
            source = load_factory(str(source))
    if isinstance(source, (str, Path)):
        source = _read_config(Path(source), transformers)
    return source


def named_dtype(source) -> str | None:
    """The dtype a model's config names for its weights, by torch's name ("bfloat16"): its
    `dtype` (transformers reads a config.json's `torch_dtype` into it), else its text config's;
    None where neither names one (or names "auto")."""
    config = getattr(source, "config", source)
    for holder in (config, text_config(config)):
        dtype = getattr(holder, "dtype", None)
        name = str(dtype).removeprefix("torch.") if dtype is not None else None
        if name and name != "auto":
            return name
    return None


def text_config(config):
    """The config of the model's text decoder: a multimodal model's `text_config` (Gemma 3's,
    Fuyu's: its vocabulary, layers, windows and heads), the config itself otherwise
    (transformers' get_text_config)."""
    get = getattr(config, "get_text_config", None)
    return get() if callable(get) else config


def as_decoder(config):
    """`config` with `is_decoder` set where it has that setting: a causal-LM head on an encoder
    family (BERT, RoBERTa, ELECTRA) attends causally and keeps a KV cache only as a decoder
    (transformers warns to set it); every other config is left as it is. Returned."""
    if getattr(config, "is_decoder", None) is False:
        config.is_decoder = True
    return config


def causal_lm_to_onnx(model, *, extend_layers: bool = False,
                      prompt: int | None = None) -> CausalLM:
    """Export `model` (see `load_causal_lm` for what it may be) once for prefill, once for decode;
    with `extend_layers`, a model of three or more alike layers cut to two layers and to one
    (`CausalLM.one_layer`), whatever its depth. A model whose code fixes the prompt's length in
    its trace (a Python loop over chunks of the prompt) has its prefill exported at `prompt`
    tokens (`CausalLM.prefill_prompt`); without `prompt`, it is one line."""
    with framework_needed("a causal LM"):
        return _causal_lm_to_onnx(model, extend_layers, prompt)


def _causal_lm_to_onnx(model, extend_layers: bool, prompt: int | None = None) -> CausalLM:
    model = _config_or_model(model, import_transformers())
    dtype = named_dtype(model)
    model = load_causal_lm(model)
    name = type(model).__name__
    config = text_config(model.config)
    experts = _experts_per_layer(model)
    stack = _decoder_layers(model)
    cut = extend_layers and stack is not None and len(stack[2]) > 2 and _alike(model, stack[2])
    with experts_exported_as(model, only_from=None), eval_mode(model):
        if cut:
            with _cut_to(model, stack, 1):
                one_layer = _named_phases(model, name, prompt)
            with _cut_to(model, stack, 2):
                prefill, decode = _named_phases(model, name, prompt)
        else:
            prefill, decode = _named_phases(model, name, prompt)
    fixed = _fixed_prompt(prefill)
    expert_params = sum(p.numel() for n, p in model.named_parameters() if ".experts." in n)
    return CausalLM(name, prefill, decode, experts,
                    experts_per_token(config) if experts else 0,
                    sum(p.numel() for p in model.parameters()), expert_params,
                    len(stack[2]) if stack is not None else 0, one_layer if cut else None,
                    config.to_dict(), fixed, dtype)


# What configs call the experts a token is routed to (Mixtral, gpt-oss, Aria, Qwen-MoE forms).
_TOP_K_KEYS = ("num_experts_per_tok", "num_experts_per_token", "experts_per_token", "moe_topk",
               "moe_k", "top_k")


def experts_per_token(config) -> int:
    """k of a top-k mixture of experts: the first of _TOP_K_KEYS the config sets to a positive
    int (0 where none is)."""
    for key in _TOP_K_KEYS:
        value = getattr(config, key, None)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0


def _experts_per_layer(model) -> int:
    """Experts per MoE layer (0: a dense model): the `num_experts` of transformers' expert
    modules, whatever the config calls it (num_local_experts, num_experts, n_routed_experts)."""
    counts = {int(getattr(module, "num_experts", 0) or 0) for name, module in model.named_modules()
              if name.rsplit(".", 1)[-1] == "experts"}
    return max(counts, default=0)


def _fixed_prompt(prefill: onnx.ModelProto) -> int | None:
    """The prompt length the prefill graph's input_ids hold as a number; None where symbolic."""
    dims = prefill.graph.input[0].type.tensor_type.shape.dim
    return dims[1].dim_value if len(dims) > 1 and dims[1].HasField("dim_value") else None


def _tokens_decoded(step, args: tuple) -> int | None:
    """The tokens the decode step's logits are for, run once on `args` (one token and the
    cache); None where that run fails (the export then says why)."""
    import torch

    try:
        with torch.no_grad(), _quiet():
            logits = step(*args)
    except Exception:  # noqa: BLE001 - the model's own code raises anything
        return None
    return int(logits.shape[1]) if getattr(logits, "dim", lambda: 0)() == 3 else None


def _fixed_context(decode: onnx.ModelProto) -> int | None:
    """The positions the decode graph's keys and values (its `past…` inputs, [batch, heads,
    tokens, head size]) hold as a number where the trace fixed them (the exporter let a
    symbolic context go: ProphetNet's relative positions); None where they are symbolic."""
    for graph_input in decode.graph.input:
        dims = graph_input.type.tensor_type.shape.dim
        if graph_input.name.startswith("past") and len(dims) == 4 \
                and dims[_TOKEN_AXIS].HasField("dim_value"):
            return dims[_TOKEN_AXIS].dim_value
    return None


def _named_phases(model, name: str, prompt: int | None = None
                  ) -> tuple[onnx.ModelProto, onnx.ModelProto]:
    prefill, decode, attention = _export_phases(model, name, prompt)
    _name_cache_inputs(decode, attention)
    prefill.graph.name = decode.graph.name = name
    return prefill, decode


def _decoder_layers(model):
    """(parent module, attribute, ModuleList) of the model's decoder layers: its one ModuleList
    of `num_hidden_layers` modules; None where there is not exactly one."""
    import torch

    count = getattr(model.config, "num_hidden_layers", None)
    found = [(parent, attr, child) for parent in model.modules()
             for attr, child in parent.named_children()
             if isinstance(child, torch.nn.ModuleList) and len(child) == count]
    return found[0] if len(found) == 1 else None


def _alike(model, layers) -> bool:
    """Whether every decoder layer is the same: the same modules, parameter and buffer shapes and
    settings (but its index), and no per-layer list of the config (layer types, sliding windows,
    MoE placement) that varies."""
    per_layer = _per_layer_settings(model.config, len(layers))
    if any(len(set(map(repr, values))) > 1 for values in per_layer.values()):
        return False
    first = _layer_signature(layers[0])
    return all(_layer_signature(layer) == first for layer in layers[1:])


def _per_layer_settings(config, count: int) -> dict[str, list]:
    return {k: v for k, v in vars(config).items()
            if isinstance(v, (list, tuple)) and len(v) == count and not k.startswith("_")}


def _layer_signature(layer) -> list:
    """A decoder layer as its modules' types, plain settings, and tensor shapes and dtypes."""
    plain = (bool, int, float, str, type(None))
    signature = []
    for path, module in layer.named_modules():
        settings = sorted((k, repr(v)) for k, v in vars(module).items()
                          if isinstance(v, plain) and k not in ("layer_idx", "training"))
        tensors = [(n, tuple(t.shape), t.dtype) for n, t in (
            *module.named_parameters(recurse=False), *module.named_buffers(recurse=False))]
        signature.append((path, type(module).__qualname__, settings, tensors))
    return signature


@contextlib.contextmanager
def _cut_to(model, stack, count: int):
    """The model with its first `count` decoder layers only, its config saying so, for the
    duration."""
    import torch

    parent, attr, layers = stack
    config = model.config
    saved = {"num_hidden_layers": config.num_hidden_layers,
             **_per_layer_settings(config, len(layers))}
    setattr(parent, attr, torch.nn.ModuleList(layers[:count]))
    for key, value in saved.items():
        setattr(config, key, count if key == "num_hidden_layers" else value[:count])
    try:
        yield
    finally:
        setattr(parent, attr, layers)
        for key, value in saved.items():
            setattr(config, key, value)


def _export_phases(model, name: str, served_prompt: int | None = None
                   ) -> tuple[onnx.ModelProto, onnx.ModelProto, list[int]]:
    """The prefill and decode-step graphs, and the layers with keys and values in the cache; the
    prefill at `served_prompt` tokens where the model's code fixes the prompt's length."""
    import torch

    config = model.config
    batch = torch.export.Dim("batch", min=1, max=1 << 16)
    prompt = torch.export.Dim("prompt", min=1, max=1 << 24)
    context = torch.export.Dim("context", min=1, max=1 << 24)
    # Weights on the meta device meet inputs there: shapes flow, nothing is computed.
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, text_config(config).vocab_size, (_EXAMPLE_BATCH, _EXAMPLE_PROMPT),
                        generator=generator).to(device)
    try:
        with torch.no_grad(), _quiet():
            cache = model(input_ids=ids, use_cache=True).past_key_values
    except Exception as e:  # the model's own code raises anything; the user gets one line
        raise OnnxFlopsError(f"causal LM '{name}': cannot run it on a prompt "
                             f"({first_line(root_cause(e))})") from None
    if cache is None and getattr(config, "is_decoder", None) is False:
        raise OnnxFlopsError(f"causal LM '{name}': it keeps no KV cache, its config's is_decoder "
                             "being false; set it true to serve it as a decoder")
    past, cross = _self_attention_past(cache)
    if past is None:
        raise OnnxFlopsError(f"causal LM '{name}': its cache is not one of keys and values per "
                             "layer (a transformers DynamicCache, or one inside an "
                             "EncoderDecoderCache) and recurrent states; only such caches are "
                             "served")
    attention = [layer for layer, pair in enumerate(past) if pair is not None]
    past = [tuple(_resized(t, _EXAMPLE_CONTEXT) for t in past[layer]) for layer in attention]
    states = _layer_states(getattr(cache, "self_attention_cache", cache))
    recurrent = any(axis is None for s in states for _, axis, _ in s.values())
    try:
        prefill = _export(_prefill_module(model, recurrent), (ids,),
                          {"input_ids": {0: batch, 1: prompt}}, name,
                          stop_if_prompt_pinned=served_prompt is not None,
                          served={"prompt": served_prompt} if served_prompt else None)
    except _PromptPinned:  # its trace fixes the prompt: exported at the prompt served, below
        prefill = None
    except OnnxFlopsError:
        if served_prompt is None:
            raise
        # its trace's guards pin the prompt (Nemotron-H's scan asks for exactly one chunk of
        # 128 tokens, a guard no range states): exported at the prompt served, below
        prefill = None
    longer = _prompt_past_short_branch(prefill, served_prompt) if prefill is not None else None
    if longer is not None:
        longer_ids = torch.randint(0, text_config(config).vocab_size, (_EXAMPLE_BATCH, longer),
                                   generator=generator).to(device)
        prefill = _export(_prefill_module(model, recurrent), (longer_ids,),
                          {"input_ids": {0: batch, 1: prompt}}, name)
    if prefill is None or _fixed_prompt(prefill) is not None:  # a trace that fixed it
        if served_prompt is None:
            raise OnnxFlopsError(f"causal LM '{name}': its code fixes the prompt's length when "
                                 "traced (a Python loop over the prompt), so its prefill is "
                                 "exported at one prompt: give the prompt to serve it at")
        served = torch.randint(0, text_config(config).vocab_size, (_EXAMPLE_BATCH, served_prompt),
                               generator=generator).to(device)
        prefill = _export(_prefill_module(model, recurrent), (served,), {"input_ids": {0: batch}},
                          name)
    args = (ids[:, :1], past)
    shapes = {"input_ids": {0: batch},
              "past": [({0: batch, _TOKEN_AXIS: context},) * 2 for _ in past]}
    if any(states):  # the decode step's further cache inputs, of the layers that have them
        args += ([{key: _resized(t, _EXAMPLE_CONTEXT, axis) for key, (t, axis, _) in s.items()}
                  for s in states if s],)
        shapes["states"] = [{key: {0: batch, **({axis: context} if axis else {})}
                             for key, (_, axis, _) in s.items()} for s in states if s]
    step_tokens = _tokens_decoded(_decode_module(model, cross, states, attention), args)
    if step_tokens is not None and step_tokens != 1:
        raise OnnxFlopsError(f"causal LM '{name}': fed one token and the cache, its forward "
                             f"gives logits for {step_tokens} tokens: it decodes from the whole "
                             "sequence each step (its code slices the cached prefix off "
                             "itself), not from one token; it is not served")
    with _window_sizes_branch_free():
        decode = _export(_decode_module(model, cross, states, attention), args, shapes, name,
                         served={"context": served_prompt} if served_prompt else None)
    fixed = _fixed_context(decode)
    if fixed is not None:
        raise OnnxFlopsError(f"causal LM '{name}': its code fixes the cache's length when traced "
                             f"(the decode step's cache inputs hold {fixed} positions, not a "
                             "symbol), so a decode step's count is no formula in the context; "
                             "it is not served")
    _batch_named(decode)
    _name_state_inputs(decode, states)
    return prefill, decode, attention


def _prompt_past_short_branch(prefill: onnx.ModelProto, served_prompt: int | None) -> int | None:
    """U + 1, the prompt length to trace the prefill at again, where the graph holds only for
    prompts of at most U tokens (the exporter's ranges, which it records in the graph's
    metadata: the least upper bound of its symbols) and the prompt served is longer: the
    model's code took a branch for short prompts (LFM3 pads a prompt shorter than its
    convolution's 7 taps; traced at 5 tokens, the prefill held for 0 to 6). None otherwise."""
    ranges = next((p.value for p in prefill.graph.metadata_props
                   if p.key == "pkg.torch.export.ExportedProgram.range_constraints"), "")
    uppers = [int(u) for u in re.findall(r"VR\[-?\d+, (\d+)\]", ranges)]
    if served_prompt is None or not uppers or min(uppers) >= served_prompt:
        return None
    return min(uppers) + 1


def _batch_named(model: onnx.ModelProto) -> None:
    """The batch dim named `batch` wherever the graph's shapes hold it (inputs, outputs,
    value_info, inside expressions: 2*s12 → 2*batch): the symbol of input_ids' first dim. The
    exporter leaves it its own symbol (s12) where the decode step takes no keys (a model of
    recurrent layers only: Mamba), and the serving formulas know only `batch`."""
    dims = model.graph.input[0].type.tensor_type.shape.dim
    symbol = dims[0].dim_param if dims else ""
    if not symbol or symbol == "batch":
        return
    word = re.compile(rf"\b{re.escape(symbol)}\b")
    for vi in (*model.graph.input, *model.graph.output, *model.graph.value_info):
        for dim in vi.type.tensor_type.shape.dim:
            if dim.dim_param:
                dim.dim_param = word.sub("batch", dim.dim_param)


def _layer_states(cache) -> list[dict[str, tuple]]:
    """Per cache layer, the tensors it keeps per token beside keys and values (a sparse
    attention's indexer keys, DeepSeek-V3.2's): {attribute: (tensor, its token axis, the layer's
    attributes named after it: its dtype, device, initialized flag)}; the token axis is the one of
    the prompt's length. A decode step is fed them as it is its keys and values."""
    import torch

    states = []
    for layer in getattr(cache, "layers", None) or []:
        found = _recurrent_states(layer)
        for key, t in vars(layer).items():
            if key in ("keys", "values") or not isinstance(t, torch.Tensor) or t.dim() < 2 \
                    or t.shape[0] != _EXAMPLE_BATCH or _EXAMPLE_PROMPT not in t.shape[1:]:
                continue
            stem = key.split("_")[0]
            own = {k: v for k, v in vars(layer).items()
                   if stem in k.split("_") and not isinstance(v, torch.Tensor)}
            found[key] = (t, 1 + list(t.shape[1:]).index(_EXAMPLE_PROMPT), own)
        states.append(found)
    return states


def _recurrent_states(layer) -> dict[str, tuple]:
    """A linear-attention (Mamba-like, convolutional) cache layer's fixed-size states as
    _layer_states gives them: {"conv_states.0": (tensor, None: no token axis, the attributes
    transformers' LinearAttentionLayer keeps beside them: initialized flags, kernel sizes)}; the
    attributes copied once per layer, not per state."""
    from transformers.cache_utils import LinearAttentionLayer

    tensors = recurrent_state_tensors(layer)
    if not tensors:
        return {}
    own = {key: copy.deepcopy(getattr(layer, key)) for key in vars(LinearAttentionLayer())
           if key not in RECURRENT_STATES}
    return {key: (t, None, own) for key, t in tensors.items()}


def _caches_nothing(layer) -> bool:
    """Whether a cache layer stands for a decoder layer that caches nothing: transformers'
    DummyLayer, an MLP or MoE layer in Nemotron-H's list of layers [mamba, moe, attention, mlp]."""
    from transformers import cache_utils

    dummy = getattr(cache_utils, "DummyLayer", None)
    return dummy is not None and isinstance(layer, dummy)


def _name_state_inputs(model: onnx.ModelProto, states: list[dict]) -> None:
    """The decode graph's further cache inputs named `state_{attribute}_{layer}`
    (state_conv_states_0_3: layer 3's first convolution state; state_indexer_keys_0), in the
    order the step takes them, wherever read; the layer last, as past_key_{layer} has it (the
    name a layer's input takes in a further layer: Phase.extended)."""
    names = [f"state_{key.replace('.', '_')}_{layer}"
             for layer, found in enumerate(states) for key in found]
    cache_inputs = {"input_ids"} | {vi.name for vi in model.graph.input
                                    if vi.name.startswith("past_")}
    inputs = [vi for vi in model.graph.input if vi.name not in cache_inputs]
    if len(inputs) != len(names):
        return
    renames = {vi.name: new for vi, new in zip(inputs, names)}
    for vi in inputs:
        vi.name = renames[vi.name]
    for node in model.graph.node:
        for k, name in enumerate(node.input):
            if name in renames:
                node.input[k] = renames[name]


@contextlib.contextmanager
def _window_sizes_branch_free():
    """A sliding-window cache's mask sizes as min/max of the context, for the export only.

    transformers branches in Python on whether the window is full, so a trace holds for
    contexts on one side of it only. The same sizes without the branch hold at every context:
    a step attends to min(context, window − 1) + 1 keys starting at
    max(context − window + 1, 0).
    """
    import torch
    from transformers.cache_utils import DynamicSlidingWindowLayer

    def get_mask_sizes(self, query_length):
        kept = torch.sym_min(self.cumulative_length, self.sliding_window - 1)
        return kept + query_length, torch.sym_max(self.cumulative_length - kept, 0)

    original = DynamicSlidingWindowLayer.get_mask_sizes
    DynamicSlidingWindowLayer.get_mask_sizes = get_mask_sizes
    try:
        yield
    finally:
        DynamicSlidingWindowLayer.get_mask_sizes = original


def _prefill_module(model, states: bool = False):
    """The model on a prompt, its logits the output; with `states`, its cache's recurrent states
    too (_recurrent_states: what a linear-attention layer's last chunk computes for the decode
    steps only, which a graph of the logits alone would leave out)."""
    import torch

    class Prefill(torch.nn.Module):
        def __init__(self, lm):
            super().__init__()
            self.lm = lm

        def forward(self, input_ids):
            if not states:
                return self.lm(input_ids=input_ids, use_cache=False).logits
            out = self.lm(input_ids=input_ids, use_cache=True)
            cache = out.past_key_values
            return (out.logits, *(t for layer in getattr(cache, "layers", [])
                                  for t in recurrent_state_tensors(layer).values()))

    return Prefill(model)


def _self_attention_past(cache) -> tuple[list | None, bool]:
    """(each layer's (keys, values) of the cache's self-attention, whether they came inside an
    EncoderDecoderCache): a transformers DynamicCache's layers, None for a layer that holds
    recurrent states only (a hybrid model's linear-attention layers) or nothing (its MLP
    layers: _caches_nothing); the self-attention half of an
    EncoderDecoderCache whose cross-attention half is empty (a decoder-only model of an
    encoder-decoder family: RemBERT, Megatron-BERT); a legacy tuple of (keys, values) per layer.
    None where the cache is none of these."""
    cross = hasattr(cache, "self_attention_cache")
    if cross:
        if any(getattr(layer, "keys", None) is not None
               for layer in getattr(cache.cross_attention_cache, "layers", None) or []):
            return None, cross
        cache = cache.self_attention_cache
    layers = getattr(cache, "layers", None)
    pairs = [(layer.keys, layer.values) if getattr(layer, "keys", None) is not None
             and getattr(layer, "values", None) is not None else None
             for layer in layers or []]
    if pairs and all(pair or recurrent_state_tensors(layer) or _caches_nothing(layer)
                     for pair, layer in zip(pairs, layers)):
        return pairs, cross
    if isinstance(cache, (tuple, list)) and cache and all(
            isinstance(pair, (tuple, list)) and len(pair) == 2 for pair in cache):
        return [tuple(pair) for pair in cache], cross
    return None, cross


def _decode_module(model, cross: bool = False, states: list | None = None,
                   attention: list[int] | None = None):
    """The model on one token with a KV cache of `context` tokens, its logits the output; the
    cache inside an EncoderDecoderCache (its cross-attention half empty) where `cross`; each
    layer's further states (_layer_states) set on its cache layer where `states` has any (the
    step takes those of the layers that have some, in order); `past` holding the keys and values
    of the layers `attention` names (default: all)."""
    import torch
    from transformers import DynamicCache, EncoderDecoderCache

    found = states or []

    class DecodeStep(torch.nn.Module):
        def __init__(self, lm):
            super().__init__()
            self.lm = lm

        def forward(self, input_ids, past, states=()):
            data = list(past)
            if attention is not None:  # a layer of recurrent states only holds no keys
                by_layer = dict(zip(attention, data))
                data = [by_layer.get(i, (None, None))
                        for i in range(max(attention, default=-1) + 1)]
            cache = DynamicCache(ddp_cache_data=data, config=self.lm.config)
            stateful = [(layer, kept) for layer, kept in zip(cache.layers, found) if kept]
            for (layer, kept), values in zip(stateful, states):
                for key, tensor in values.items():
                    for attribute, value in kept[key][2].items():
                        setattr(layer, attribute, _traced_copy(value))
                    attribute, _, index = key.partition(".")
                    if index:  # a recurrent state: one of the layer's dict of them
                        getattr(layer, attribute)[int(index)] = tensor
                    else:
                        setattr(layer, key, tensor)
            if cross:
                cache = EncoderDecoderCache(cache, DynamicCache(config=self.lm.config))
            return self.lm(input_ids=input_ids, past_key_values=cache, use_cache=True).logits

    return DecodeStep(model)


def _traced_copy(value):
    """A fresh copy of a cache layer's attribute, made inside a trace: tensors in it cloned (a
    real tensor cannot be deep-copied there: its storage is no graph value; transformers'
    LinearAttentionLayer keeps its cumulative length as one), everything else deep-copied."""
    import torch
    from torch.utils._pytree import tree_map

    return tree_map(lambda v: v.clone() if isinstance(v, torch.Tensor) else copy.deepcopy(v),
                    value)


def _resized(t, tokens: int, axis: int | None = _TOKEN_AXIS):
    import torch

    shape = list(t.shape)
    if axis is not None:  # None: a state of fixed size
        shape[axis] = tokens
    return torch.randn(shape, dtype=t.dtype, device=t.device)


class _PromptPinned(Exception):
    """The prefill's graph does not hold at the prompt served: its trace pins the prompt to the
    example's length, or puts in checks that fail at the prompt served."""


def _export(module, args: tuple, dynamic_shapes: dict, name: str,
            stop_if_prompt_pinned: bool = False,
            served: dict[str, int] | None = None) -> onnx.ModelProto:
    """The module's graph with `dynamic_shapes` left symbolic; where torch.export finds the dims
    narrower than that (a prompt of at least 2 tokens where attention branches on a 1-token
    query, at most the model's position table), over the ranges it finds (_narrowed).

    The program is captured first as the exporter's own first strategy captures it
    (`_captured`), and translated without the exporter tracing it again; where that capture
    fails, the exporter gets the module and tries its strategies. A program whose runtime
    checks fail at the `served` sizes (by dim name) is no count of them: the prefill is then
    exported at the prompt served (`_PromptPinned`, with `stop_if_prompt_pinned`), and another
    graph is refused."""
    program = _captured(module, args, dynamic_shapes, stop_if_prompt_pinned)
    failing = _failing_checks(program, served or {}) if program is not None else []
    if failing and stop_if_prompt_pinned:
        raise _PromptPinned
    if failing:
        raise OnnxFlopsError(f"causal LM '{name}': its {type(module).__name__} graph holds only "
                             f"where {failing[0]}, a check its trace put in, which fails at "
                             f"{', '.join(f'{k} = {v}' for k, v in served.items())}; it is not "
                             "served")
    try:
        with step(f"exporting {type(module).__name__}"), _quiet():
            proto = export_dynamo(module if program is None else program, args, ["input_ids"],
                                  OPSET, dynamic_shapes)
    except Exception as e:  # the exporter raises anything; the user gets one line
        narrowed = _narrowed(module, args, dynamic_shapes)
        if narrowed is None:
            raise OnnxFlopsError(f"causal LM '{name}': the dynamo exporter cannot convert it "
                                 f"({first_line(root_cause(e))})") from None
        return _export(module, args, narrowed, name, served=served)
    record_torch_weight_roles(proto, module)
    return proto


# The example sizes by the dims' names: a trace's symbol is told by its example value.
_EXAMPLE_SIZES = {"batch": _EXAMPLE_BATCH, "prompt": _EXAMPLE_PROMPT, "context": _EXAMPLE_CONTEXT}


def _failing_checks(program, served: dict[str, int]) -> list[str]:
    """The runtime checks (`_assert_scalar`) the trace put in `program` that fail with the dims
    named in `served` at those sizes (each symbol told by its example value, the others left
    free; a check still open is not failed), as sympy writes them with the dims' names. The
    exporter's trace defers a guard on a size to such a check rather than failing: DeepSeek-V4's
    compressor, traced at 5 tokens, holds only for prompts of 4 to 7
    (`(Min(prompt, 4*(prompt//4))//4) < 2`), and its count at 64 tokens was short."""
    import sympy
    import torch

    if not served:
        return []
    failing = []
    for node in program.graph.nodes:
        if node.op != "call_function" or node.target is not torch.ops.aten._assert_scalar.default:
            continue
        check = getattr(getattr(node.args[0], "meta", {}).get("val"), "node", None)
        expr = getattr(check, "expr", None)
        if not isinstance(expr, sympy.Basic):
            continue
        env = check.shape_env
        hints = getattr(env, "backed_var_to_val", None) or getattr(env, "var_to_val", {})
        names = {symbol: name for symbol in expr.free_symbols
                 for name, example in _EXAMPLE_SIZES.items() if hints.get(symbol) == example}
        values = {symbol: served[name] for symbol, name in names.items() if name in served}
        if values and expr.xreplace(values) == sympy.false:
            failing.append(str(expr.xreplace({s: sympy.Symbol(n) for s, n in names.items()})))
    return failing


def _captured(module, args: tuple, dynamic_shapes: dict, stop_if_prompt_pinned: bool):
    """The module's program as the exporter's non-strict capture makes it: traced, and where its
    guards narrow the dims, traced again once on the ranges torch suggests (taking a fix that
    pins a dim to one size, as the exporter does; the caller reads the size from the graph).
    Where `stop_if_prompt_pinned` and the fix pins the prompt, `_PromptPinned` before tracing
    again: the prefill is then exported at the prompt served. None where the capture fails."""
    import torch
    from torch.export.dynamic_shapes import refine_dynamic_shapes_from_suggested_fixes

    try:
        with _quiet():
            return captured_program(module, args, dynamic_shapes)
    except torch._dynamo.exc.UserError as e:  # noqa: SLF001 - torch's export error
        try:
            refined = refine_dynamic_shapes_from_suggested_fixes(getattr(e, "msg", ""),
                                                                 dynamic_shapes)
        except Exception:  # noqa: BLE001 - no fix torch can apply itself
            return None
    except Exception:  # noqa: BLE001 - the exporter's own strategies say why
        return None
    if stop_if_prompt_pinned and "prompt" in _pinned(dynamic_shapes, refined):
        raise _PromptPinned
    try:
        with _quiet():
            return captured_program(module, args, refined)
    except Exception:  # noqa: BLE001 - the exporter's own strategies say why
        return None


def _pinned(before, after) -> set[str]:
    """The names of the dims `before` leaves symbolic that `after` fixes to one size."""
    import torch

    return {d.__name__ for d, e in zip(_dims_of(before), _dims_of(after))
            if isinstance(d, torch.export.Dim) and not isinstance(e, torch.export.Dim)}


def _narrowed(module, args: tuple, dynamic_shapes: dict) -> dict | None:
    """`dynamic_shapes` with each dim's range narrowed to what torch.export's trace of the module
    guards (its suggested fixes, applied by torch's refine_dynamic_shapes_from_suggested_fixes,
    until the trace holds); None where it suggests none, or would fix a dim to one size: a count
    at one size is no formula."""
    import torch
    from torch.export.dynamic_shapes import refine_dynamic_shapes_from_suggested_fixes

    shapes = dynamic_shapes
    for _ in range(_NARROWINGS):
        try:
            with _quiet():
                torch.export.export(module, args, dynamic_shapes=shapes, strict=False)
        except torch._dynamo.exc.UserError as e:  # noqa: SLF001 - torch's export error
            message = getattr(e, "msg", "") or ""
            if "Suggested fixes" not in message:
                return None
            try:
                refined = refine_dynamic_shapes_from_suggested_fixes(message, shapes)
            except Exception:  # noqa: BLE001 - a fix torch cannot apply itself
                return None
            if not all(isinstance(d, torch.export.Dim) for d in _dims_of(refined)) \
                    or _ranges(refined) == _ranges(shapes):
                return None
            shapes = refined
        except Exception:  # noqa: BLE001 - the trace fails otherwise: nothing to narrow
            return None
        else:
            return shapes if shapes is not dynamic_shapes else None
    return None


# Rounds of narrowing: each fixes the guards one trace finds (a prompt's upper bound, then the
# lower bound a branch on its length needs).
_NARROWINGS = 4


def _ranges(shapes) -> list:
    return [(d.__name__, d.min, d.max) for d in _dims_of(shapes)]


def _dims_of(shapes) -> list:
    """The dims of a dynamic_shapes spec, in order, nested lists and tuples flattened."""
    if isinstance(shapes, dict):
        return [d for v in shapes.values() for d in _dims_of(v)] \
            if not all(isinstance(k, int) for k in shapes) else list(shapes.values())
    if isinstance(shapes, (list, tuple)):
        return [d for v in shapes for d in _dims_of(v)]
    return [shapes]


def _name_cache_inputs(model: onnx.ModelProto, attention: list[int]) -> None:
    """past_{i}_{0,1} → past_key_{layer} / past_value_{layer}, wherever they are read: the i-th
    of the layers with keys and values is decoder layer attention[i]."""
    renames = {f"past_{i}_{j}": f"past_{'value' if j else 'key'}_{layer}"
               for i, layer in enumerate(attention) for j in (0, 1)}
    for vi in model.graph.input:
        vi.name = renames.get(vi.name, vi.name)
    for node in model.graph.node:
        for k, name in enumerate(node.input):
            if name in renames:
                node.input[k] = renames[name]


def _read_config(path: Path, transformers):
    file = path / "config.json" if path.is_dir() else path
    try:
        data = json.loads(file.read_text())
    except (OSError, ValueError) as e:
        raise OnnxFlopsError(f"{file}: not a readable config.json ({first_line(e)})") from None
    if not isinstance(data, dict) or "model_type" not in data:
        raise OnnxFlopsError(f"{file}: a transformers config.json needs a 'model_type'")
    try:
        return transformers.AutoConfig.for_model(data.pop("model_type"), **data)
    except Exception as e:  # noqa: BLE001 - untrusted JSON: transformers' validation raises its
        # own kinds (a StrictDataclassFieldValidationError for a field of the wrong type)
        raise OnnxFlopsError(f"{file}: {first_line(e)}") from None


# A config's word on the model's sizes is untrusted input: building its layers takes time in
# proportion to their number (the deepest released LLMs have some 128).
MAX_LAYERS = 4096
_SIZES = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
          "num_key_value_heads", "vocab_size", "head_dim", "max_position_embeddings")


# No released model has a width, head count or vocabulary near this (the widest have some
# 30,000 and the largest vocabularies some 260,000): a larger size is corrupt or hostile, and
# building its layers would take hours.
MAX_SIZE = 2 ** 24


def _check_sizes(config) -> None:
    """Sizes that no model has are one line, before a model is built from them: each is a whole
    number, 1 ≤ size ≤ MAX_SIZE (None: the model's default)."""
    for name in _SIZES:
        value = getattr(config, name, None)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise OnnxFlopsError(f"{type(config).__name__}: {name} is {value!r}; sizes are "
                                 "whole numbers")
        if value <= 0:
            raise OnnxFlopsError(f"{type(config).__name__}: {name} is {value}; sizes are "
                                 "positive")
        if value > MAX_SIZE and name not in ("max_position_embeddings", "num_hidden_layers"):
            raise OnnxFlopsError(f"{type(config).__name__}: {name} is {value:,}, over the "
                                 f"{MAX_SIZE:,} of any model onnxflops builds")
    layers = getattr(config, "num_hidden_layers", None)
    if isinstance(layers, int) and layers > MAX_LAYERS:
        raise OnnxFlopsError(f"{type(config).__name__}: num_hidden_layers is {layers:,}, over "
                             f"the {MAX_LAYERS:,} onnxflops builds")


@contextlib.contextmanager
def _quiet():
    """Nothing from the frameworks while exporting: warnings, prints, and log records (torch's,
    and transformers' deprecation notes about the cache arguments the decode step passes)."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
            framework_logging_silenced():
        warnings.simplefilter("ignore")
        yield
