"""The keras-hub survey's rules for inputs and builds, by hand on declared shapes, configs and
toy classes (no Keras needed), and the converter's naming of outputs a dict nests."""

from __future__ import annotations

import pytest

from onnxflops.survey.keras import (SAMPLES, TOKENS, bound_shapes, configured_sizes,
                                    fitted_to_part, input_variants, padding_mask_of, _IMAGE_SIZE,
                                    _POSITIONS)


def test_a_waveform_is_bound_to_a_second_of_samples_and_its_padding_mask_to_its_length():
    """Moonshine's encoder reads raw audio, (None, None, 1): 16 samples are shorter than its
    first convolution's 127-wide kernel. A waveform gets one second at 16 kHz (as the
    transformers rows), and the mask that pads it, `encoder_padding_mask`, its length; the
    decoder's mask keeps its tokens'."""
    declared = {"decoder_padding_mask": (None, None), "decoder_token_ids": (None, None),
                "encoder_input_values": (None, None, 1), "encoder_padding_mask": (None, None)}
    assert SAMPLES == 16000
    assert bound_shapes(declared, 64) == {
        "decoder_padding_mask": (1, TOKENS), "decoder_token_ids": (1, TOKENS),
        "encoder_input_values": (1, 16000, 1), "encoder_padding_mask": (1, 16000)}
    # features (bins per frame) are no waveform: their frames are tokens
    assert bound_shapes({"encoder_features": (None, None, 80)}, 64) == {
        "encoder_features": (1, TOKENS, 80)}


def test_a_padding_mask_pads_the_first_sequence_input_named_as_it_is():
    declared = {"images": (None, None, None, 3), "padding_mask": (None, None),
                "token_ids": (None, None), "encoder_input_values": (None, None, 1),
                "encoder_padding_mask": (None, None)}
    assert padding_mask_of("padding_mask", declared) == "token_ids"  # images are no sequence
    assert padding_mask_of("encoder_padding_mask", declared) == "encoder_input_values"
    assert padding_mask_of("token_ids", declared) is None
    shapes = bound_shapes(declared, 64)
    assert shapes["images"] == (1, 64, 64, 3) and shapes["padding_mask"] == (1, TOKENS)


def test_sizes_a_config_names_are_read_through_its_sub_models():
    """SigLIP's text encoder is a sub-model: its position table (64) is in its own config, as
    Keras serializes it inside the backbone's."""
    config = {"vision_encoder": {"class_name": "V", "config": {"image_shape": (224, 224, 3)}},
              "text_encoder": {"class_name": "T", "config": {"max_sequence_length": 64,
                                                             "hidden_dim": 64}},
              "anchor_image_size": (256, 256), "use_bias": True}
    assert configured_sizes(config, _POSITIONS) == [64]
    assert configured_sizes(config, _IMAGE_SIZE) == [224, 256]
    assert configured_sizes({"image_shape": (None, None, 3)}, _IMAGE_SIZE) == []  # open


class _Tensor:
    def __init__(self, name, shape):
        self.name, self.shape = name, shape


class _Model:
    def __init__(self, inputs, config):
        self.inputs, self._config = inputs, config

    def get_config(self):
        return self._config


def test_where_the_forward_fails_sequences_are_tried_as_long_as_the_position_table():
    """SigLIP's text embedding adds its whole position table (64 rows) to the tokens: 16 tokens
    fail. Then images as large as the config says (D-FINE's anchors are laid out for
    `anchor_image_size`); a binding equal to the first is not tried again."""
    model = _Model([_Tensor("images", (None, None, None, 3)), _Tensor("token_ids", (None, None))],
                   {"text": {"config": {"max_sequence_length": 64}}, "anchor_image_size": (256, 256)})
    assert input_variants(model, 64) == (
        {"images": (1, 64, 64, 3), "token_ids": (1, 64)},
        {"images": (1, 256, 256, 3), "token_ids": (1, TOKENS)})
    plain = _Model([_Tensor("token_ids", (None, None))], {"max_sequence_length": TOKENS,
                                                          "image_size": 64})
    assert input_variants(plain, 64) == ()


