"""The Keras sources of the survey: every keras.applications builder and every keras-hub backbone.

keras.applications builders run at their default input size with `weights=None`, built in
`keras.StatelessScope(initialize_variables=False)` (no weight value is allocated: neither the count
nor the oracle reads one, so the memory cap bounds what counting takes); where a builder leaves
the input's height and width open (MobileNetV3), they are bound to 224, the size its ImageNet
weights were trained at, by the input's Keras name. keras-hub backbones are built from a small
config by one rule (`build_small`: each argument by its name and its docstring entry, a sub-model
as the class the docstring names, built by the same rule); open sequence lengths are bound to
TOKENS, open images to IMAGE × IMAGE.

Where a keras-hub backbone has a transformers twin (`TWINS`), the row also holds the twin's MACs:
the same small config mapped onto the twin's config by what each key means (`twin_config`), the
same tokens, counted by torch's FlopCounterMode.
"""

from __future__ import annotations

import contextlib
import inspect
import re

from onnxflops.survey.shrink import _NOT_A_WIDTH  # sizes the input sets, or no width at all
from onnxflops.survey.sources import TOKENS, Subject, Task

TRAINED_SIZE = 224  # the ImageNet size of the keras.applications builders whose input is open
IMAGE = 64  # a keras-hub image backbone's input side
SAMPLES = 16000  # a waveform's length: one second at 16 kHz, as the transformers rows take
STAGES = 2  # entries of a per-stage list the rule makes (`stackwise_*`, `layerwise_*`)
DEEP = 4  # stages where two are too few: a head that reads pyramid levels P2 to P5

# The one rule for keras-hub configs: each hyperparameter a backbone's constructor names, small.
SMALL = {
    "vocabulary_size": 1000, "num_layers": 2, "num_heads": 4, "num_query_heads": 4,
    "num_key_value_heads": 2, "hidden_dim": 64, "intermediate_dim": 128, "head_dim": 16,
    "max_sequence_length": 64, "num_experts": 4, "top_k": 2, "num_experts_per_tok": 2,
    "image_size": IMAGE, "patch_size": 8, "num_channels": 3, "mlp_dim": 128,
    "embedding_dim": 64, "key_value_dim": 16, "num_encoder_layers": 2, "num_decoder_layers": 2,
    "attention_head_dim": 16, "intermediate_size": 128, "hidden_size": 64,
    "num_attention_heads": 4, "num_hidden_layers": 2, "window_size": 4,
}

# keras-hub backbone → the transformers model type that computes the same network; where the
# twin's config needs more than its sizes, (type, {twin key: value, or a function of the sizes by
# meaning}): the switches by which the HF config describes what the keras-hub class always builds.
_GELU_TANH = {"hidden_act": "gelu_new"}  # keras-hub's `gelu_approximate`: GELU's tanh form

