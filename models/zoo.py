"""Real library models (HF transformers, timm, keras-hub, Keras Applications) in tiny configs.

Each `ZooModel` builds its model from a config with random init (nothing is downloaded) and says
how its users call it: a dict of forward() arguments for torch models, of backbone inputs for
keras-hub ones. The configs are small (2 layers, hidden 64) where the architecture stays the same,
so that converting and counting them is quick. `oracle` gives what the framework itself says:
torch's FlopCounterMode / 2 (attention on the math backend) as MACs, and the parameter count.
Importing this module imports no framework.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")

TOKENS = 16
VOCAB = 1000


@dataclass(frozen=True)
class ZooModel:
    name: str
    framework: str  # "torch" or "keras"
    build: Callable[[], object]
    inputs: Callable[[], dict] = field(repr=False)  # name → tensor (torch) or shape (keras)
    twin: str | None = None  # the same network from the other framework
    # Weights the model owns but its forward pass never reads (a backbone holding its LM head's
    # output embedding): the framework counts them, a graph of the forward pass cannot.
    unread: tuple[str, ...] = ()


def oracle(model: ZooModel, built=None, inputs=None) -> tuple[int | None, int]:
    """(MACs, params) as the framework counts them; MACs is None for Keras (no flop counter).

    Keras params are its trainable weights: its non-trainable ones (BatchNorm statistics, a
    Normalization layer's mean and variance) are what torch calls buffers."""
    from onnxflops.survey.oracle import keras_params, torch_oracle

    built = model.build() if built is None else built
    inputs = model.inputs() if inputs is None else inputs
    if model.framework == "keras":
        return None, keras_params(built, model.unread)
    return torch_oracle(built, kwargs=inputs, unread=model.unread)


def _ids(*shape, high: int = VOCAB):
    import torch

    return torch.randint(0, high, shape, generator=torch.Generator().manual_seed(0))


def _image(*shape):
    import torch

    return torch.randn(shape, generator=torch.Generator().manual_seed(0))


def _transformers():
    import transformers

    transformers.logging.set_verbosity_error()
    return transformers


def _timm():
    import timm

    return timm


_SMALL = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128)


def hf_bert():
    t = _transformers()
    return t.BertModel(t.BertConfig(vocab_size=VOCAB, max_position_embeddings=64, **_SMALL))


def hf_gpt2():
    t = _transformers()
    return t.GPT2LMHeadModel(t.GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=64, n_layer=2,
                                          n_head=4))


def hf_gpt2_backbone():
    t = _transformers()
    return t.GPT2Model(t.GPT2Config(vocab_size=VOCAB, n_positions=64, n_embd=64, n_layer=2,
                                    n_head=4))


def hf_llama():
    t = _transformers()
    return t.LlamaModel(t.LlamaConfig(vocab_size=VOCAB, max_position_embeddings=64,
                                      num_key_value_heads=2, **_SMALL))


def hf_t5():
    t = _transformers()
    return t.T5Model(t.T5Config(vocab_size=VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                                num_heads=4))


def hf_vit():
    t = _transformers()
    return t.ViTModel(t.ViTConfig(image_size=32, patch_size=8, **_SMALL), add_pooling_layer=False)


def hf_whisper():
    t = _transformers()
    return t.WhisperModel(t.WhisperConfig(
        vocab_size=VOCAB, d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=128, decoder_ffn_dim=128, num_mel_bins=16,
        max_source_positions=32, max_target_positions=32, pad_token_id=0, bos_token_id=1,
        eos_token_id=2, decoder_start_token_id=1))


def timm_vit():
    return _timm().create_model("vit_base_patch16_224", pretrained=False, img_size=32,
                                patch_size=8, embed_dim=64, depth=2, num_heads=4)


def timm_deit():
    return _timm().create_model("deit_small_distilled_patch16_224", pretrained=False,
                                img_size=32, patch_size=8, embed_dim=64, depth=2, num_heads=4)


def timm_swin():
    return _timm().create_model("swin_tiny_patch4_window7_224", pretrained=False, img_size=64,
                                window_size=4, embed_dim=32, depths=(2, 2), num_heads=(2, 4))


