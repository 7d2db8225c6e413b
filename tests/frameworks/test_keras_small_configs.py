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


def test_an_image_sub_models_side_and_feature_strides():
    """A 32-px input through two stride-2 convolutions, their maps given by name: side 32,
    strides 32 // 16 = 2 and 32 // 8 = 4; an open input is taken at IMAGE (64 // 32, 64 // 16:
    the same strides); a sub-model of a sequence has none."""
    from onnxflops.survey.keras import image_geometry

    keras = pytest.importorskip("keras")

    def pyramid(side):
        image = keras.Input((side, side, 3))
        half = keras.layers.Conv2D(4, 3, strides=2, padding="same")(image)
        quarter = keras.layers.Conv2D(4, 3, strides=2, padding="same")(half)
        return keras.Model(image, {"stage1": half, "stage2": quarter})

    assert image_geometry(pyramid(32)) == (32, [2, 4])
    assert image_geometry(pyramid(None)) == (None, [2, 4])
    tokens = keras.Input((None,), dtype="int32")
    assert image_geometry(keras.Model(tokens, keras.layers.Embedding(10, 4)(tokens))) == (None, [])