def test_outputs_a_dict_nests_in_lists_are_named_by_key_and_place():
    """D-FINE returns a dict holding tuples of tensors (its intermediate predictions): tf2onnx
    named each dict value as a tensor and failed on the tuple."""
    from onnxflops.converters.from_keras import _output_names

    outputs = {"logits": _Tensor("Identity:0", ()),
               "intermediate": (_Tensor("Identity_1:0", ()), [_Tensor("Identity_2:0", ())])}
    assert _output_names(outputs) == {"Identity:0": "logits", "Identity_1:0": "intermediate_0",
                                      "Identity_2:0": "intermediate_1_0"}
    assert _output_names([_Tensor("Identity:0", ())]) == {}  # no dict: names are kept


def test_a_composite_is_built_last_as_its_docstring_example_calls_it(monkeypatch):
    """SAM3's six parts must fit each other (the mask decoder reads as many feature levels as
    the vision encoder's FPN gives); the docstring example builds each from literals and passes
    them by variable. Its call is read with those parts built; what the example cannot give
    (`...`, a name it never assigns) is left to the rule."""
    import onnxflops.survey.keras as rule

    class Encoder:
        def __init__(self, levels, width):
            self.levels, self.width = levels, width

    class Composite:
        """A composite.

        Example:
        ```python
        encoder = keras_hub.layers.Encoder(levels=[4.0, 2.0, 1.0], width=32)
        other = keras_hub.layers.Unknown(...)
        shared = {"heads": 2}
        model = keras_hub.models.Composite(encoder=encoder, other=other, queries=100,
                                           dtype=policy, **shared)
        ```
        """

    monkeypatch.setattr(rule, "_hub_class", lambda name, besides=None: {
        "Encoder": Encoder}.get(name))
    called = rule.example_call(Composite)
    assert set(called) == {"encoder", "queries", "heads"}
    assert (called["encoder"].levels, called["encoder"].width) == ([4.0, 2.0, 1.0], 32)
    assert (called["queries"], called["heads"]) == (100, 2)

    class Plain:
        """No example."""

    assert rule.example_call(Plain) == {}


@pytest.mark.slow  # torch tensors
def test_a_twin_is_given_the_padding_masks_its_keras_hub_backbone_applies():
    """HF's T5 and Gemma-3 skip their masks' work where none is given or where it pads nothing;
    keras-hub's backbone always applies its padding masks. Each token sequence the twin takes a
    mask for gets one, its last token padding."""
    torch = pytest.importorskip("torch")
    from onnxflops.survey.keras import with_padding_masks

    class Seq2Seq:
        def forward(self, input_ids, attention_mask=None, decoder_input_ids=None,
                    decoder_attention_mask=None):
            pass

    class Encoder:
        def forward(self, input_ids):
            pass

    ids = torch.zeros(1, 4, dtype=torch.long)
    masked = with_padding_masks(Seq2Seq(), {"input_ids": ids, "decoder_input_ids": ids})
    assert masked["attention_mask"].tolist() == [[1, 1, 1, 0]]
    assert masked["decoder_attention_mask"].tolist() == [[1, 1, 1, 0]]
    assert set(with_padding_masks(Encoder(), {"input_ids": ids})) == {"input_ids"}


def test_a_pooled_region_is_a_kernels_size_and_keras_own_dtype_is_never_given():
    """SAM3's geometry encoder pools each box to `roi_size`; read as a width (64) it sampled
    16 boxes × 64 × 64 × 8 × 8 × 64 values, 4 GB a tensor. A region's pooled side is as small as
    a kernel (3). `dtype` is Keras's policy: its docstring offers "bfloat16", and a try given
    it built SAM3 in half precision; no try gives it."""
    from onnxflops.survey.keras import build_small, required_value, small_config

    assert required_value("roi_size") == 3 and required_value("pool_size") == 3

    class Backbone:
        """A backbone.

        Args:
            hidden_dim: int. The width.
            dtype: string or `keras.mixed_precision.DTypePolicy`. Defaults to `"bfloat16"` or
                `"float32"`.
        """

        def __init__(self, hidden_dim, dtype=None):
            if dtype is not None:
                raise ValueError("only the float32 policy builds")
            self.dtype = dtype

    assert small_config(Backbone, fill_open=1) == {"hidden_dim": 64}
    assert build_small(Backbone)[1] == {"hidden_dim": 64}


