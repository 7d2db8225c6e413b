"""Forms of causal LM the serving export meets beyond a plain DynamicCache, each held against the
HF model's own passes under FlopCounterMode (the survey's oracle, math attention):

- an encoder family's causal-LM head (BERT), built as a decoder from a config saying it is not;
  its prompt dim narrowed to the position table (torch.export's suggested fix);
- a cache inside an EncoderDecoderCache (Megatron-BERT);
- a cache layer keeping a further per-token state (DeepSeek-V3.2's indexer keys);
- complex rotary embeddings (view_as_complex, an unsqueeze of a complex table);
- a multimodal config whose text decoder's sizes sit in its text_config (Gemma 3);
- linear-attention layers beside full ones (Qwen3.5): recurrent states, no keys, fed to the
  decode step; a prefill whose prompt length the chunked code fixes, exported at the prompt.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
import torch

from onnxflops.survey.llm import measure_llm


# qwen3_5_text is held against its oracle in the recurrent-state test below: one export, not two
@pytest.mark.parametrize("family", ["bert", "megatron-bert", "deepseek_v32", "llama4_text",
                                    "gemma3"])
def test_each_cache_form_is_served_exactly(family):
    row = measure_llm(types.SimpleNamespace(name=family, label=family), memory_gb=4)
    assert row["verdict"] == "exact", row["reason"]
    assert row["decode_first_macs"] == row["oracle_decode_first_macs"] > 0


def test_an_encoder_config_is_built_as_a_decoder():
    from transformers import BertConfig

    from onnxflops.converters.causal_lm import as_decoder

    assert as_decoder(BertConfig(is_decoder=False)).is_decoder is True


def test_complex_rotary_exports_and_runs_as_torch_does():
    import onnxruntime as ort

    from onnxflops.converters.from_torch import export_dynamo

    class Rotary(torch.nn.Module):
        def forward(self, x, angles):
            z = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))  # [b, s, h, d/2]
            table = torch.polar(torch.ones_like(angles), angles)  # [b, s, d/2]
            return torch.view_as_real(z * table[:, :, None, :]).flatten(3)

    x, angles = torch.randn(2, 5, 3, 8), torch.randn(2, 5, 4)
    proto = export_dynamo(Rotary(), (x, angles), ["x", "angles"], 18)
    session = ort.InferenceSession(proto.SerializeToString())
    out = session.run(None, {"x": x.numpy(), "angles": angles.numpy()})[0]
    np.testing.assert_allclose(out, Rotary()(x, angles).numpy(), atol=1e-5)


def test_a_recurrent_state_is_reported_beside_the_kv_cache():
    import onnxflops
    from onnxflops.survey.llm import GENERATED, PROMPT, build_causal_lm, oracle_passes

    # Qwen3.5 shrunk: layer 0 linear attention (a convolution state of 288 × 4, a recurrent
    # state of 4 heads × 24 × 24), layer 1 full attention with 1 KV head of 24
    model = build_causal_lm("qwen3_5_text")
    ids = torch.randint(0, model.config.vocab_size, (1, PROMPT),
                        generator=torch.Generator().manual_seed(0))
    prefill, steps, _ = oracle_passes(model, ids, GENERATED)
    report = onnxflops.llm(model, prompt=PROMPT, generate=GENERATED)
    # exact against the HF model's own passes, as a survey row of it is
    assert (report.prefill.macs, report.decode_first.macs, report.decode_last.macs) == \
        (prefill, steps[0], steps[-1])
    # bf16: 72 positions × (24 + 24) × 2 B of keys and values; (1152 + 2304) × 2 B of state
    assert (report.kv_cache_bytes, report.state_bytes) == (72 * 48 * 2, 3456 * 2)
    assert [(x.layer, x.kind) for x in report.kv_layers] == [(1, "full"), (0, "state")]
    assert "recurrent state: 6.91 KB" in report.to_table()


def test_a_row_not_built_says_where_the_default_config_fails_alike():
    from onnxflops.survey.llm import fails_unshrunk

    # DBRX's default config lacks the rope_theta its attention reads, shrunk or not; Llama's builds
    assert fails_unshrunk("dbrx", AttributeError("rope_theta"))
    assert not fails_unshrunk("llama", AttributeError("rope_theta"))