TWINS = {
    "AlbertBackbone": "albert", "BartBackbone": "bart",
    "BertBackbone": ("bert", _GELU_TANH),
    "BloomBackbone": "bloom",
    # DeBERTa-v3: relative attention over 256 log buckets, content↔position both ways, one
    # key projection shared, the relative table layer-normed, no absolute positions
    "DebertaV3Backbone": ("deberta-v2", {
        "relative_attention": True, "pos_att_type": ["p2c", "c2p"], "position_buckets": 256,
        "share_att_key": True, "norm_rel_ebd": "layer_norm", "position_biased_input": False,
        "max_relative_positions": -1}),
    # DistilBERT's `hidden_dim` is its FFN width (`dim` is the width)
    "DistilBertBackbone": ("distilbert", {"hidden_dim": lambda sizes: sizes["ffn"]}),
    "ElectraBackbone": ("electra", _GELU_TANH),
    # keras-hub's ESM is ESM-2's: rotary positions (HF's default is ESM-1's absolute table)
    "ESMBackbone": ("esm", {"position_embedding_type": "rotary"}),
    # keras-hub's Falcon is Falcon-RW's: sequential attention and MLP, every head its own keys
    # and values, ALiBi, biases
    "FalconBackbone": ("falcon", {"multi_query": False, "parallel_attn": False, "alibi": True,
                                  "bias": True, "new_decoder_architecture": False}),
    "GPT2Backbone": "gpt2", "GPTNeoXBackbone": ("gpt_neox", _GELU_TANH),
    # keras-hub's Gemma `intermediate_dim` is both gated halves together
    "GemmaBackbone": ("gemma", {"intermediate_size": lambda sizes: sizes["ffn"] // 2}),
    "Gemma3Backbone": "gemma3_text", "GptOssBackbone": "gpt_oss",
    "LlamaBackbone": "llama", "Llama3Backbone": "llama", "MistralBackbone": "mistral",
    "MixtralBackbone": "mixtral", "OPTBackbone": "opt", "Phi3Backbone": "phi3",
    "QwenBackbone": "qwen2", "Qwen2Backbone": "qwen2", "Qwen3Backbone": "qwen3",
    "Qwen3MoeBackbone": "qwen3_moe", "QwenMoeBackbone": "qwen2_moe", "RobertaBackbone": "roberta",
    "SmolLM3Backbone": "smollm3",
    # keras-hub's T5 is T5 1.1's: a gated FFN (its activation, relu by default, on the gate)
    "T5Backbone": ("t5", {"feed_forward_proj": "gated-relu", "is_gated_act": True,
                          "dense_act_fn": "relu"}),
    "XLMRobertaBackbone": "xlm-roberta", "XLNetBackbone": "xlnet",
}

# Pairs that compute different networks, and why: their MACs are not held against each other.
TWIN_DIFFERS = {
    "BloomBackbone": "HF BLOOM's FFN is 4 x hidden with no key to size it; keras-hub's is "
                     "intermediate_dim",
    **dict.fromkeys(("GptOssBackbone", "MixtralBackbone", "Qwen3MoeBackbone", "QwenMoeBackbone"),
                    "keras-hub runs every expert on every token and weights their outputs by the "
                    "router (dense dispatch); HF runs each token's top-k experts only"),
    "SmolLM3Backbone": "keras-hub's SmolLM3 takes the rotary angles as a matmul (positions x "
                       "frequencies, inner size 1) in every attention layer: 2 x 8 x 16 MACs at "
                       "the survey's size, the whole difference",
    "XLNetBackbone": "keras-hub's XLNet always computes the attention's segment term (segment "
                     "ids are one of its inputs): 2 x 4 heads x 16 tokens x 16 x 2 segments "
                     "MACs here, the whole difference; HF's base model computes it only when "
                     "given token_type_ids",
    "ElectraBackbone": "keras-hub's Electra pools the first token through a dense layer; HF's "
                       "ElectraModel has no pooler",
}


# Pairs that agree on MACs but whose networks do different elementwise work, and which: their
# FLOPs are not held against each other (tools/twin_flops.py, survey/keras_twins.csv).
_ROTARY_TABLE = (
    "rotary table: HF computes cos/sin once per forward from its inv_freq buffer (Cos, Sin, Mul: "
    "work on a buffer, counted); keras-hub computes it in every attention call, for queries and "
    "keys apart, from positions and frequencies that are literals: work on a table of literals, "
    "which Grappler folds into constants before tf2onnx writes the graph (the count would count "
    "it, as foldable work, where a graph keeps it)")
_UNATTENDED_ROWS_WIPED = (
    "keras-hub's Gemma zeroes the attention output of a row with no attended token (ops.all over "
    "the mask: ReduceSum, Greater, and the select's Add, 2 x 1,280), which HF's does not")
TWIN_FLOPS_DIFFER = {
    **dict.fromkeys(("LlamaBackbone", "Llama3Backbone", "MistralBackbone", "Phi3Backbone",
                     "QwenBackbone", "Qwen2Backbone", "Qwen3Backbone"), _ROTARY_TABLE),
    "BartBackbone": "HF's BART multiplies the token embeddings by embed_scale, 1.0 where "
                    "scale_embedding is off (encoder and decoder: 2 x 16 x 64 Mul); keras-hub "
                    "does not",
    "GPTNeoXBackbone": _ROTARY_TABLE,
    "FalconBackbone": "ALiBi: keras-hub adds the bias to the scores in every layer apart from the "
                      "mask (2 layers x 4 x 16 x 16 Add) and builds the bias from slopes and "
                      "positions in each (+128 Mul net); HF builds it once per forward and folds "
                      "it into the mask, and from the padding mask it is given builds ALiBi's "
                      "positions and compares it into the attention mask (Less, 256; +128)",
    "ESMBackbone": _ROTARY_TABLE + "; and HF's ESM multiplies the embeddings by the padding "
                   "mask it is given (16 x 64 Mul); keras-hub masks in attention alone",
    "GemmaBackbone": _ROTARY_TABLE + "; and " + _UNATTENDED_ROWS_WIPED,
    "Gemma3Backbone": _ROTARY_TABLE + "; and " + _UNATTENDED_ROWS_WIPED + "; and HF's Gemma-3 "
                      "always has the post-attention and post-FFN RMS norms (2 layers x 2 x "
                      "4,208: Pow, ReduceMean, Add, Sqrt, Reciprocal, 2 Mul and the 1 + weight "
                      "Add), which keras-hub's builds only with use_post_attention_norm / "
                      "use_post_ffw_norm, off by default. The other norms match: keras-hub's "
                      "Square against HF's Pow. Both apply the same padding mask (the last "
                      "token padding), HF's by selection (And, Where: no float work)",
    "DebertaV3Backbone": "HF's DeBERTa-v2 multiplies the embeddings by the padding mask (ones "
                         "where none is passed) after their LayerNorm (16 x 64 Mul); keras-hub "
                         "masks in attention alone. The attention scales match (2 layers x 3 x "
                         "1,024 each side: keras-hub's Mul by 1/sqrt(3d), HF's Div by sqrt(3d))",
    "T5Backbone": "both apply the same padding masks (the last token padding), keras-hub as "
                  "arithmetic and HF by selection (And, Where: no float work): keras-hub's "
                  "(1 - mask) x -1e9 in the first layer of each stack and in each "
                  "cross-attention (Sub and Mul, 16 + 256 + 2 x 16 each) and its add to the "
                  "bias apart from the scores (4 x 1,024 Add). The RMS norms match: keras-hub's "
                  "Square and Reciprocal against HF's Pow and Div",
    **dict.fromkeys(("RobertaBackbone", "XLMRobertaBackbone"),
                    "HF adds a token-type embedding (one learned row) to every token; keras-hub's "
                    "RoBERTa has none (16 x 64 Add)"),
}

# keras-hub backbones that keras-hub's own defaults cannot build, and why (the row's reason says
# so; the rule is not bent to them).
KERAS_HUB_DEFAULTS_BROKEN = {
    "FluxBackbone": "keras-hub's own defaults cannot build it: image_ids_shape and "
                    "text_ids_shape default to (None, 768, 3072), position ids of 3072 axes each, "
                    "and EmbedND.build indexes axes_dim once per axis (IndexError for any "
                    "shorter axes_dim); its docstring documents none of the *_shape arguments. "
                    "It builds given ids of 3 axes, e.g. image_ids_shape=(16, 3) with "
                    "axes_dim=[4, 6, 6]",
}

# names ----------------------------------------------------------------------------------------

def application_names(_argument: str = "") -> list[str]:
    import keras

    return sorted(name for name in dir(keras.applications)
                  if name[:1].isupper() and callable(getattr(keras.applications, name)))


def hub_names(_argument: str = "") -> list[str]:
    import keras_hub

    return sorted(name for name in dir(keras_hub.models)
                  if name.endswith("Backbone") and inspect.isclass(getattr(keras_hub.models, name))
                  and _names_a_network(getattr(keras_hub.models, name)))


def _names_a_network(cls) -> bool:
    """Whether the constructor takes an argument of its own beyond `dtype`: one that takes
    none (`Backbone`, `FeaturePyramidBackbone`: `*args` passed on to `keras.Model`) is a base
    its subclasses build, with no network to count."""
    parameters = inspect.signature(cls.__init__).parameters.values()
    return any(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
               and p.name not in ("self", "dtype") for p in parameters)


# builds ---------------------------------------------------------------------------------------

def application_build(task: Task) -> Subject:
    keras = _keras()
    # Built without weight values: nothing reads them, and the largest (ConvNeXtXLarge's 1.4 GB)
    # would take most of the cap before the conversion starts.
    with keras.StatelessScope(initialize_variables=False):
        model = getattr(keras.applications, task.name)(weights=None)
    return Subject(model, kwargs=bound_inputs(model, TRAINED_SIZE))


def hub_build(task: Task) -> Subject:
    twin = TWINS.get(task.name)
    twin_type = twin[0] if isinstance(twin, tuple) else twin
    _keras()
    import keras_hub

    cls = getattr(keras_hub.models, task.name)
    try:
        model, config = build_small(cls)
    except ValueError as error:
        if task.name in KERAS_HUB_DEFAULTS_BROKEN:
            raise ValueError(f"{KERAS_HUB_DEFAULTS_BROKEN[task.name]}; {error}") from None
        raise
    subject = Subject(model, kwargs=bound_inputs(model, IMAGE),
                      variants=input_variants(model, IMAGE))
    if twin:
        pooled = has_pooled_output(model)
        label = f"transformers:{twin_type}"
        if task.name in TWIN_DIFFERS:
            label += f" (computes a different network: {TWIN_DIFFERS[task.name]})"
        subject.twin = (label, lambda: apart(twin_macs, task.name, config, pooled))
    return subject


def has_pooled_output(model) -> bool:
    """Whether the keras-hub backbone gives a pooled output (its twin is built with a pooler)."""
    return "pooled_output" in getattr(model, "output_names", []) or (
        isinstance(model.output, dict) and "pooled_output" in model.output)


def _keras():
    """Keras, with what converting and counting import loaded first: the cap is on the whole
    address space, and a shared library mapped after the model took its memory would fail."""
    from onnxflops.converters.common import keras_imported

    keras = keras_imported()
    import tf2onnx  # noqa: F401

    import onnxflops.api  # noqa: F401
    return keras


def bound_inputs(model, side: int, tokens: int = TOKENS) -> dict[str, tuple]:
    """Every input's shape by its Keras name, open dims bound (`bound_shapes`)."""
    return bound_shapes({t.name: tuple(t.shape) for t in model.inputs}, side, tokens)


def bound_shapes(declared: dict[str, tuple], side: int, tokens: int = TOKENS) -> dict[str, tuple]:
    """Each declared shape (input name → dims, None where open) with its open dims bound: a
    batch to 1, an image's height and width to `side`, a waveform's samples (one value a step:
    (None, None, 1)) to SAMPLES, a sequence's length to `tokens`; then a padding mask's length
    to that of the input it pads (`padding_mask_of`)."""
    shapes = {}
    for name, shape in declared.items():
        if len(shape) == 3 and shape[1] is None and shape[2] == 1:
            fill = SAMPLES
        else:
            fill = side if len(shape) == 4 else tokens
        shapes[name] = (1, *[fill if d is None else d for d in shape[1:]])
    for name, shape in declared.items():
        padded = padding_mask_of(name, declared)
        if padded and len(shape) == 2 and shape[1] is None:
            shapes[name] = (1, shapes[padded][1])
    return shapes


def padding_mask_of(name: str, declared: dict[str, tuple]) -> str | None:
    """The input a padding mask pads: the first sequence input (rank 2 or 3: token ids,
    features, a waveform) whose name starts as the mask's does before `padding_mask`
    (`encoder_padding_mask` pads `encoder_input_values`; `padding_mask`, `token_ids`); None for
    an input that is no padding mask."""
    if not name.endswith("padding_mask"):
        return None
    prefix = name.removesuffix("padding_mask")
    return next((other for other, shape in declared.items() if other.startswith(prefix)
                 and not other.endswith("mask") and len(shape) in (2, 3)), None)


def input_variants(model, side: int) -> tuple[dict, ...]:
    """Other bindings of the inputs, tried where the forward fails on `bound_inputs`: sequences
    as long as a position table the config sizes (SigLIP's text embedding adds its whole table,
    so its tokens must be that many), then images as large as an image size the config names
    (D-FINE's anchors are laid out for `anchor_image_size`)."""
    config = _config_of(model)
    variants = [bound_inputs(model, side, length) for length in
                configured_sizes(config, _POSITIONS) if length != TOKENS]
    variants += [bound_inputs(model, size) for size in configured_sizes(config, _IMAGE_SIZE)
                 if size != side]
    bound = bound_inputs(model, side)
    return tuple(v for i, v in enumerate(variants) if v != bound and v not in variants[:i])


_POSITIONS = re.compile(r"^(max_sequence_length|max_position_embeddings|sequence_length)$")
_IMAGE_SIZE = re.compile(r".*image_(size|shape)$")


def configured_sizes(config, key: re.Pattern) -> list[int]:
    """Every size a config (nested: its sub-models' configs as Keras serializes them) gives
    under a key `key` matches, in order, once each: an int, or the first of a shape's ints
    ((256, 256) or (224, 224, 3): 256, 224)."""
    found = []

    def walk(value):
        if isinstance(value, dict):
            for k, v in value.items():
                if isinstance(k, str) and key.match(k):
                    size = v if isinstance(v, int) and not isinstance(v, bool) else next(
                        iter(v), None) if isinstance(v, (list, tuple)) else None
                    if isinstance(size, int) and size > 0 and size not in found:
                        found.append(size)
                walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)

    walk(config)
    return found


def _config_of(model) -> dict:
    """The model's config as Keras serializes it; {} where it cannot."""
    try:
        return model.get_config()
    except Exception:  # noqa: BLE001 - a config is only read for sizes
        return {}


def build_small(cls, depth: int = 0, stages: int | None = None, optional: bool = False):
    """`cls` built from `small_config`, and that config. Where the constructor fails, again
    with the arguments it defaults to None given too (a None that stands for "required": MiT's
    `hidden_dims`), then with open input shapes bound (ViTDet's `image_shape`: a composite's
    sub-model is tried first with its input left open), then with DEEP stages (a head
    that reads four pyramid levels); each first with the size-like library defaults made small
    (`smaller_default`), and, where no try builds, again with the library's; where none of
    those builds, each again with one argument given another option its docstring offers. A try
    that fails iterating an int is tried again with per-stage names as lists (`typed=False`). A
    sub-model is built with its composite's `stages`. Last, the sub-models are built with their
    optional switches given too (`optional`: SD3 reads its CLIP encoders' "sequence_output",
    which they give only with `intermediate_output_index`). The error is the first try's and
    the last's."""
    tries = [(STAGES, 0), (STAGES, 1), (STAGES, 2), (DEEP, 1), (DEEP, 2), (STAGES, _PARTS)]
    errors = []
    tries = [(shrink, depth_, fill) for shrink in (True, False) for depth_, fill in tries
             if stages in (None, depth_) and (fill > 0 or not optional)]
    # then each other option a choice's docstring offers, one argument at a time (CSPNet's
    # first stage type does not fit its default ratios; its third does)
    others = [{name: option} for name in inspect.signature(cls.__init__).parameters
              if name not in _KERAS_OWN
              for option in documented_choices(documented(cls, name))[1:]]
    # then the values an example in the docstring gives (MobileNetV5's block types, which no
    # docstring entry lists); last, the docstring example's call itself, with the sub-models
    # it builds (SAM3's six parts, each sized to fit the others)
    example = example_arguments(cls)
    for chosen in [{}, *others, *([example] if example else []), _EXAMPLE_CALL]:
        if chosen is _EXAMPLE_CALL and not (chosen := example_call(cls)):
            continue
        for shrink_defaults, deep, fill_open in tries:
            for typed in (True, False):
                try:
                    config = {**small_config(cls, depth, fill_open, deep, shrink_defaults, typed,
                                             optional)}
                    given = config if chosen is not example and not isinstance(
                        chosen, _Called) else inspect.signature(cls.__init__).parameters
                    # an example's value is given where none was
                    config.update({k: v for k, v in chosen.items() if k in given})
                    if chosen and not set(chosen) & set(config):
                        break  # this try does not give that argument: nothing to change
                    return cls(**config), config
                except Exception as error:  # noqa: BLE001 - what the library raises is the reason
                    errors.append(f"{type(error).__name__}: {error}".split("\n")[0][:300])
                    if not _iterates_an_int(error):
                        break  # the docstring's types are not what failed
    raise ValueError(" / ".join(dict.fromkeys([errors[0], errors[-1]])))


class _Called(dict):
    """The arguments a docstring example calls a class with (`example_call`)."""


_EXAMPLE_CALL = _Called()  # the try that reads them, made only where the others fail


def example_call(cls) -> _Called:
    """The arguments the first call of `cls` in its docstring's example code gives, each a
    literal, a `**` of a dict literal, or a variable the example assigns a keras-hub class
    called so (built here); an argument none of those is left out (the rule gives it). Empty
    where no example calls `cls`."""
    import ast

    for code in re.findall(r"```python\n(.*?)```", inspect.getdoc(cls) or "", re.S):
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        assigned = {target.id: node.value for node in ast.walk(tree)
                    if isinstance(node, ast.Assign) for target in node.targets
                    if isinstance(target, ast.Name)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _called_name(node) == cls.__name__:
                return _Called(_call_arguments(node, assigned))
    return _Called()


def _called_name(call) -> str | None:
    """The name of the class or function an AST call calls (`keras_hub.layers.X(...)`: X)."""
    import ast

    function = call.func
    return function.attr if isinstance(function, ast.Attribute) else getattr(
        function, "id", None)


def _call_arguments(call, assigned: dict, depth: int = 0) -> dict:
    """The keyword arguments of an AST call whose values `_example_value` reads."""
    import ast

    arguments = {}
    for keyword in call.keywords:
        if keyword.arg is None:  # **name, a dict the example assigns
            value = _example_value(keyword.value, assigned, depth)
            arguments.update(value if isinstance(value, dict) else {})
        elif (value := _example_value(keyword.value, assigned, depth)) is not _UNREAD:
            arguments[keyword.arg] = value
    return arguments


_UNREAD = object()


def _example_value(node, assigned: dict, depth: int):
    """A literal's value; for a variable, what the example assigns it, read so; a keras-hub
    class called with arguments read so, built; else _UNREAD."""
    import ast

    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        pass
    if isinstance(node, ast.Name) and node.id in assigned and depth < 3:
        return _example_value(assigned[node.id], assigned, depth + 1)
    if isinstance(node, ast.Call) and not node.args and (
            cls := _hub_class(_called_name(node) or "")) is not None:
        try:
            return cls(**_call_arguments(node, assigned, depth + 1))
        except Exception:  # noqa: BLE001 - the example's part does not build here
            return _UNREAD
    return _UNREAD


def _iterates_an_int(error: Exception) -> bool:
    """Whether the constructor failed iterating an int it was given (a docstring's type wrong)."""
    return isinstance(error, TypeError) and "'int' object is not iterable" in str(error)


def example_arguments(cls) -> dict:
    """The arguments of `cls` that an example in its docstring gives as Python literals
    (`"stackwise_block_types": [["er"], ["uir", "uir"]],` or `num_layers=2,`); {} where none."""
    import ast

    doc = inspect.getdoc(cls) or ""
    found = {}
    for name in inspect.signature(cls.__init__).parameters:
        start = re.search(rf"(?:[\"']{re.escape(name)}[\"']\s*:|\b{re.escape(name)}\s*=)\s*", doc)
        if not start:
            continue
        text, depth, end = doc[start.end():], 0, None
        for i, char in enumerate(text):
            depth += char in "([{"
            depth -= char in ")]}"
            if depth < 0 or depth == 0 and char in ",\n":
                end = i
                break
        try:
            found[name] = ast.literal_eval(text[:end].strip())
        except (ValueError, SyntaxError):
            continue
    return found


# The last fill level: as 1 for the class itself, and its sub-models built with their optional
# switches (an argument defaulting to None that the docstring calls optional) given too.
_PARTS = 3

# Arguments no rule gives: `self`, and Keras's own `dtype` (the layer's dtype policy: None is the
# float32 policy the counts are made in; its docstring offers "bfloat16", and a try given a
# half-precision policy built SAM3 at a precision no other row has).
_KERAS_OWN = frozenset({"self", "dtype"})


def small_config(cls, depth: int = 0, fill_open: int = 0, stages: int = STAGES,
                 shrink_defaults: bool = True, typed: bool = True,
                 optional: bool = False) -> dict:
    """The constructor's arguments small: those `SMALL` names (without a default or with a
    numeric one: a size, a count), a sub-model argument (an encoder, a backbone) as the class
    its docstring names, built by this same rule (`sub_model`), every other one without a
    default (with `fill_open` 1, or defaulting to None; 2, or to an open shape) as its name and
    its docstring entry say (`required_value`), `stages` entries where it is per stage, and
    (with `shrink_defaults`) every integer default that sizes a width, heads or a depth no
    larger than its small value (`smaller_default`); an image size and the feature maps'
    strides as the image sub-model built before them makes them (`fitted_to_part`). The
    backbone is otherwise as its library builds it. `typed=False`: an argument whose name reads per stage is a per-stage list though
    its docstring types it an int (Depth Anything's `neck_hidden_dims`, which the code iterates).
    `optional`: an argument defaulting to None is given though its docstring calls it optional
    (a sub-model's switch its composite reads); `fill_open` _PARTS: as 1, the sub-models built
    so."""
    parameters = inspect.signature(cls.__init__).parameters
    # The stacks of one backbone share a shape: an undocumented `stackwise_*` nests as deep as
    # the documented ones.
    stack_nesting = max((documented_nesting(documented(cls, name)) or 0
                         for name in parameters if name.startswith("stackwise_")), default=0)
    config = {}
    geometry = (None, [])  # an image sub-model's side and strides, once one is built
    for name, parameter in parameters.items():
        if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY) or (
                name in _KERAS_OWN):
            continue
        default, doc = parameter.default, documented(cls, name)
        if not typed and documented_nesting(doc) == 0 and _PER_STAGE.match(name.lower()):
            doc = ""
        if name.startswith("stackwise_") and documented_nesting(doc) is None:
            doc = ("list of " * stack_nesting) + doc
        # What the docstring calls optional is left out.
        required = default is inspect.Parameter.empty or (optional or not re.search(
            r"\boptional\b", doc.lower())) and (fill_open and default is None or fill_open == 2
                                                and isinstance(default, tuple) and None in default)
        if name in SMALL and (required or isinstance(default, int)):
            config[name] = fitted_to_part(
                name, [SMALL[name]] * stages if documented_nesting(doc) == 1 else SMALL[name],
                *geometry)
        elif required and depth < 2 and (part := sub_model(cls, name)) is not None:
            config[name] = build_small(part, depth + 1, stages, fill_open == _PARTS)[0]
            # what the composite gives per feature map, it gives for each the sub-model makes
            stages = len(getattr(config[name], "pyramid_outputs", None) or ()) or stages
            geometry = image_geometry(config[name])
        elif required and (value := required_value(name, doc, stages)) is not None:
            config[name] = fitted_to_part(name, value, *geometry)
        elif shrink_defaults and smaller_default(name, default) not in (None, default):
            config[name] = smaller_default(name, default)
    return config


_IMAGE_SIDE = re.compile(r".*image_size$")  # the side of the image a composite is laid out for
_FEATURE_STRIDES = re.compile(r".*(feat|feature)_strides$")  # its feature maps' strides


def fitted_to_part(name: str, value, side: int | None, strides: list[int]):
    """A composite's argument as its image sub-model makes it (`image_geometry`): an image size
    (D-FINE's `anchor_image_size`: every int of it) is the side that sub-model declares, and
    the strides of the feature maps it reads (`feat_strides`: n of them) are the n largest of
    the sub-model's maps, as a pyramid is read from its deepest level: anchors laid out
    so fit the maps the composite is given. `value` where the sub-model fixes neither."""
    if side and _IMAGE_SIDE.match(name.lower()):
        return [side] * len(value) if isinstance(value, (list, tuple)) else side
    if strides and _FEATURE_STRIDES.match(name.lower()) and isinstance(value, list) and (
            len(strides) >= len(value)):
        return sorted(strides)[len(strides) - len(value):]
    return value


def image_geometry(model) -> tuple[int | None, list[int]]:
    """(the height of the image input a sub-model declares, None where open or none; the
    stride of each image feature map it gives, input height // map height, an open input taken
    at IMAGE); (None, []) for a sub-model of no one image input."""
    inputs = getattr(model, "inputs", None) or []
    if len(inputs) != 1 or len(inputs[0].shape) != 4:
        return None, []
    import keras

    height = 2 if getattr(model, "data_format", None) == "channels_first" else 1
    declared = tuple(inputs[0].shape)
    shape = (1, *(IMAGE if d is None else d for d in declared[1:]))
    try:
        maps = keras.tree.flatten(model.compute_output_spec(keras.KerasTensor(shape)))
    except Exception:  # noqa: BLE001 - a sub-model that cannot say its outputs fixes no strides
        maps = []
    return declared[height], [shape[height] // m.shape[height] for m in maps
                              if len(m.shape) == 4 and m.shape[height]]


def documented(cls, name: str) -> str:
    """The entry of argument `name` in the Args of `cls`'s docstring (or a base's), one line;
    '' where none documents it."""
    for klass in cls.__mro__:
        entry = re.search(rf"^(\s*){re.escape(name)}( \([^)]*\))?:(.*(?:\n(?!\1\S).*)*)",
                          inspect.getdoc(klass) or "", re.M)
        if entry:
            return " ".join(entry.group(3).split())
    return ""


_NAMED_CLASS = re.compile(r"keras_hub\.(?:models|layers)\.(\w+)")
_CLASS_WORD = re.compile(r"\b([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)\b")  # ResNet50, BLIP2CustomOPT


def sub_model(cls, name: str):
    """The keras-hub class a sub-model argument is built as: the one its docstring entry names
    (`keras_hub.models.ResNetBackbone`, `BLIP2CustomOPT`, or a family: "e.g., ResNet50" is
    `ResNetBackbone`), else the one an example in the docstrings of its family's classes
    assigns to it (`image_encoder = keras_hub.models.ViTDetBackbone(`, PARSeq's task's
    `image_encoder = ViTBackbone(`), else the class named by the backbone's family and the
    argument (CLIP's `vision_encoder`: `CLIPVisionEncoder`); None for an argument that is no
    sub-model."""
    if not re.match(r".*(encoder|decoder|backbone|model|qformer|vae|clip_\w|^t5)$", name):
        return None
    entry = documented(cls, name)
    for word in [*_NAMED_CLASS.findall(entry), *_CLASS_WORD.findall(entry)]:
        for class_name in (word, word + "Backbone", re.sub(r"\d+$", "", word) + "Backbone"):
            if (named := _hub_class(class_name, cls)) is not None:
                return named
    assigned = re.compile(rf"\b{re.escape(name)} = (?:keras_hub\.(?:models|layers)\.)?(\w+)\(")
    for doc in map(inspect.getdoc, _family_classes(cls)):
        example = assigned.search(doc or "")
        if example and (named := _hub_class(example.group(1), cls)) is not None:
            return named
    family = cls.__name__.removesuffix("Backbone")
    return _hub_class(family + "".join(word.capitalize() for word in name.split("_")), cls)


def _hub_class(class_name: str, besides=None):
    """The keras-hub model or layer class of that name (exported, in a module of the library
    already imported, or a backbone in its family's module as keras-hub lays them out: SD3's
    `VAEBackbone` in `models/vae/vae_backbone.py`), not `besides` nor a base class; None where
    none."""
    import importlib
    import sys

    import keras_hub

    if class_name in ("Backbone", "Model"):
        return None
    family = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", class_name.removesuffix("Backbone")).lower()
    with contextlib.suppress(ImportError):
        importlib.import_module(f"keras_hub.src.models.{family}.{family}_backbone")
    modules = [keras_hub.models, keras_hub.layers, *(
        module for module_name, module in list(sys.modules.items())
        if module_name.startswith("keras_hub.src.models."))]
    for module in modules:
        candidate = getattr(module, class_name, None)
        if inspect.isclass(candidate) and candidate is not besides and hasattr(
                candidate, "get_config"):
            return candidate
    return None


def _family_classes(cls) -> list:
    """`cls`, then every class defined in the modules of its package (its task, its
    preprocessor: where its family's examples are written)."""
    import importlib
    import pkgutil

    package = cls.__module__.rpartition(".")[0]
    classes = [cls]
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        try:
            module = importlib.import_module(f"{package}.{info.name}")
        except Exception:  # noqa: BLE001 - a module that does not import holds no example
            continue
        classes += [value for value in vars(module).values() if inspect.isclass(value)
                    and value.__module__ == module.__name__ and value is not cls]
    return classes


# What an argument without a default holds, read from its name (its last words, lowercased): the
# first pattern that matches gives the value of one item. A sub-model (an encoder, a backbone)
# has none: such a backbone is composed by its user and is not built.
_KV_HEADS = re.compile(r".*(key_value_heads|kv_heads)$")
_HEADS = re.compile(r".*heads?$")
_HEAD_DIMS = re.compile(r".*(head_size|head_dims?|key_dims?|value_dims?)$")
_FFN = re.compile(r".*(intermediate_(dim|size)|ffn_dim|mlp_dim)$")
_DEPTHS = re.compile(r".*(num_layers|layers_(enc|dec)|_layers|depths?|blocks|repeats|num_inputs)$")
_WIDTHS = re.compile(r".*(dim|dims|size|sizes|filter|filters|channels|_input)$")
_ITEM_VALUES = (
    (re.compile(r".*(image|input)_shape$"), (IMAGE, IMAGE, 3)),
    (re.compile(r".*vocab(ulary)?_size.*"), SMALL["vocabulary_size"]),
    (_KV_HEADS, SMALL["num_key_value_heads"]),
    (_HEADS, SMALL["num_heads"]),
    (_HEAD_DIMS, SMALL["head_dim"]),
    (_FFN, SMALL["intermediate_dim"]),
    (_DEPTHS, 2),
    (re.compile(r".*(kernel_sizes?|patch_sizes)$"), 3),  # per-stage patches overlap: kernels
    (re.compile(r".*(roi|pool)_size$"), 3),  # a region's pooled side, a kernel's (not a width)
    (re.compile(r".*strides?$"), 2),
    (re.compile(r".*(se_ratio|squeeze_and_excite_ratios|se_ratios)$"), 0.25),
    (re.compile(r".*(ratios?|expansion|factors?|multiplier|coefficients|rates|upsampling_size)$"),
     1),
    (_WIDTHS, SMALL["hidden_dim"]),
    (re.compile(r".*rank$"), SMALL["head_dim"]),
    (re.compile(r".*layer_types$"), "full_attention"),  # transformers' name for global attention
    (re.compile(r".*(dropout|dropout_rate|drop_path_rate)$"), 0.0),
    (re.compile(r".*initializer_range$"), 0.02),
    (re.compile(r".*tokens$"), 4),  # a count of learned tokens (queries)
    (re.compile(r".*frequency$"), 1),  # every layer
    (re.compile(r".*epsilon$"), 1e-6),
    (re.compile(r".*theta$"), 10000.0),
    (re.compile(r".*(max_position_embeddings|position_size|max_label_length)$"),
     SMALL["max_sequence_length"]),
    (re.compile(r".*(window|num_frames)$"), SMALL["window_size"]),
    (re.compile(r".*(act|activation|act_layers)$"), "relu"),
    (re.compile(r".*padding$"), "same"),
    (re.compile(r".*(enabled_list)$"), True),
    (re.compile(r".*((^|_)use_|^apply_|_bias$|_norm$|residual$|^learn_|pooling$).*"), False),
    (re.compile(r".*(token_id|index|indexes|indices|idx)$"), 0),
    (re.compile(r".*(num_classes|num_labels)$"), 2),
    (re.compile(r"^(num|n)_\w+$|.*_n_\w+$"), 2),  # any other count
)
# What a size-like argument sizes: a width, a count of heads, a head's size, an FFN's width, a
# depth. A library default of one of these is made small too (`smaller_default`).
_SIZE_LIKE = (_KV_HEADS, _HEADS, _HEAD_DIMS, _FFN, _DEPTHS, _WIDTHS)


def smaller_default(name: str, default) -> int | None:
    """min(`default`, the small value of its kind) for an integer library default of an argument
    whose name reads as a width, a head count, a head's size, an FFN's width or a depth (Qwen3.5's
    `linear_num_value_heads=32`, `linear_key_head_dim=128` → 4, 16); None for any other argument.
    Never larger than the default: a size the library keeps small stays."""
    key = name.lower()
    if not isinstance(default, int) or isinstance(default, bool) or _NOT_A_WIDTH.match(key):
        return None
    pattern, small = next(((p, v) for p, v in _ITEM_VALUES if p.match(key)), (None, None))
    return min(default, small) if pattern in _SIZE_LIKE else None


_PER_STAGE = re.compile(r"^(stackwise|layerwise)_|.*(sizes|dims|depths|strides|rates|factors|"
                        r"indices|filters|channels|list|types|pooling)$")


def required_value(name: str, doc: str = "", stages: int = STAGES):
    """What a required argument named `name` holds in a small backbone: one item by its name
    (or, for a choice, the first its docstring entry `doc` offers; for a number, the one `doc`
    gives as an example), nested as `doc`'s type says ('list of list of ints': one list per
    stage of one item each) or, where `doc` says nothing, `stages` items where the name is per
    stage (`stackwise_*`, a plural of a size); None where neither says (a sub-model)."""
    key = name.lower()
    if fields := documented_tuple(doc):
        return [tuple(required_value(field, "int", stages) for field in fields)] * stages
    item = next((value for pattern, value in _ITEM_VALUES if pattern.match(key)), None)
    if item is None or isinstance(item, bool) and documented_choice(doc) is not None:
        item = documented_choice(doc)  # a name read as a switch the docstring types as a choice
    if item is None:
        return None
    if isinstance(item, tuple):  # a shape is one item
        return item
    if item == "same" and re.match(r"(list of )*ints?\b", doc.lower()):
        item = 1  # padding given as a number: what keeps a 3-wide kernel's size
    nesting = documented_nesting(doc)
    per_stage = nesting > 0 if nesting is not None else (
        bool(_PER_STAGE.match(key)) and not key.startswith("num_"))
    if not per_stage:
        return item
    if item == 2 and re.match(r".*strides?$", key):  # the first stage keeps its size
        values = [1] + [2] * (stages - 1)
    elif stages > STAGES and item == SMALL["hidden_dim"] and not re.match(r".*(input|stem)", key):
        # a pyramid: each stage twice as wide (a stem's layers are one stage)
        values = [item * 2**stage for stage in range(stages)]
    else:
        values = [1 if item == 2 and not re.match(r".*(kernel|size|dim).*", key) else item] * stages
    return [[value] for value in values] if nesting == 2 else values


def documented_nesting(doc: str) -> int | None:
    """How deep the list an argument holds is, read from its docstring type ('list of list of
    ints': 2, 'tuple of ints' or 'list[int]': 1, 'int' or 'int or list of ints': 0); None
    where no type is given."""
    words = doc.lower().removeprefix("a ").removeprefix("optional ")
    if re.match(r"(list|tuple) of (list|tuple)s? of|list\[list", words):
        return 2
    if re.match(r"(list|tuple)( of|\[|\b)", words):
        return 1
    if re.match(r"(int|str|float|bool|string)\b", words):
        return 0
    return None


def documented_tuple(doc: str) -> list[str]:
    """The fields of each tuple a 'list of tuples' argument holds, as its docstring entry names
    them ('(stage_in_channels, stage_mid_channels, ...)'); [] where it names none."""
    fields = re.match(r"list of tuples\b[^(]*\(((?:\w+, )+\w+)\)", doc.lower())
    return fields.group(1).split(", ") if fields else []


def documented_choice(doc: str):
    """The first value a string argument's docstring entry offers ('One of `"dark_block"`,
    ...', 'either 'v1', ...'), or the number an int's entry gives as an example ('(e.g., 3)');
    None where it offers none."""
    return next(iter(documented_choices(doc)), None)


def documented_choices(doc: str) -> list:
    """Every value a string argument's docstring entry offers, in order (or the one number an
    int's entry gives as an example); [] where it offers none."""
    words = doc.lower()
    if re.match(r"(a |optional )?int\b", words) and (example := re.search(
            r"e\.g\.,? (\d+)", words)):
        return [int(example.group(1))]
    if not re.match(r"(a |optional )?(str|string|list of (list of )?strings)\b", words) or not (
            re.search(r"\b(one of|either|options?|such as)\b", words)):
        return []
    for quote in ('"', "'", "`"):  # quoted values before named identifiers
        quoted = [v for v in re.findall(rf"{quote}([\w.-]+){quote}", doc) if v != "None"]
        if quoted:
            return list(dict.fromkeys(quoted))
    return []


# the transformers twin ------------------------------------------------------------------------

# What a config key means, read from its name on either side (keras-hub or transformers); the
# first that matches names it.
_MEANINGS = (
    ("kv_heads", re.compile(r".*(key_value_heads|kv_heads)$")),
    ("experts_per_token", re.compile(r".*(experts_per_tok|top_k)$")),
    ("experts", re.compile(r"^(num_|n_|num_local_)?experts$")),
    ("heads", re.compile(r".*(heads|n_head)$")),
    ("layers", re.compile(r".*(layers|n_layer)$")),
    ("shared_ffn", re.compile(r".*shared_expert_intermediate_(dim|size)$")),
    ("expert_ffn", re.compile(r".*moe_intermediate_(dim|size)$")),
    ("ffn", re.compile(r".*(intermediate_dim|intermediate_size|ffn_dim|d_ff|d_inner|n_inner|"
                       r"mlp_dim|ffn_hidden_size)$")),
    ("head_dim", re.compile(r".*(head_dim|d_kv|d_head|key_value_dim)$")),
    ("embedding", re.compile(r"^(embedding_dim|embedding_size|word_embed_proj_dim)$")),
    ("width", re.compile(r"^(hidden_dim|hidden_size|d_model|n_embd|dim)$")),
    ("vocabulary", re.compile(r"^(vocabulary_size|vocab_size)$")),
    ("positions", re.compile(r"^(max_sequence_length|max_position_embeddings|n_positions)$")),
)


def meaning(key: str) -> str | None:
    """What a config key sizes ('width', 'heads', 'layers', ...), read from its name."""
    return next((what for what, pattern in _MEANINGS if pattern.match(key.lower())), None)


def twin_config(backbone: str, config: dict):
    """The transformers config of `backbone`'s twin (`TWINS`) with each key that sizes what a key
    of `config` sizes set to that key's value (every depth to the depth, every width to the
    width, ...), then the twin's own switches; token ids outside the vocabulary (a default made
    for the full-size vocabulary) become 0."""
    from onnxflops.survey.sources import _transformers

    model_type, switches = TWINS[backbone] if isinstance(TWINS[backbone], tuple) else (
        TWINS[backbone], {})
    values = {meaning(k): v for k, v in config.items() if meaning(k)}
    if "head_dim" not in values and "width" in values and "heads" in values:
        values["head_dim"] = values["width"] // values["heads"]  # keras-hub's default
    if "kv_heads" not in values and "heads" in values:
        values["kv_heads"] = values["heads"]  # no key of its own: every head its keys and values
    twin = _transformers().AutoConfig.for_model(model_type)
    for key in list(vars(twin)):
        what = meaning(key)
        # a key of another kind that reads alike (Qwen3-MoE's `mlp_only_layers`, a list) is not
        # a size
        if what in values and not key.startswith("_") and isinstance(
                getattr(twin, key), (list, tuple, dict)) == isinstance(values[what], list):
            setattr(twin, key, values[what])
    if "width" in values and "embedding" not in values:
        for key in [k for k in vars(twin) if meaning(k) == "embedding"]:
            setattr(twin, key, values["width"])  # no embedding size of its own: the width
    for key, value in switches.items():
        setattr(twin, key, value(values) if callable(value) else value)
    vocabulary = getattr(twin, "vocab_size", None)
    for key in [k for k in vars(twin) if k.endswith("token_id")]:
        token = getattr(twin, key)
        if vocabulary and (token is None and key in ("pad_token_id", "mask_token_id")
                           or isinstance(token, int) and token >= vocabulary):
            setattr(twin, key, 0)
    return twin


def twin_flops_verdict(backbone: str, macs: int, twin_macs: int, flops: int,
                       twin_flops: int) -> tuple[str, str]:
    """(verdict, reason) of a pair's FLOPs: "agree"; "not the same math" where
    `TWIN_FLOPS_DIFFER` says which ops the networks do differently; else "differs". MACs that
    differ come first: "macs differ"."""
    if macs != twin_macs:
        return "macs differ", ""
    if flops == twin_flops:
        return "agree", ""
    if backbone in TWIN_FLOPS_DIFFER:
        return "not the same math", TWIN_FLOPS_DIFFER[backbone]
    return "differs", ""


def apart(function, *args):
    """`function(*args)` in a fresh process (under this one's memory cap, which it inherits):
    torch and TensorFlow do not fit one capped address space, and triton imported after
    TensorFlow segfaults."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(function, *args).result()


def twin_macs(backbone: str, config: dict, pooled: bool = True) -> int:
    """The MACs torch counts for the twin's base model at the survey's tokens."""
    from onnxflops.survey.oracle import torch_oracle

    model, inputs = twin_model(backbone, config, pooled)
    return torch_oracle(model, kwargs=inputs)[0]


def twin_model(backbone: str, config: dict, pooled: bool = True):
    """The twin's base model, built from `config` mapped by `twin_config`, and its inputs at the
    survey's tokens; without a pooler where the keras-hub backbone has no pooled output."""
    from onnxflops.survey.sources import _transformers, _transformers_inputs

    twin = twin_config(backbone, config)
    auto = _transformers().AutoModel
    model = auto.from_config(twin, **pooler_switch(auto._model_mapping[type(twin)], pooled))
    return model, with_padding_masks(model, _transformers_inputs(model, twin))


def with_padding_masks(model, inputs: dict) -> dict:
    """`inputs` with a padding mask beside each token sequence the twin's forward takes one for
    (`attention_mask` for `input_ids`, `decoder_attention_mask` for `decoder_input_ids`), its
    last token padding: the keras-hub backbone always applies the padding masks it is given,
    whatever they hold, while HF's T5 and Gemma-3 skip the mask's work where none is given or
    where it pads nothing (a path taken on the mask's values as the forward is traced)."""
    import inspect

    import torch

    takes = inspect.signature(model.forward).parameters
    masked = dict(inputs)
    for tokens, mask in (("input_ids", "attention_mask"),
                         ("decoder_input_ids", "decoder_attention_mask")):
        if tokens in inputs and mask in takes and mask not in inputs:
            masked[mask] = torch.ones_like(inputs[tokens])
            masked[mask][:, -1] = 0
    return masked


def pooler_switch(base, pooled: bool) -> dict:
    """What the twin's base class `base` is built with: `add_pooling_layer=False` where the
    keras-hub backbone has no pooled output and the class takes that switch, else nothing (a
    class without one has no pooler, or always one)."""
    takes_it = "add_pooling_layer" in inspect.signature(base.__init__).parameters
    return {"add_pooling_layer": False} if takes_it and not pooled else {}
