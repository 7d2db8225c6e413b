"""The serving survey (`survey transformers --llm`): hand counts of KV bytes and active params from a
config alone, for every kind of attention and experts, the row's verdict, and its store. Numbers
are worked out by hand in each test; tests/frameworks/test_survey_models.py runs real models."""

from __future__ import annotations

import pytest

from onnxflops.survey import LLM_COLUMNS, RowStore, read_any
from onnxflops.survey.llm import (attention_kind, blank_llm_row, config_values, expert_kind,
                                  hand_active_params, hand_kv_bytes, hand_kv_layers, judge_llm,
                                  kv_layers_differing, layer_windows)
from onnxflops.survey.shrink import shrink

# 2 layers, 4 heads of 96 / 4 = 24: a full layer's token holds 2 × heads × 24 elements.
BASE = {"num_hidden_layers": 2, "num_attention_heads": 4, "hidden_size": 96}
TOKENS = 72  # prompt 64 + 8 generated


@pytest.mark.parametrize("extra, kind, expected", [
    # 2 layers × 72 positions × (2 × 4 × 24) elements × 2 bytes
    ({"num_key_value_heads": 4}, "full", 2 * 72 * 192 * 2),
    ({"num_key_value_heads": 2}, "grouped", 2 * 72 * 96 * 2),
    # falcon / gpt_bigcode name no KV heads: multi_query means one
    ({"multi_query": True}, "multi-query", 2 * 72 * 48 * 2),
    ({"num_key_value_heads": 1, "head_dim": 32}, "multi-query", 2 * 72 * 64 * 2),
    # Mistral: a window on every layer, min(72, 32) positions held
    ({"sliding_window": 32}, "full sliding", 2 * 32 * 192 * 2),
    ({"sliding_window": 32, "use_sliding_window": False}, "full", 2 * 72 * 192 * 2),
    # Gemma 2: local then global
    ({"sliding_window": 32, "layer_types": ["sliding_attention", "full_attention"]},
     "full local/global", (32 + 72) * 192 * 2),
    # Llama 4: chunks bound what a layer holds as windows do
    ({"attention_chunk_size": 16, "layer_types": ["chunked_attention", "full_attention"]},
     "full local/global", (16 + 72) * 192 * 2),
    # DeepSeek: the latent (32) and the rotary key (8) per token, keys and values alike
    ({"kv_lora_rank": 32, "qk_rope_head_dim": 8, "num_key_value_heads": 4}, "latent",
     2 * 72 * 40 * 2),
    # DeepSeek-V3.2: its sparse attention's indexer key (24) beside the latent, per token
    ({"kv_lora_rank": 32, "qk_rope_head_dim": 8, "index_head_dim": 24,
      "layer_types": ["indexed_attention"] * 2}, "latent", 2 * 72 * (40 + 24) * 2),
    # HY-V4: its second layer reuses the first's indexer ("shared"), so holds no indexer key
    ({"kv_lora_rank": 32, "qk_rope_head_dim": 8, "index_head_dim": 24,
      "layer_types": ["indexed_attention"] * 2, "indexer_types": ["full", "shared"]}, "latent",
     72 * (40 + 24) * 2 + 72 * 40 * 2),
    # Qwen3.5: a linear-attention layer holds a recurrent state, no keys: one layer of 72
    ({"num_key_value_heads": 1, "layer_types": ["linear_attention", "full_attention"]},
     "multi-query + recurrent", 72 * 48 * 2),
    # Jamba: no layer_types, one attention layer every 2 at offset 1 (layers 1 and 3 of 4), the
    # others Mamba layers with no keys: 2 layers of 72
    ({"num_key_value_heads": 1, "num_hidden_layers": 4, "attn_layer_period": 2,
      "attn_layer_offset": 1}, "multi-query + recurrent", 2 * 72 * 48 * 2),
    # LFM: a convolution layer, a full one and a sliding one
    ({"num_key_value_heads": 1, "sliding_window": 32, "num_hidden_layers": 3,
      "layer_types": ["conv", "full_attention", "sliding_attention"]},
     "multi-query local/global + recurrent", (72 + 32) * 48 * 2),
])
def test_kv_bytes_by_hand_for_each_kind_of_attention(extra, kind, expected):
    config = {**BASE, **extra}
    assert hand_kv_bytes(config, TOKENS) == expected
    assert attention_kind(config) == kind


