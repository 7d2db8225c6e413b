"""The small-config rule's sub-models, found in keras-hub's own classes and docstrings."""

from __future__ import annotations

import pytest

keras_hub = pytest.importorskip("keras_hub")


@pytest.mark.parametrize("backbone, argument, expected", [
    ("BLIP2Backbone", "language_model", "BLIP2CustomOPT"),  # named bare: `BLIP2CustomOPT`
    ("RetinaNetBackbone", "image_encoder", "ResNetBackbone"),  # by family: "e.g., ResNet50"
    ("PARSeqBackbone", "image_encoder", "ViTBackbone"),  # its task's `image_encoder = ViTBackbone(`
    ("StableDiffusion3Backbone", "vae", "VAEBackbone"),  # not exported: its family's module
    ("CLIPBackbone", "vision_encoder", "CLIPVisionEncoder"),  # family + argument
    ("BertBackbone", "vocabulary_size", None),  # no sub-model
])
def test_a_sub_model_is_the_class_its_docstrings_name(backbone, argument, expected):
    from onnxflops.survey.keras import sub_model

    found = sub_model(getattr(keras_hub.models, backbone), argument)
    assert (found.__name__ if found is not None else None) == expected