def test_last_a_composites_parts_are_built_with_their_optional_switches(monkeypatch):
    """SD3 reads its CLIP encoders' outputs by the key "sequence_output", which a CLIP encoder
    gives only with `intermediate_output_index`, an optional int. Where no other try builds,
    the parts are built with their optional None-defaulted arguments given (an index: 0)."""
    import onnxflops.survey.keras as rule

    class Encoder:
        """An encoder.

        Args:
            hidden_dim: int. The width.
            intermediate_output_index: optional int. The layer whose output is given too.
        """

        def __init__(self, hidden_dim, intermediate_output_index=None):
            self.index = intermediate_output_index

    class Composite:
        def __init__(self, encoder):
            if encoder.index is None:
                raise ValueError("Unsupported key type for array slice: `sequence_output`")
            self.encoder = encoder

    monkeypatch.setattr(rule, "sub_model", lambda cls, name: Encoder if name == "encoder"
                        else None)
    model, _ = rule.build_small(Composite)
    assert model.encoder.index == 0
    # a part is not given its optional switches where the composite builds without them
    assert rule.small_config(Encoder, fill_open=1) == {"hidden_dim": 64}


def test_a_composites_image_size_and_feature_strides_follow_its_image_sub_model():
    """D-FINE's HGNetV2, built from its docstring's example, takes 224-px images and gives maps
    at strides 4, 4, 8 and 16 (stem, stages 1-3). D-FINE lays its anchors out for
    `anchor_image_size` // `feat_strides`: by the rule alone (64 px; strides 1, 2: maps of 64
    and 32) no map fits the 28 and 14 it is given, and the decoder's split of the flattened
    maps is empty. Fitted: 224 px and the two deepest strides, 8 and 16 (224 // 8 = 28,
    224 // 16 = 14). Other arguments, and a sub-model with an open input, keep the rule's."""
    geometry = (224, [4, 4, 8, 16])
    assert fitted_to_part("anchor_image_size", [64, 64], *geometry) == [224, 224]
    assert fitted_to_part("feat_strides", [1, 2], *geometry) == [8, 16]
    assert fitted_to_part("feat_strides", [1, 2, 2, 2, 2], *geometry) == [1, 2, 2, 2, 2]
    assert fitted_to_part("strides", [1, 2], *geometry) == [1, 2]  # a convolution's own
    assert fitted_to_part("hidden_dim", 64, *geometry) == 64
    assert fitted_to_part("anchor_image_size", [64, 64], None, [4, 8]) == [64, 64]


def test_an_error_tensorflow_raised_tracing_user_code_is_told_by_where_and_what():
    """SD3's forward, traced: TensorFlow's message opens with "in user code:" and Keras's closes
    with the arguments the layer received, neither of which says what failed (the row read
    "OperatorNotAllowedInGraphError: in user code:"). One line: the last frame's file, line,
    function and code, then the error's own lines."""
    from onnxflops.errors import first_line, last_line

    error = TypeError(
        'in user code:\n\n'
        '    File "/x/onnxflops/oracles/keras.py", line 80, in call  *\n'
        '        return model(inputs, training=False)\n'
        '    File "/x/keras_hub/flow_match_euler_discrete_scheduler.py", line 57, in set_sigmas\n'
        '        timesteps = ops.linspace(\n\n'
        '    OperatorNotAllowedInGraphError: Exception encountered when calling Scheduler.call().'
        '\n\n    \x1b[1mUsing a symbolic `tf.Tensor` as a Python `bool` is not allowed.\x1b[0m\n\n'
        '    Arguments received by Scheduler.call():\n'
        '      • num_steps=tf.Tensor(shape=(), dtype=int32)\n')
    told = ("flow_match_euler_discrete_scheduler.py:57 in set_sigmas (timesteps = ops.linspace(): "
            "OperatorNotAllowedInGraphError: Exception encountered when calling Scheduler.call(). "
            "Using a symbolic `tf.Tensor` as a Python `bool` is not allowed.")
    assert first_line(error) == last_line(error) == told
    assert first_line(ValueError("one\ntwo")) == "one" and last_line(ValueError("one\ntwo")) == "two"