def test_a_model_with_no_attention_heads_holds_no_keys():
    # Mamba's config names no heads (and no layer_types): nothing to cache but its states
    assert hand_kv_bytes({"hidden_size": 96, "num_hidden_layers": 2}, TOKENS) == 0


def test_a_config_whose_layer_list_is_its_depth_holds_keys_on_its_attention_layer():
    # Nemotron-H sets no num_hidden_layers: its layers are its list [mamba, moe, attention,
    # mlp]. Cut to the depth 0 it held no keys; the one attention layer holds 72 positions ×
    # 2 × 1 KV head × 24 × 2 bytes
    config = {"num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 24,
              "layer_types": ["linear_attention", "moe", "full_attention", "mlp"]}
    assert hand_kv_layers(config, TOKENS) == [0, 0, 72 * 2 * 24 * 2, 0]


def test_a_state_space_model_holds_no_keys_whatever_its_heads():
    # Mamba2 names 4 heads of 48 for its scan (num_heads, head_dim), no attention heads: every
    # layer is recurrent, 0 bytes of keys (2 · 72 · 2 · 4 · 48 · 2 = 110,592 counted before)
    config = {"hidden_size": 96, "num_hidden_layers": 2, "state_size": 128, "num_heads": 4,
              "head_dim": 48}
    assert hand_kv_bytes(config, TOKENS) == 0
    assert attention_kind(config) == "recurrent"
    assert attention_kind({"hidden_size": 96, "num_hidden_layers": 2, "state_size": 16}) == \
        "recurrent"  # Mamba


def test_a_window_longer_than_the_tokens_holds_every_token():
    assert hand_kv_bytes({**BASE, "sliding_window": 4096}, TOKENS) == 2 * 72 * 192 * 2
    assert layer_windows({**BASE, "sliding_window": None}) == [None, None]


@pytest.mark.parametrize("extra, kind, active", [
    ({}, "dense", 1000),
    # 4 routed experts holding 400 params, 2 per token: 1000 − 400 × (4 − 2)/4
    ({"num_local_experts": 4, "num_experts_per_tok": 2}, "routed", 800),
    # the top-k under another name, shared experts beside the routed ones (not among them)
    ({"n_routed_experts": 4, "moe_topk": 1, "n_shared_experts": 1}, "routed + shared", 700),
    ({"num_experts": 4, "top_k": 2, "shared_expert_intermediate_size": 64},
     "routed + shared", 800),
    ({"num_experts": 1}, "dense", 1000),  # one expert is a dense layer
])
def test_active_params_by_hand_for_each_kind_of_experts(extra, kind, active):
    config, routed = {**BASE, **extra}, 400 if kind != "dense" else 0
    assert hand_active_params(1000, routed, config) == active
    assert expert_kind(config, routed) == kind


def test_a_config_naming_experts_that_no_layer_has_is_dense():
    config = {**BASE, "n_routed_experts": 4, "num_experts_per_tok": 2, "first_k_dense_replace": 3}
    assert expert_kind(config, 0) == "dense" and hand_active_params(1000, 0, config) == 1000


def test_the_rule_shrinks_windows_so_that_the_survey_prompt_crosses_them():
    class Config:
        def __init__(self):
            self.sliding_window, self.attention_chunk_size, self.hidden_size = 4096, 8192, 4096

    config = shrink(Config())
    assert (config.sliding_window, config.attention_chunk_size) == (32, 32)


def llm_row(name="transformers:a", **changes) -> dict:
    row = {**blank_llm_row(name), "prompt": 64, "generated": 8, "attention": "grouped",
           "experts": "dense", "oracle": "FlopCounterMode/2, math attention",
           "seconds": 3.0, "peak_mb": 500.0}
    for ours, theirs, value in (("prefill_macs", "oracle_prefill_macs", 1000),
                                ("decode_first_macs", "oracle_decode_first_macs", 20),
                                ("decode_last_macs", "oracle_decode_last_macs", 22),
                                ("params_total", "oracle_params", 50),
                                ("params_active", "hand_params_active", 50),
                                ("kv_bytes", "hand_kv_bytes", 64)):
        row[ours] = row[theirs] = value
    return {**row, **changes}


