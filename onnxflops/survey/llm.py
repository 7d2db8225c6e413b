"""The serving survey (`onnxflops survey transformers --llm`): every transformers architecture with
a causal-LM class, shrunk by the survey's one rule, through `onnxflops.llm`, held against the HF
model's own passes and against counts made by hand from its config.

- MACs: FlopCounterMode/2 of the model's own prefill pass (PROMPT tokens, its cache kept) and of
  each of GENERATED decode steps fed its own greedy token and cache, with attention on the math
  backend and experts eager: FlopCounterMode reads 0 for CPU flash attention and for
  transformers' grouped-matmul experts, so the survey runs the eager form of the same model
  instead, and the row's `oracle` column says so.
- params: the count's (what its graphs hold, extended to all layers) against `parameters()`.
- KV bytes and active params: against `hand_kv_bytes` and `hand_active_params`, from the config
  (and the decoder layers' key and value projection widths, where the code sets them past it).
- Work the oracle counts in modules whose output the logits never read (BigBird's pooler) is
  dropped from the exported graph; a count short of the oracle by exactly that is `oracle
  failed`, saying so (judge_llm).

Row columns: rows.LLM_COLUMNS. torch and transformers are imported only in a row's process.
"""

from __future__ import annotations

import inspect
import time
from typing import Any, Callable, Mapping

from onnxflops.survey.rows import LLM_COLUMNS, _difference, judge

PROMPT, GENERATED = 64, 8  # the sizes every row is served at, batch 1
KV_BYTES_PER_ELEMENT = 2  # the KV cache in bf16, onnxflops.llm's default for bf16 weights
_ROUTED = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
_TOP_K = ("num_experts_per_tok", "num_experts_per_token", "moe_topk", "top_k", "moe_k")
_SHARED = ("n_shared_experts", "num_shared_experts", "shared_expert_intermediate_size",
           "moe_shared_expert_intermediate_size")
_WINDOWS = {"sliding_attention": "sliding_window", "chunked_attention": "attention_chunk_size"}


def config_values(config) -> dict[str, Any]:
    """A transformers config as the hand counts read it: its to_dict(), the standard names its
    attribute_map gives other keys (BART's num_attention_heads is encoder_attention_heads), and
    the values its class derives rather than stores (its public properties: LongCat-Flash's
    num_hidden_layers is 2 × num_layers, each layer holding two attention sublayers, each with
    a cache layer of its own; to_dict() has num_layers only)."""
    aliases = getattr(config, "attribute_map", {}) or {}
    stored = config.to_dict()
    derived = {}
    for name, member in inspect.getmembers(type(config)):
        if isinstance(member, property) and not name.startswith("_") and name not in stored:
            try:
                derived[name] = getattr(config, name)
            except Exception:  # noqa: BLE001 - a property that needs what this config lacks
                continue
    return {**stored, **derived, **{k: getattr(config, k, None) for k in aliases}}


def build_causal_lm(name: str):
    """The causal LM of model type `name`, from its default config shrunk by the survey's rule and
    built as a decoder (as_decoder)."""
    from onnxflops.converters.causal_lm import as_decoder
    from onnxflops.survey.shrink import shrink
    from onnxflops.survey.sources import _transformers

    t = _transformers()
    config = as_decoder(shrink(t.AutoConfig.for_model(name)))
    return t.AutoModelForCausalLM.from_config(config).eval()


def fails_unshrunk(name: str, error: Exception) -> bool:
    """Whether the default config of model type `name`, not shrunk, fails to build with the
    same kind of error as `error` (built on the meta device: no memory for weights): then the
    rule is not why the row is not built."""
    import torch

    from onnxflops.converters.causal_lm import as_decoder
    from onnxflops.survey.sources import _transformers

    t = _transformers()
    try:
        with torch.device("meta"):
            t.AutoModelForCausalLM.from_config(as_decoder(t.AutoConfig.for_model(name)))
    except Exception as e:  # noqa: BLE001 - the builder raises anything
        return type(e) is type(error)
    return False


# hand counts, from the config --------------------------------------------------------

def _get(config: Mapping[str, Any], keys: tuple[str, ...]) -> int:
    """The first of `keys` the config sets to a positive int; 0 where none is."""
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0