def timm_convnext():
    return _timm().create_model("convnext_tiny", pretrained=False, depths=(1, 1, 1, 1),
                                dims=(16, 32, 64, 128))


def _keras_hub():
    from onnxflops.converters.common import keras_imported

    keras_imported()
    import keras_hub

    return keras_hub


def keras_hub_bert():
    return _keras_hub().models.BertBackbone(vocabulary_size=VOCAB, num_layers=2, num_heads=4,
                                            hidden_dim=64, intermediate_dim=128,
                                            max_sequence_length=64)


def keras_hub_gpt2():
    return _keras_hub().models.GPT2Backbone(vocabulary_size=VOCAB, num_layers=2, num_heads=4,
                                            hidden_dim=64, intermediate_dim=256,
                                            max_sequence_length=64)


def keras_hub_llama():
    return _keras_hub().models.LlamaBackbone(vocabulary_size=VOCAB, num_layers=2,
                                             num_query_heads=4, num_key_value_heads=2,
                                             hidden_dim=64, intermediate_dim=128)


def keras_mobilenet_v2():
    from onnxflops.converters.common import keras_imported

    return keras_imported().applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35,
                                                     weights=None)


def torchvision_mobilenet_v2():
    import torchvision

    return torchvision.models.mobilenet_v2(width_mult=0.35)


def _token_inputs(**extra):
    def inputs():

        return {"input_ids": _ids(1, TOKENS),
                **{k: v() if callable(v) else v for k, v in extra.items()}}
    return inputs


def _ones():
    import torch

    return torch.ones(1, TOKENS, dtype=torch.int64)


def _keras_tokens(*names):
    return lambda: {name: (1, TOKENS) for name in names}


ZOO = (
    ZooModel("hf_bert", "torch", hf_bert, _token_inputs(attention_mask=_ones), "keras_hub_bert"),
    ZooModel("hf_gpt2", "torch", hf_gpt2, _token_inputs(attention_mask=_ones)),
    ZooModel("hf_gpt2_backbone", "torch", hf_gpt2_backbone, _token_inputs(attention_mask=_ones),
             "keras_hub_gpt2"),
    ZooModel("hf_llama", "torch", hf_llama, _token_inputs(attention_mask=_ones), "keras_hub_llama"),
    ZooModel("hf_t5", "torch", hf_t5, _token_inputs(decoder_input_ids=lambda: _ids(1, TOKENS))),
    ZooModel("hf_vit", "torch", hf_vit, lambda: {"pixel_values": _image(1, 3, 32, 32)}),
    ZooModel("hf_whisper", "torch", hf_whisper,
             lambda: {"input_features": _image(1, 16, 64), "decoder_input_ids": _ids(1, TOKENS)}),
    ZooModel("timm_vit", "torch", timm_vit, lambda: {"x": _image(1, 3, 32, 32)}),
    ZooModel("timm_deit", "torch", timm_deit, lambda: {"x": _image(1, 3, 32, 32)}),
    ZooModel("timm_swin", "torch", timm_swin, lambda: {"x": _image(1, 3, 64, 64)}),
    ZooModel("timm_convnext", "torch", timm_convnext, lambda: {"x": _image(1, 3, 64, 64)}),
    ZooModel("torchvision_mobilenet_v2", "torch", torchvision_mobilenet_v2,
             lambda: {"x": _image(1, 3, 96, 96)}, "keras_mobilenet_v2"),
    ZooModel("keras_hub_bert", "keras", keras_hub_bert,
             _keras_tokens("token_ids", "segment_ids", "padding_mask"), "hf_bert"),
    ZooModel("keras_hub_gpt2", "keras", keras_hub_gpt2,
             _keras_tokens("token_ids", "padding_mask"), "hf_gpt2_backbone"),
    ZooModel("keras_hub_llama", "keras", keras_hub_llama,
             _keras_tokens("token_ids", "padding_mask"), "hf_llama",
             unread=("reverse_embeddings",)),
    ZooModel("keras_mobilenet_v2", "keras", keras_mobilenet_v2, lambda: {},
             "torchvision_mobilenet_v2"),
)


def zoo_model(name: str) -> ZooModel:
    for m in ZOO:
        if m.name == name:
            return m
    raise KeyError(name)