def test_a_row_is_exact_where_every_column_equals_its_oracle_or_hand_count():
    assert judge_llm(llm_row()) == {**llm_row(), "verdict": "exact", "reason": ""}


def test_each_column_off_its_check_is_named_with_the_amount():
    row = judge_llm(llm_row(kv_bytes=48, decode_last_macs=11))
    assert row["verdict"] == "differs"
    assert row["reason"] == ("decode last MACs -11 (-50.00%); "
                             "KV bytes vs hand count -16 (-25.00%)")


def test_a_kv_difference_names_the_layers_that_hold_other_than_the_config_says():
    # MiMo-V2-Flash's code doubles the KV heads of its sliding layers, which its config does not
    # say: 1 KV head of 24, window 32 of 72 tokens: the hand count holds 32 × 48 × 2 = 3,072 B
    # on layer 1, the graph 6,144 B; layer 0 (full, 72 × 48 × 2 = 6,912 B) agrees.
    config = {**BASE, "num_key_value_heads": 1, "sliding_window": 32,
              "layer_types": ["full_attention", "sliding_attention"]}
    hand = hand_kv_layers(config, TOKENS)
    assert hand == [6912, 3072]
    assert kv_layers_differing(config, hand, {0: 6912, 1: 6144}) == \
        "layer 1 (sliding_attention) 2× the config's"
    assert kv_layers_differing(config, hand, {0: 6912, 1: 4000}) == \
        "layer 1 (sliding_attention) 4,000 B, the config's 3,072 B"
    assert kv_layers_differing(config, hand, {0: 6912, 1: 3072}) == ""
    row = judge_llm(llm_row(kv_bytes=96), why={"kv_bytes": "layer 1 (sliding_attention) 2×"})
    assert row["reason"] == "KV bytes vs hand count +32 (+50.00%): layer 1 (sliding_attention) 2×"


def test_a_layer_whose_projections_are_wider_than_its_config_holds_their_width():
    # MiMo-V2-Flash again: its sliding layer's key and value projections are 2 × 24 wide each
    # (2 KV heads, not the config's 1): 32 positions × 96 elements × 2 B = 6,144 B, as the graph
    # holds; layer 0 as its config says. A latent cache keeps its own width.
    config = {**BASE, "num_key_value_heads": 1, "sliding_window": 32,
              "layer_types": ["full_attention", "sliding_attention"]}
    assert hand_kv_layers(config, TOKENS, widths={1: 96}) == [6912, 6144]
    assert hand_kv_bytes(config, TOKENS, widths={1: 96}) == 6912 + 6144
    latent = {**BASE, "kv_lora_rank": 32, "qk_rope_head_dim": 8}
    assert hand_kv_layers(latent, TOKENS, widths={0: 96}) == [72 * 40 * 2] * 2


@pytest.mark.slow  # imports torch
def test_projection_widths_are_read_off_the_decoder_layers_beside_the_embeddings():
    # A decoder of 2 layers (keys and values 24 + 24 wide, then 48 + 48) beside its token
    # embeddings, and a vision encoder of 2 layers (96 + 96) elsewhere: only the decoder's.
    torch = pytest.importorskip("torch")
    from onnxflops.survey.llm import projection_widths

    def layer(width):
        attention = torch.nn.Module()
        attention.k_proj, attention.v_proj = (torch.nn.Linear(96, width) for _ in range(2))
        block = torch.nn.Module()
        block.self_attn = attention
        return block

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.vision = torch.nn.Module()
            self.vision.layers = torch.nn.ModuleList([layer(96), layer(96)])
            self.text = torch.nn.Module()
            self.text.embed_tokens = torch.nn.Embedding(10, 96)
            self.text.layers = torch.nn.ModuleList([layer(24), layer(48)])

        def get_input_embeddings(self):
            return self.text.embed_tokens

    assert projection_widths(Model(), 2) == {0: 48, 1: 96}
    assert projection_widths(Model(), 3) == {}  # no stack of the depth