def layer_types(config: Mapping[str, Any]) -> list[str]:
    """Each decoder layer's type: `layer_types` (Nemotron-H sets no depth: its list is the
    depth); else, where an attention layer period is set
    (attn_layer_period p, attn_layer_offset o: Jamba), "full_attention" on layer i where
    i mod p = o and "linear_attention" (a recurrent layer, no keys) on the others, as
    transformers' own layer_types property derives them; else "linear_attention" on every
    layer of a state-space model (a `state_size`, no `num_attention_heads`: Mamba, Mamba2, whose
    num_heads and head_dim are its scan's); else "sliding_attention" on every layer unless
    `use_sliding_window` is false, else "full_attention"."""
    layers = _get(config, ("num_hidden_layers", "n_layer", "num_layers"))
    types = config.get("layer_types")
    if isinstance(types, (list, tuple)):  # as long as the depth; all where no depth is set
        return list(types)[:layers] if layers else list(types)
    period = attention_period(config)
    if period is not None:
        every, offset = period
        return ["full_attention" if i % every == offset else "linear_attention"
                for i in range(layers)]
    if _get(config, ("state_size",)) and not _get(config, ("num_attention_heads",)):
        return ["linear_attention"] * layers  # a state-space model (Mamba2's heads are its own)
    on = config.get("use_sliding_window") is not False
    return ["sliding_attention" if on else "full_attention"] * layers


def attention_period(config: Mapping[str, Any]) -> tuple[int, int] | None:
    """(p, o) of a config that places one attention layer every p layers at offset o
    (`attn_layer_period`, `attn_layer_offset`, or `attention_…`); None where it sets no such
    period, or its offset is not an int."""
    for stem in ("attn_layer_", "attention_layer_"):
        every, offset = config.get(stem + "period"), config.get(stem + "offset")
        if _get(config, (stem + "period",)) and isinstance(offset, int) \
                and not isinstance(offset, bool):
            return every, offset
    return None


def holds_keys(layer_type: str) -> bool:
    """Whether a layer of this type caches keys and values: its type names attention other than
    linear attention ("full_attention", "sliding_attention", "indexed_attention", ...), or a
    hybrid of both; a linear-attention, Mamba-like or convolution layer ("linear_attention",
    "conv") holds a recurrent state of fixed size instead."""
    return ("attention" in layer_type and layer_type != "linear_attention") or \
        layer_type.startswith("hybrid")


def layer_windows(config: Mapping[str, Any]) -> list[int | None]:
    """Each decoder layer's attention window (None: every token): `sliding_window` on a
    "sliding_attention" layer, `attention_chunk_size` on a "chunked_attention" one; without
    `layer_types`, `sliding_window` on every layer unless `use_sliding_window` is false."""
    return [_get(config, (_WINDOWS[t],)) or None if t in _WINDOWS else None
            for t in layer_types(config)]


def kv_heads(config: Mapping[str, Any]) -> int:
    """Key/value heads: `num_key_value_heads` (or its other names), 1 for a multi-query model,
    else every attention head."""
    heads = _get(config, ("num_attention_heads", "n_head", "num_heads"))
    if config.get("multi_query") and not config.get("new_decoder_architecture"):
        return 1
    return _get(config, ("num_key_value_heads", "num_kv_heads", "n_head_kv")) or heads


