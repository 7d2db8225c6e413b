"""Forms of causal LM the serving export meets beyond a plain DynamicCache, each held against the
HF model's own passes under FlopCounterMode (the survey's oracle, math attention):

- an encoder family's causal-LM head (BERT), built as a decoder from a config saying it is not;
  its prompt dim narrowed to the position table (torch.export's suggested fix);
- a cache inside an EncoderDecoderCache (Megatron-BERT);
- a cache layer keeping a further per-token state (DeepSeek-V3.2's indexer keys);
- complex rotary embeddings (view_as_complex, an unsqueeze of a complex table);
- a multimodal config whose text decoder's sizes sit in its text_config (Gemma 3).
"""

from __future__ import annotations

import types

import numpy as np
import pytest
import torch

from onnxflops.survey.llm import measure_llm


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