@pytest.mark.slow  # imports torch
def test_a_module_whose_output_the_logits_never_read_is_found():
    # BigBird's causal LM runs its encoder's pooler and discards it: the pooler's params get no
    # gradient from the logits; the head's and the body's do.
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    from onnxflops.survey.llm import discarded_modules

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(10, 8)
            self.body = torch.nn.Linear(8, 8)
            self.pooler = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh())
            self.head = torch.nn.Linear(8, 10)

        def forward(self, input_ids):
            hidden = self.body(self.embed(input_ids))
            self.pooler(hidden[:, 0])  # computed, never read
            return SimpleNamespace(logits=self.head(hidden))

    assert discarded_modules(Model(), torch.zeros(1, 4, dtype=torch.long)) == ("pooler",)


def test_a_count_short_of_the_oracle_by_discarded_work_is_an_oracle_failure():
    # BigBird at the survey's sizes: the oracle counts the pooler's 96 × 96 = 9,216 MACs in the
    # prefill and in every decode step; the count, without them, equals the rest.
    pooler = 9216
    row = llm_row(oracle_prefill_macs=1000 + pooler, oracle_decode_first_macs=20 + pooler,
                  oracle_decode_last_macs=22 + pooler)
    unread = dict.fromkeys(("prefill_macs", "decode_first_macs", "decode_last_macs"), pooler)
    judged = judge_llm(row, why={"discarded": "bert.pooler"}, unread_macs=unread)
    assert judged["verdict"] == "oracle failed"
    assert judged["reason"] == (
        "oracle wrong: FlopCounterMode counts 9,216 prefill and 9,216 decode-step MACs in "
        "bert.pooler, whose output the logits never read (their params get no gradient from "
        "them; the exported graph drops that work); without them the count is exact")
    # discarded work that does not account for the difference: the row differs as before
    assert judge_llm(row, why={"discarded": "bert.pooler"},
                     unread_macs={**unread, "prefill_macs": 1})["verdict"] == "differs"
    # a further difference (KV bytes) keeps the row differing, the oracle's share explained
    both = judge_llm({**row, "kv_bytes": 48}, unread_macs=unread)
    assert both["verdict"] == "differs"
    assert both["reason"].startswith("KV bytes vs hand count -16 (-25.00%); oracle wrong: ")


@pytest.mark.slow  # imports torch
def test_an_oracle_failure_says_whether_hf_generate_fails_alike():
    # Dory's own generate fails as the oracle's decode steps do: the model cannot decode.
    # CPM-Ant's runs: it feeds the whole sequence each step, not one token and the cache.
    pytest.importorskip("torch")
    from types import SimpleNamespace

    from onnxflops.survey.llm import own_generate_note

    def fails(*args, **kwargs):
        raise RuntimeError("The size of tensor a (95) must match the size of tensor b (64)")

    assert own_generate_note(SimpleNamespace(generate=fails), None, 8) == (
        "; HF's own generate fails alike (RuntimeError: The size of tensor a (95) must match "
        "the size of tensor b (64))")
    assert own_generate_note(SimpleNamespace(generate=lambda *a, **k: None), None, 8) == (
        "; HF's own generate runs: it feeds the model other than one token and its cache "
        "each step")


def test_failed_stages_give_the_survey_verdicts():
    assert judge_llm(llm_row(), {"build": "ValueError: x"})["verdict"] == "not built"
    assert judge_llm(llm_row(), {"count": "OnnxFlopsError: y"})["verdict"] == "not counted"
    # CPM-Ant: neither serves one token and its cache, but HF's own generate runs
    both = {"count": "OnnxFlopsError: y", "oracle": "RuntimeError: z"}
    assert judge_llm(llm_row(), both)["verdict"] == "not built"
    decodes = judge_llm(llm_row(), both, {"generate": "runs"})
    assert (decodes["verdict"], decodes["reason"]) == ("not counted",
                                                       "OnnxFlopsError: y; oracle: RuntimeError: z")
    failed = judge_llm(llm_row(oracle_prefill_macs=None), {"oracle": "RuntimeError: z"})
    assert failed["verdict"] == "oracle failed"
    assert failed["reason"] == "oracle: RuntimeError: z"  # the hand counts held


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".md"])
def test_llm_rows_are_stored_with_their_own_columns_and_read_back(tmp_path, suffix):
    out = tmp_path / f"llm{suffix}"
    store = RowStore(out, LLM_COLUMNS)
    store.append(judge_llm(llm_row()))
    store.append(judge_llm(llm_row("transformers:b", kv_bytes=48)))
    rows = read_any(out)
    assert rows[0] == judge_llm(llm_row())
    assert [r["verdict"] for r in rows] == ["exact", "differs"]
    assert RowStore(out, LLM_COLUMNS).done == {"transformers:a", "transformers:b"}
    if suffix == ".csv":
        assert out.read_text().splitlines()[0] == ",".join(LLM_COLUMNS)
    if suffix == ".md":
        assert "| hand_kv_bytes |" in out.read_text()