def head_dim(config: Mapping[str, Any]) -> int:
    """`head_dim` where the config sets it, else hidden size / attention heads; 0 for a model
    with no attention heads (Mamba: no keys to hold)."""
    heads = _get(config, ("num_attention_heads", "n_head", "num_heads"))
    hidden = _get(config, ("hidden_size", "n_embd", "d_model"))
    return _get(config, ("head_dim",)) or (hidden // heads if heads else 0)


def hand_kv_bytes(config: Mapping[str, Any], tokens: int, batch: int = 1,
                  bytes_per_element: int = KV_BYTES_PER_ELEMENT,
                  widths: Mapping[int, int] | None = None) -> int:
    """Σ_layers hand_kv_layers: the cache's bytes at `tokens` tokens, from the config and the
    layers' projection `widths`."""
    return sum(hand_kv_layers(config, tokens, batch, bytes_per_element, widths))


def hand_kv_layers(config: Mapping[str, Any], tokens: int, batch: int = 1,
                   bytes_per_element: int = KV_BYTES_PER_ELEMENT,
                   widths: Mapping[int, int] | None = None) -> list[int]:
    """Each layer's cache bytes, batch × min(tokens, window) × elements × bytes: elements per
    token 2 × kv_heads × head_dim (keys and values), or on a layer of `widths` (projection_widths:
    its key and value projections' widths, where the model's code sets them past its config),
    that width; or kv_lora_rank + qk_rope_head_dim for
    latent attention (the compressed latent and the shared rotary key), + index_head_dim on an
    "indexed_attention" layer with an indexer of its own (the sparse attention's indexer key;
    none where `indexer_types` says "shared": HY-V4 reuses the previous layer's); window =
    tokens on a full layer; 0 on a layer that holds no keys (holds_keys: linear attention,
    Mamba-like)."""
    latent = _get(config, ("kv_lora_rank",))
    elements = latent + _get(config, ("qk_rope_head_dim",)) if latent else \
        2 * kv_heads(config) * head_dim(config)
    indexer = _get(config, ("index_head_dim",))
    kinds = layer_types(config)
    indexers = config.get("indexer_types")
    own = [not isinstance(indexers, (list, tuple)) or i >= len(indexers) or indexers[i] != "shared"
           for i in range(len(kinds))]
    widths = {} if latent else (widths or {})
    return [batch * min(tokens, window or tokens) * bytes_per_element
            * (widths.get(layer, elements)
               + (indexer if kind == "indexed_attention" and own_indexer else 0))
            if holds_keys(kind) else 0
            for layer, (kind, window, own_indexer)
            in enumerate(zip(kinds, layer_windows(config), own))]


# What decoder layers call their self-attention, whose key and value projections a hand counts.
_SELF_ATTENTION = ("self_attn", "self_attention", "attention", "attn")


def projection_widths(model, depth: int) -> dict[int, int]:
    """Each decoder layer's key + value projection widths (k_proj and v_proj out_features of its
    self-attention: kv heads × head size, keys and values), by layer: the widths a hand reads
    off the model where its code sets them past its config (MiMo-V2's sliding layers have twice
    the KV heads its config names). From the decoder's layers: the one ModuleList of `depth`
    layers beside the input embeddings (not an encoder's of a multimodal model); empty where
    there is not exactly one."""
    import torch

    try:
        embeddings = model.get_input_embeddings()
    except (AttributeError, NotImplementedError):  # a model that names none
        return {}
    owners = [m for m in model.modules() if any(c is embeddings for c in m.children())]
    stacks = [child for owner in owners[:1] for child in owner.children()
              if isinstance(child, torch.nn.ModuleList) and len(child) == depth]
    if len(stacks) != 1:
        return {}
    return {layer: width for layer, width in enumerate(map(_key_value_width, stacks[0]))
            if width}


def _key_value_width(layer) -> int:
    """k_proj.out_features + v_proj.out_features of the layer's self-attention; 0 without both."""
    attention = next((getattr(layer, name) for name in _SELF_ATTENTION
                      if hasattr(layer, name)), None)
    key, value = (getattr(attention, name, None) for name in ("k_proj", "v_proj"))
    widths = [getattr(p, "out_features", None) for p in (key, value)]
    return sum(widths) if all(isinstance(w, int) for w in widths) else 0


def kv_layers_differing(config: Mapping[str, Any], hand: list[int],
                        counted: Mapping[int, int]) -> str:
    """Which layers' counted cache bytes differ from the hand count's, and how: "layer 1
    (sliding_attention) 2× the config's" where one is a whole multiple of the other (a model's
    code doubling the KV heads its config names), else both byte counts; "" where none do."""
    kinds = layer_types(config)
    found = []
    for layer, expected in enumerate(hand):
        got = counted.get(layer, 0)
        if got == expected:
            continue
        ratio = f"{got // expected}× the config's" if expected and got % expected == 0 else \
            f"{got:,} B, the config's {expected:,} B"
        found.append(f"layer {layer} ({kinds[layer]}) {ratio}")
    return ", ".join(found)


def attention_kind(config: Mapping[str, Any]) -> str:
    """recurrent where no layer holds keys; else latent, multi-query (1 KV head), grouped
    (fewer KV heads than heads) or full; then
    "sliding" where every layer with keys has a window, "local/global" where some have; then
    "+ recurrent" where some layers hold a recurrent state instead of keys (holds_keys)."""
    kinds = layer_types(config)
    if kinds and not any(map(holds_keys, kinds)):
        return "recurrent"
    heads = _get(config, ("num_attention_heads", "n_head", "num_heads"))
    kv = kv_heads(config)
    kind = "latent" if _get(config, ("kv_lora_rank",)) else \
        "multi-query" if kv == 1 < heads else "grouped" if kv < heads else "full"
    windows = [w for t, w in zip(layer_types(config), layer_windows(config)) if holds_keys(t)]
    if windows and all(windows):
        kind += " sliding"
    elif any(windows):
        kind += " local/global"
    if not all(map(holds_keys, layer_types(config))):
        kind += " + recurrent"
    return kind


def experts_of(config: Mapping[str, Any]) -> tuple[int, int]:
    """(routed experts per MoE layer E, experts per token k) of the config; (0, 0) if dense."""
    routed = _get(config, _ROUTED)
    return (routed, _get(config, _TOP_K)) if routed > 1 else (0, 0)


def expert_kind(config: Mapping[str, Any], routed_params: int) -> str:
    """dense, routed, or routed + shared (experts every token runs beside its routed ones);
    dense too where the config names experts but no layer has them (`routed_params` 0: DeepSeek's
    first_k_dense_replace dense layers past the depth)."""
    if not experts_of(config)[0] or not routed_params:
        return "dense"
    return "routed + shared" if _get(config, _SHARED) else "routed"


def hand_active_params(total: int, routed_params: int, config: Mapping[str, Any]) -> int:
    """total − routed × (E − k)/E: a token runs k of the E routed experts of each MoE layer and
    every other param (attention, dense layers, shared experts). E and k from the config;
    `routed_params`: the routed experts' params of all layers."""
    routed, top_k = experts_of(config)
    return total - routed_params * (routed - top_k) // routed if routed else total


def routed_expert_params(model) -> int:
    """Params under the modules called `experts` (each layer's routed experts), shared ones not
    among them."""
    found = [m for name, m in model.named_modules() if name.rsplit(".", 1)[-1] == "experts"]
    return sum(p.numel() for m in found for p in m.parameters())


# the oracle: the HF model's own passes -------------------------------------------------------

def oracle_passes(model, ids, generated: int) -> tuple[int, list[int], str]:
    """(prefill MACs, each decode step's MACs, what was switched to make the count fair):
    FlopCounterMode/2 of the model on `ids`, then of `generated` steps each fed its greedy token
    and the model's own cache, attention on the math backend, experts eager."""
    return oracle_counts(model, ids, generated)[:3]


def oracle_counts(model, ids, generated: int, watched: tuple[str, ...] = ()
                  ) -> tuple[int, list[int], str, list[int]]:
    """oracle_passes, and the MACs FlopCounterMode puts in the `watched` modules (by name)
    in each pass: [prefill, step 1, ...]."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    from onnxflops.survey.oracle import eager_experts, export_code_paths, inference_counted

    config = model.config
    before = getattr(config, "_experts_implementation", None)
    with inference_counted(model), sdpa_kernel(SDPBackend.MATH), eager_experts(model), \
            export_code_paths(model) as exported:
        switched = getattr(config, "_experts_implementation", None) != before

        seen: list[int] = []
        prefix = type(model).__name__ + "."

        def counted(**inputs):
            with FlopCounterMode(display=False) as counter:
                out = model(**inputs, use_cache=True)
            by_module = counter.get_flop_counts()
            seen.append(sum(sum(by_module.get(prefix + name, {}).values())
                            for name in watched) // 2)
            return counter.get_total_flops() // 2, out

        prefill, out = counted(input_ids=ids)
        steps = []
        for _ in range(generated):
            token = out.logits[:, -1:].argmax(-1)
            macs, out = counted(input_ids=token, past_key_values=out.past_key_values)
            steps.append(macs)
    note = "FlopCounterMode/2, math attention"
    note += f"; eager experts (its default: {before})" if switched else ""
    return prefill, steps, note + ("; its code's export path" if exported else ""), seen


def own_generate_note(model, ids, generated: int) -> str:
    """Whether HF's own greedy generate of `generated` tokens after `ids` fails as the oracle's
    decode steps did (the model cannot decode: say so), or runs (it decodes from other inputs
    than one token and its cache: CPM-Ant takes the whole sequence each step)."""
    import torch

    try:
        with torch.no_grad():
            model.generate(ids, max_new_tokens=generated, min_new_tokens=generated,
                           do_sample=False)
    except Exception as e:  # noqa: BLE001 - the model's own generate raises anything
        from onnxflops.survey.measure import failure

        return f"; HF's own generate fails alike ({failure(e)})"
    return GENERATE_RUNS


GENERATE_RUNS = ("; HF's own generate runs: it feeds the model other than one token and its "
                 "cache each step")


def discarded_modules(model, ids) -> tuple[str, ...]:
    """The modules whose output the logits of a pass on `ids` never read (BigBird's pooler, which
    its causal LM runs and discards): oracle.discarded_modules of that pass's logits."""
    from onnxflops.survey.oracle import discarded_modules as unread_by

    return unread_by(model, lambda: model(input_ids=ids).logits)


# one row ------------------------------------------------------------------------------------

def measure_llm(task, memory_gb: float, stage: Callable[[str], None] = lambda s: None) -> dict:
    """The serving row of `task` (a transformers model type); `stage(name)` told build, oracle
    and count as each starts."""
    import torch

    from onnxflops.converters.causal_lm import text_config
    from onnxflops.survey.measure import failure, peak_mb

    row = {**blank_llm_row(task.label), "prompt": PROMPT, "generated": GENERATED}
    failures: dict[str, str] = {}
    why: dict[str, str] = {}
    stage("build")
    try:
        model = build_causal_lm(task.name)
        config = config_values(text_config(model.config))
        routed = routed_expert_params(model)
        row.update(attention=attention_kind(config), experts=expert_kind(config, routed))
    except Exception as e:  # noqa: BLE001 - a config or builder raises anything
        reason = failure(e)
        if fails_unshrunk(task.name, e):
            reason += " (its default config, unshrunk, fails alike)"
        return {**judge_llm(row, {"build": reason}), "peak_mb": peak_mb()}
    stage("oracle")
    unread_macs: dict[str, int] = {}
    vocab = getattr(text_config(model.config), "vocab_size", None) or 100
    ids = torch.randint(0, vocab, (1, PROMPT), generator=torch.Generator().manual_seed(0))
    try:
        discarded = discarded_modules(model, ids)
        prefill, steps, row["oracle"], unread = oracle_counts(model, ids, GENERATED, discarded)
        row.update(oracle_prefill_macs=prefill, oracle_decode_first_macs=steps[0],
                   oracle_decode_last_macs=steps[-1])
        if any(unread):
            why["discarded"] = ", ".join(discarded)
            unread_macs = dict(zip(_MAC_COLUMNS, (unread[0], unread[1], unread[-1])))
    except Exception as e:  # noqa: BLE001 - the model's own forward pass failed
        note = own_generate_note(model, ids, GENERATED)
        failures["oracle"] = failure(e) + note
        if note == GENERATE_RUNS:
            why["generate"] = "runs"
    total = sum(p.numel() for p in model.parameters())
    row["oracle_params"] = total
    try:
        widths = projection_widths(model, len(layer_types(config)))
        row.update(hand_kv_bytes=hand_kv_bytes(config, PROMPT + GENERATED, widths=widths),
                   hand_params_active=hand_active_params(total, routed, config))
    except Exception as e:  # noqa: BLE001 - a config this hand count cannot read
        failures["hand"] = failure(e)
    stage("count")
    start = time.perf_counter()
    try:
        import onnxflops

        report = onnxflops.llm(model, prompt=PROMPT, generate=GENERATED)
    except Exception as e:  # noqa: BLE001 - a row says why, and the survey goes on
        failures["count"] = failure(e)
    else:
        row.update(prefill_macs=int(report.prefill.macs),
                   decode_first_macs=int(report.decode_first.macs),
                   decode_last_macs=int(report.decode_last.macs),
                   params_total=report.params.counted, params_active=report.params.active,
                   kv_bytes=report.kv_cache_bytes)
        if "hand" not in failures and row["kv_bytes"] != row["hand_kv_bytes"]:
            why["kv_bytes"] = kv_layers_differing(
                config, hand_kv_layers(config, PROMPT + GENERATED, widths=widths),
                report.kv_cache_by_layer())
    row["seconds"] = round(time.perf_counter() - start, 2)
    return {**judge_llm(row, failures, why, unread_macs), "peak_mb": peak_mb()}


def blank_llm_row(model: str) -> dict:
    return {**dict.fromkeys(LLM_COLUMNS), "model": model, "oracle": "", "reason": ""}


_MAC_COLUMNS = ("prefill_macs", "decode_first_macs", "decode_last_macs")
_CHECKS = (("prefill_macs", "oracle_prefill_macs", "prefill MACs"),
           ("decode_first_macs", "oracle_decode_first_macs", "decode first MACs"),
           ("decode_last_macs", "oracle_decode_last_macs", "decode last MACs"),
           ("params_total", "oracle_params", "params"),
           ("params_active", "hand_params_active", "active params vs hand count"),
           ("kv_bytes", "hand_kv_bytes", "KV bytes vs hand count"))


def judge_llm(row: dict, failures: dict[str, str] | None = None,
              why: Mapping[str, str] | None = None,
              unread_macs: Mapping[str, int] | None = None) -> dict:
    """`row` with its verdict and reason: the stages as rows.judge has them; counted, `exact`
    where every column equals its oracle or hand count, else `differs` naming each that does
    not and by how much, and why where `why` says (by the column: {"kv_bytes": "layer 1 ..."}).

    A count and an oracle that both fail are `not built` (rows.judge: the model cannot run),
    but `not counted` where HF's own generate runs (why["generate"] "runs": it decodes by
    another protocol than one token and its cache).

    `unread_macs`: by MAC column, what the oracle counts in modules whose output the logits
    never read (discarded_modules, named in why["discarded"]). Where every MAC column equals
    the oracle's less that, and nothing else differs, the oracle is wrong: `oracle failed`,
    saying so (the count is the work the logits need; the oracle adds work they discard)."""
    failures, why, unread_macs = failures or {}, why or {}, unread_macs or {}
    if "count" in failures and "oracle" in failures and why.get("generate") == "runs":
        # the model decodes, by its own protocol (why["generate"]): not a model that cannot run
        return {**row, "verdict": "not counted",
                "reason": f"{failures['count']}; oracle: {failures['oracle']}"}
    if failures.keys() & {"build", "count"}:
        return judge(row, "", failures)
    skipped = {name for name in ("oracle", "hand") if name in failures}
    discarded = "oracle" not in failures and any(unread_macs.values()) and all(
        row[ours] == (row[theirs] or 0) - unread_macs.get(ours, 0)
        for ours, theirs, _ in _CHECKS if ours in _MAC_COLUMNS)
    problems = [f"{label} {_difference(row[ours], row[theirs])}"
                + (f": {why[ours]}" if why.get(ours) else "")
                for ours, theirs, label in _CHECKS
                if not any(theirs.startswith(name) for name in skipped)
                if row[ours] != row[theirs] and not (discarded and ours in _MAC_COLUMNS)]
    if discarded:
        note = (f"oracle wrong: FlopCounterMode counts {unread_macs['prefill_macs']:,} prefill "
                f"and {unread_macs['decode_first_macs']:,} decode-step MACs in "
                f"{why.get('discarded', 'modules')}, whose output the logits never read (their "
                "params get no gradient from them; the exported graph drops that work); "
                "without them the count is exact")
        if not problems:
            return {**row, "verdict": "oracle failed", "reason": note}
        problems.append(note)
    if "hand" in failures:
        problems.append(f"hand count: {failures['hand']}")
    if "oracle" in failures:
        problems.insert(0, f"oracle: {failures['oracle']}")
    verdict = "oracle failed" if "oracle" in failures else "differs" if problems else "exact"
    return {**row, "verdict": verdict, "reason": "; ".join(problems)}