def test_a_hand_count_that_cannot_read_the_config_makes_the_row_differ_saying_why():
    row = judge_llm(llm_row(hand_kv_bytes=None, hand_params_active=None),
                    {"hand": "ZeroDivisionError: integer division or modulo by zero"})
    assert row["verdict"] == "differs"
    assert row["reason"] == "hand count: ZeroDivisionError: integer division or modulo by zero"


def test_hand_counts_read_a_config_through_its_standard_names():
    class Config:  # BART's form: the standard names are aliases of its own
        attribute_map = {"num_attention_heads": "decoder_attention_heads",
                         "hidden_size": "d_model", "num_hidden_layers": "decoder_layers"}
        num_attention_heads, hidden_size, num_hidden_layers = 4, 96, 2

        def to_dict(self):
            return {"decoder_attention_heads": 4, "d_model": 96, "decoder_layers": 2}

    config = config_values(Config())
    assert hand_kv_bytes(config, TOKENS) == 2 * 72 * 192 * 2 and attention_kind(config) == "full"


def test_hand_counts_read_the_depth_a_config_derives():
    class Config:  # LongCat-Flash's form: two attention sublayers, two cache layers, per layer
        num_layers, num_attention_heads, num_key_value_heads, hidden_size = 1, 4, 4, 96

        @property
        def num_hidden_layers(self):
            return 2 * self.num_layers

        @property
        def needs_more(self):
            raise AttributeError("not set")

        def to_dict(self):
            return {"num_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 4,
                    "hidden_size": 96}

    config = config_values(Config())
    # 2 cache layers × 72 tokens × (keys and values of 4 heads × 24) × 2 bytes
    assert config["num_hidden_layers"] == 2 and "needs_more" not in config
    assert hand_kv_bytes(config, TOKENS) == 2 * 72 * 192 * 2


@pytest.mark.parametrize("key", ["num_experts_per_tok", "moe_topk", "experts_per_token", "top_k"])
def test_the_count_reads_the_top_k_under_each_name_configs_give_it(key):
    from types import SimpleNamespace

    from onnxflops.converters.causal_lm import experts_per_token

    assert experts_per_token(SimpleNamespace(**{key: 2})) == 2
    assert experts_per_token(SimpleNamespace(num_experts_per_tok=None, moe_topk=3)) == 3
    assert experts_per_token(SimpleNamespace()) == 0


@pytest.mark.slow  # imports torch
def test_the_llm_oracle_counts_a_module_called_with_a_view_of_a_parameter():
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from onnxflops.survey.oracle import inference_counted

    class Kernel(torch.nn.Module):  # a function made a module, as hub-kernel layers are
        def forward(self, x, weight):
            return x @ weight

    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv1d(4, 6, 1, bias=False)
            self.kernel = Kernel()

        def forward(self, x):
            return self.kernel(x, self.conv.weight.squeeze(-1).t())

    layer, x = Layer(), torch.randn(3, 4)
    # under no_grad alone the module tracker meets a view that requires grad with no grad_fn
    with pytest.raises(AssertionError, match="gradient function"), torch.no_grad(), \
            FlopCounterMode(display=False):
        layer(x)
    with inference_counted(layer), FlopCounterMode(display=False) as counter:
        layer(x)
    assert counter.get_total_flops() == 2 * 3 * 4 * 6  # (3 × 4) @ (4 × 6)
    assert all(p.requires_grad for p in layer.parameters())  # put back
