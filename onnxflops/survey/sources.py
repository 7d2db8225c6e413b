"""The torch sources of a survey (torchvision, timm, transformers), a user's own factory specs,
folders of .onnx files, and what every source's rows are made of (`Source`, `Task`, `Subject`).

A `Source` names its models without building any, and builds one by name, in the process that
counts it; frameworks are imported only then. The table of every source, Keras's too, is
`survey.registries.SOURCES`: it imports this module and `survey.keras`, which builds on this one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from onnxflops.errors import OnnxFlopsError

TOKENS = 16  # the sequence length text models are surveyed at
IMAGE = 224
FRAMES = 16


@dataclass
class Subject:
    """A built model and how it is called: `model(*args, **kwargs)`."""

    model: object  # a torch nn.Module, a keras.Model, or an .onnx path
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    unread: tuple[str, ...] = ()  # parts of parameter names the forward never reads
    # Other kwargs to call it with, in order, where its forward fails on `kwargs` (measure's
    # oracle tries them then, so a model that runs on `kwargs` runs once before the count).
    variants: tuple[dict, ...] = ()
    twin: tuple | None = None  # (label, a function of nothing giving its MACs): the same network


@dataclass(frozen=True)
class Source:
    """`names(argument)`: every model's name; `build(task)`: one built on the CPU.

    `argument` is what follows the source in a SOURCE spec that is not a pattern: a folder, a
    factory spec (empty for a registry).
    """

    names: Callable[[str], list[str]]
    build: Callable[["Task"], Subject]


@dataclass(frozen=True)
class Task:
    """One row to make: the model `name` of source `source` (`argument` as Source says)."""

    source: str
    argument: str
    name: str
    shapes: tuple = ()  # (input name, dims) pairs, for sources that do not know their inputs
    llm: bool = False  # a serving row (survey.llm), of a transformers causal-LM type

    @property
    def label(self) -> str:
        return self.name if self.source in ("onnx", "factory") else f"{self.source}:{self.name}"


# torchvision ---------------------------------------------------------------------------------

def _torchvision_importable() -> None:
    """The converters' workaround for a torchvision built for another torch, where this version of
    them has one (timm and transformers import torchvision too)."""
    from onnxflops.converters import common

    getattr(common, "torchvision_importable", lambda: None)()


_TORCHVISION_KINDS = ("", "detection", "segmentation", "video", "optical_flow")


def _torchvision():
    _torchvision_importable()
    import torchvision

    return torchvision


def _torchvision_kind(name: str) -> str:
    tv = _torchvision()
    for kind in _TORCHVISION_KINDS:
        module = getattr(tv.models, kind) if kind else tv.models
        if name in tv.models.list_models(module=module):
            return kind
    raise OnnxFlopsError(f"torchvision has no model '{name}'")


def _torchvision_names(_argument: str) -> list[str]:
    tv = _torchvision()
    return [name for kind in _TORCHVISION_KINDS
            for name in tv.models.list_models(module=getattr(tv.models, kind) if kind else tv.models)]


def seeded_weights() -> None:
    """The weights a torch builder draws next, the same in every run: a row whose work depends on
    them (a detector's boxes, a router's experts, a duration predictor's frames) reruns alike."""
    import torch

    torch.manual_seed(0)


def _torchvision_build(task: Task) -> Subject:
    seeded_weights()
    name = task.name
    kind = _torchvision_kind(name)
    # Nothing downloaded: a detector's or segmenter's backbone is random too.
    backbone = {"weights_backbone": None} if kind in ("detection", "segmentation") else {}
    model = _torchvision().models.get_model(name, weights=None, **backbone)
    if kind == "detection":  # a list of images, each at its own size
        return Subject(model, ([_image(3, IMAGE, IMAGE)],))
    if kind == "optical_flow":  # two frames, sides divisible by 8
        return Subject(model, (_image(1, 3, 128, 128), _image(1, 3, 128, 128)))
    if kind == "video":  # the crop its weights were trained at (MViT takes no other)
        side = _torchvision_crop(name) or 112
        return Subject(model, (_image(1, 3, FRAMES, side, side),))
    return Subject(model, (_image(1, 3, IMAGE, IMAGE),))


def _torchvision_crop(name: str) -> int | None:
    try:
        weights = _torchvision().models.get_model_weights(name)
        crop = list(weights)[0].transforms().crop_size
    except Exception:  # noqa: BLE001 - a builder without weights: the default size
        return None
    return int(crop[0] if isinstance(crop, (list, tuple)) else crop)


# timm ----------------------------------------------------------------------------------------

def _timm():
    _torchvision_importable()
    import timm

    return timm


def _timm_names(_argument: str) -> list[str]:
    return list(_timm().list_models())


def _timm_build(task: Task) -> Subject:
    seeded_weights()
    model = _timm().create_model(task.name, pretrained=False)
    config = getattr(model, "pretrained_cfg", None) or getattr(model, "default_cfg", {}) or {}
    return Subject(model, (_image(1, *config.get("input_size", (3, IMAGE, IMAGE))),))


# transformers ---------------------------------------------------------------------------------

def _transformers():
    from onnxflops.converters.common import import_transformers

    transformers = import_transformers()
    transformers.logging.set_verbosity_error()
    return transformers


def _transformers_names(_argument: str) -> list[str]:
    _transformers()
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    return sorted(MODEL_MAPPING_NAMES)


def causal_lm_names() -> list[str]:
    """Every model type transformers has a causal-LM class for (the serving survey's rows)."""
    _transformers()
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    return sorted(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def _transformers_build(task: Task) -> Subject:
    from onnxflops.survey.shrink import shrink

    t = _transformers()
    config = shrink(t.AutoConfig.for_model(task.name))
    seeded_weights()
    model = t.AutoModel.from_config(config)
    inputs = _transformers_inputs(model, config)
    grid = _grid_argument(model, config, inputs)
    if grid:
        import inspect

        companions = grid_companions(inspect.signature(model.forward).parameters,
                                     getattr(config, "vision_config", None) or config, [])
        model = _with_fixed_grid(model, grid, inputs.pop(grid).tolist(),
                                 {name: inputs.pop(name).tolist() for name in companions})
    import torch

    with torch.random.fork_rng(devices=[]):  # a forward that draws noise draws as it did
        variants = (*input_variants(inputs), *documented_variants(model, config, inputs),
                    *modality_variants(model, config, inputs),
                    *processor_variants(model, config, inputs), *audio_variants(config, inputs),
                    *states_variants(model, config, inputs),
                    *feature_extractor_variants(model, config, inputs),
                    *pixel_variants(config, inputs), *mask_variants(model, config, inputs))
    if grid:
        variants += patch_variants(inputs, getattr(config, "vision_config", None) or config)
    inputs, variants = as_the_forward_names(model, config, inputs, variants)
    return Subject(model, kwargs=inputs, variants=variants)


def patch_variants(inputs: dict, vision) -> tuple[dict, ...]:
    """`inputs` of a tower given flattened patches (flattened_patches) with each patch as an
    image, channels × patch × patch (Kimi-K2.5's tower convolves its patches: (64, 3, 14, 14),
    not (64, 588)): tried where the forward fails."""
    patch = getattr(vision, "patch_size", None)
    return tuple({**inputs, name: value.reshape(value.shape[0], -1, patch, patch)}
                 for name, value in inputs.items()
                 if _is_width(patch) and value.dim() == 2 and value.is_floating_point()
                 and value.shape[1] % (patch * patch) == 0)


def states_variants(model, config, inputs: dict) -> tuple[dict, ...]:
    """`inputs` with each states argument the rule gave (_required_states: the first width, TOKENS
    of them) at its other widths and layouts, and a main input that no rule names nor docstring
    shapes as states of each: tried where the forward fails."""
    import inspect

    takes = inspect.signature(model.forward).parameters
    documented = documented_arguments(model.forward)
    given = {k: v for k, v in inputs.items() if k not in _required_states(takes, documented, {})}
    variants = [{**inputs, name: states}
                for name in _required_states(takes, documented, given) if name in inputs
                for states in _states(config)[1:]]
    main = _main_input(model, takes)
    if main in takes and main in inputs and main not in _MODALITIES \
            and not _documented_dims(documented, main):
        # a main input no rule names and no docstring shapes (Perceiver's `inputs`), given as
        # token ids: as states too
        variants += [{**inputs, main: states} for states in _states(config)]
    return tuple(variants)


def documented_variants(model, config, inputs: dict) -> tuple[dict, ...]:
    """`inputs` with every tensor argument the forward's docstring documents without calling it
    *optional* (LXMERT's visual features and their positions, BROS's boxes), where the forward
    takes it with a default and fails without it: tried only where it fails on `inputs`."""
    import inspect

    takes = inspect.signature(model.forward).parameters
    documented = documented_arguments(model.forward)
    text = getattr(config, "get_text_config", lambda: config)()
    vocab = getattr(text, "vocab_size", None) or 100
    more = dict(inputs)
    for name, (kind, dims, optional) in documented.items():
        # optional, but sized by the config for it (the states a cross-attention reads), or
        # boxes (UDOP's, which its relative position bias needs)
        sized = dims and (any(_sized_for(name, d, config) for d in dims)
                          or ("box" in name and dims[-1] == "4" and all(
                              d in ("batch_size", "sequence_length") for d in dims[:-1])))
        if name in takes and name not in more and (not optional or sized) and dims \
                and "Tensor" in kind:
            more[name] = documented_input(name, documented, config, more, vocab)
    if len(more) == len(inputs):
        return ()
    # boxes documented as integers that a forward reads as floats (UDOP's mean): on 0-1 too
    floats = {k: v.float() / 1000 for k, v in more.items() if k not in inputs and "box" in k
              and not v.is_floating_point() and v.dim() and v.shape[-1] == 4}
    return (more, {**more, **floats}) if floats else (more,)


def processor_variants(model, config, inputs: dict) -> tuple[dict, ...]:
    """`inputs` with their pixels as the model's own image processor, then its video processor,
    makes them (transformers' classes for the model's type, or a type of its package: a vision
    tower's, built with their defaults, their patch and merge sizes the vision config's) from a
    random IMAGE × IMAGE image (8 frames of it for a video): patches and their positions,
    masks and grids, image pairs, prompts. Each output the forward takes is given by its name,
    or the name less `image_`/`video_` (`image_grid_thw`: `grid_thw`), or with `pixel_` for it
    (`image_position_ids`: `pixel_position_ids`). Tried only where the forward fails."""
    import inspect

    takes = inspect.signature(model.forward).parameters
    kept = {k: v for k, v in inputs.items() if not k.startswith("pixel_values")}
    variants = []
    for kind, processor in _processors(getattr(config, "model_type", "")):
        for pair in ((False, True) if kind == "images" else (False,)):
            variants += _processor_variant(kind, processor, pair, config, takes, kept)
    return tuple(v for i, v in enumerate(variants)
                 if not any(_same(v, w) for w in variants[:i]))


def feature_extractor_variants(model, config, inputs: dict) -> tuple[dict, ...]:
    """`inputs` with their audio as the model's own feature extractor makes it (transformers'
    class for the model's type or a type of its package, with its defaults) of one second of a
    random waveform at its sampling rate: features or a waveform and their masks, by the names
    the forward takes, its main output (input_features, input_values) as the model's main input
    and that output's mask as the main input's mask (Gemma 3n's `audio_mel`, `audio_mel_mask`).
    Tried only where the forward fails."""
    import inspect

    takes = inspect.signature(model.forward).parameters
    main = _main_input(model, takes)
    audio = ("input_features", "input_values", main)
    variants = []
    for extractor in _feature_extractors(getattr(config, "model_type", "")):
        try:
            made = _extracted(extractor)
        except Exception:  # noqa: BLE001 - an extractor that needs more than its defaults
            continue
        given = {}
        for name, value in made.items():
            if not hasattr(value, "shape"):
                continue
            for output in ("input_features", "input_values"):
                if name.startswith(output) and output not in takes and main in takes \
                        and main not in _MODALITIES and not main.endswith("ids"):
                    name = main + name[len(output):]  # the main input, and its mask
            if name in takes and not (name == "attention_mask" and "input_ids" in inputs):
                given[name] = value  # (an attention mask over samples, not over the text)
        if any(k in given for k in audio):
            kept = {k: v for k, v in inputs.items()
                    if not k.startswith(("input_features", "input_values", *given))}
            variants.append({**kept, **given})
    return tuple(v for i, v in enumerate(variants)
                 if not any(_same(v, w) for w in variants[:i]))


def _feature_extractors(model_type: str) -> list[str]:
    """The feature extractor classes transformers maps to `model_type` or a type of its
    package (`gemma3n_audio`: Gemma 3n's)."""
    from transformers.models.auto.configuration_auto import model_type_to_module_name
    from transformers.models.auto.feature_extraction_auto import FEATURE_EXTRACTOR_MAPPING_NAMES

    if not model_type:
        return []
    package = model_type_to_module_name(model_type)
    found = []
    for name in [model_type] + sorted(t for t in FEATURE_EXTRACTOR_MAPPING_NAMES
                                      if t != model_type
                                      and model_type_to_module_name(t) == package):
        chosen = FEATURE_EXTRACTOR_MAPPING_NAMES.get(name)
        if isinstance(chosen, str) and chosen not in found:
            found.append(chosen)
    return found


def _extracted(extractor: str) -> dict:
    """What feature extractor class `extractor`, with its defaults, makes of one second of a
    seeded random waveform at its sampling rate (16 kHz where it names none)."""
    import numpy as np

    made = getattr(_transformers(), extractor)()
    rate = getattr(made, "sampling_rate", None)
    rate = rate if _is_width(rate) else 16000
    waveform = np.random.RandomState(0).randn(rate).astype(np.float32)
    return dict(made(waveform, sampling_rate=rate, return_tensors="pt"))


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        getattr(a[k], "shape", a[k]) == getattr(b[k], "shape", b[k]) for k in a)


def _processor_variant(kind, processor, pair, config, takes, kept) -> list[dict]:
    """[the variant `processor` makes (processor_variants)], or [] where it fails or makes no
    pixels the forward takes; `pair`: given a pair of images, as a matcher's processor takes
    them (EfficientLoFTR, LightGlue: (batch, 2, channels, height, width))."""
    try:
        made = _processed(kind, processor, getattr(config, "vision_config", None) or config,
                          pair)
    except Exception:  # noqa: BLE001 - a processor that needs more than its defaults
        return []
    given = {}
    for name, value in made.items():
        bare = name.split("_", 1)[1] if name.startswith(("image_", "video_")) else name
        for candidate in (name, bare, f"pixel_{bare}"):
            if candidate in takes and candidate not in given and hasattr(value, "shape"):
                given[candidate] = value
                break
    return [{**kept, **given}] if any(k.startswith("pixel_values") for k in given) else []


def _processors(model_type: str) -> list[tuple[str, str]]:
    """("images" or "videos", class name) of each image and video processor transformers maps
    to `model_type` or to a type of its package (`siglip2_vision_model`: Siglip2's)."""
    from transformers.models.auto.configuration_auto import model_type_to_module_name
    from transformers.models.auto.image_processing_auto import IMAGE_PROCESSOR_MAPPING_NAMES
    from transformers.models.auto.video_processing_auto import VIDEO_PROCESSOR_MAPPING_NAMES

    if not model_type:
        return []
    package = model_type_to_module_name(model_type)
    found = []
    for kind, mapping in (("images", IMAGE_PROCESSOR_MAPPING_NAMES),
                          ("videos", VIDEO_PROCESSOR_MAPPING_NAMES)):
        types = [model_type] + sorted(t for t in mapping if t != model_type
                                      and model_type_to_module_name(t) == package)
        for name in types:
            classes = mapping.get(name) or {}
            if isinstance(classes, dict):
                chosen = classes.get("torchvision") or classes.get("pil")
            else:
                chosen = classes
            if chosen and (kind, chosen) not in found:
                found.append((kind, chosen))
    return found


def _processed(kind: str, processor: str, vision, pair: bool = False) -> dict:
    """What processor class `processor` makes of a random image (`kind` "images"; a `pair` of
    it) or 8 frames of it ("videos"; the processor's num_frames where it sets them), built with
    its defaults and the `vision` config's patch and merge sizes; every other image its
    preprocess takes (`prompt_images`) is the same image, every mask (`prompt_masks`) a map of
    two labels."""
    import numpy as np

    made = getattr(_transformers(), processor)()
    for key in ("patch_size", "temporal_patch_size", "merge_size"):
        if isinstance(getattr(made, key, None), int) and _is_width(getattr(vision, key, None)):
            setattr(made, key, getattr(vision, key))
    image = np.random.RandomState(0).randint(0, 256, (IMAGE, IMAGE, 3), dtype=np.uint8)
    if kind == "videos":
        frames = getattr(made, "num_frames", None)
        return dict(made(videos=[np.stack([image] * (frames if _is_width(frames) else 8))],
                         return_tensors="pt"))
    if pair:
        return dict(made(images=[[image, image]], return_tensors="pt"))
    import inspect

    # other images its preprocess takes beside the image (SegGPT's prompt image and its mask):
    # the same image, and a mask as a map of two labels
    others = {name: [image] if name.endswith("images") else [image[..., 0] % 2]
              for name in inspect.signature(getattr(made, "preprocess", made)).parameters
              if name != "images" and name.endswith(("images", "masks"))}
    return dict(made(images=[image], **others, return_tensors="pt"))


def _grid_argument(model, config, inputs: dict) -> str | None:
    """The grid argument among `inputs` of a tower given flattened patches (`flattened_patches`)."""
    import inspect

    patches = flattened_patches(inspect.signature(model.forward).parameters,
                                getattr(config, "vision_config", None) or config)
    return patches[2] if patches and patches[2] in inputs else None


def _with_fixed_grid(model, grid: str, rows: list, companions: dict | None = None):
    """`model` called with its image's grid fixed, as its preprocessor fixes it for an image of
    one size: the grid is a constant of the graph, not an input, so the positions and windows a
    forward computes from it have known shapes, as FlopCounterMode sees them; so are the
    `companions` (grid_companions: name → values) fixed beside it."""
    import torch

    constants = {grid: rows, **(companions or {})}

    class FixedGrid(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, **inputs):
            device = next(iter(inputs.values())).device
            return self.model(**inputs, **{name: torch.tensor(values, dtype=torch.int64,
                                                              device=device)
                                           for name, values in constants.items()})

    FixedGrid.__name__ = FixedGrid.__qualname__ = type(model).__name__  # messages name the model
    return FixedGrid()


def _transformers_inputs(model, config) -> dict:
    """Inputs by the model's main input (token ids, pixels, audio features or a waveform), with
    decoder tokens for an encoder-decoder and pixels for a model that also takes an image."""
    import inspect

    takes = inspect.signature(model.forward).parameters
    patches = flattened_patches(takes, getattr(config, "vision_config", None) or config)
    if patches:
        import torch

        pixels, shape, grid, rows = patches
        vision = getattr(config, "vision_config", None) or config
        return {pixels: _image(*shape), grid: torch.tensor(rows, dtype=torch.int64),
                **{name: torch.tensor(values, dtype=torch.int64)
                   for name, values in grid_companions(takes, vision, rows).items()}}
    main = _main_input(model, takes)
    documented = documented_arguments(model.forward)
    text = getattr(config, "get_text_config", lambda: config)()
    vocab = getattr(text, "vocab_size", None) or 100
    inputs = {}
    if main in ("input_features", "input_values"):
        inputs[main] = _audio(main, config)
    elif main == "latents" and _is_width(getattr(config, "hidden_size", None)):
        # a codec's decoder: TOKENS frames of latents as wide as its hidden size, channels first
        inputs[main] = _image(1, config.hidden_size, TOKENS)
    elif main == "inputs_embeds" and _is_width(getattr(config, "hidden_size", None)):
        # a head over another model's states (Nemotron's word timestamps): TOKENS of them
        inputs[main] = _image(1, TOKENS, config.hidden_size)
    elif main in documented and documented[main][1] and "Tensor" in documented[main][0] \
            and not main.endswith("ids") \
            and not any(t in documented[main][0] for t in ("Long", "Int", "Bool")):
        # a main input of floats no rule above names (a time series' past values), not ids
        # (which docstrings often type `torch.Tensor`): as the forward's docstring shapes it
        inputs[main] = documented_input(main, documented, config, inputs, vocab)
    elif not main.startswith("pixel_values"):
        inputs[main] = _ids(1, TOKENS, high=vocab)
    pixels = main if main.startswith("pixel_values") else "pixel_values"
    if pixels == main or ("pixel_values" in takes and hasattr(config, "vision_config")):
        inputs[pixels] = _pixels(config)
    if getattr(config, "is_encoder_decoder", False) and "decoder_input_ids" in takes:
        inputs["decoder_input_ids"] = _ids(1, TOKENS, high=vocab)
    for name in _required_token_ids(takes, inputs):
        inputs[name] = _ids(1, TOKENS, high=vocab)
    for name in _required_audio(takes, inputs):
        inputs[name] = _audio(name, config)
    hop = _hop(config)
    if hop and "input_features" in inputs and "input_values" in inputs \
            and inputs["input_values"].dim() == 2 and inputs["input_features"].dim() == 3:
        # a codec that reads a waveform and its features (XCodec2, NeuCodec): a frame a hop
        inputs["input_features"] = _image(1, inputs["input_features"].shape[1],
                                          inputs["input_values"].shape[-1] // hop)
    if "input_ids" in inputs and "pixel_values" in inputs:
        inputs["input_ids"] = _with_image_tokens(model, config, inputs, vocab)
    for name in [n for n, p in takes.items() if n not in inputs and p.default is p.empty
                 and n in documented and "Tensor" in documented[n][0] and documented[n][1]]:
        # an argument the forward requires that no rule above gives: as its docstring shapes it
        inputs[name] = documented_input(name, documented, config, inputs, vocab)
    for name in _required_states(takes, documented, inputs):
        if name != main_argument(model, inputs):
            inputs[name] = _states(config)[0]
    return inputs


def _required_states(takes, documented, given) -> list[str]:
    """The arguments the forward requires, beside those `given`, that are states or embeddings
    by their name (`hidden_states`, `action_embeds`) and whose shape no docstring gives."""
    return [name for name, parameter in takes.items() if name not in given
            and parameter.default is parameter.empty and name.endswith(("states", "embeds"))
            and not _documented_dims(documented, name)]


def _states(config) -> list:
    """States as wide as the config (or a sub-config) says its model is: TOKENS of them, then
    channels first (a codec's decoder reading latents), for each width the configs name."""
    widths, parts = [], [config]
    for part in parts:
        for key in ("hidden_size", "d_model"):
            value = getattr(part, key, None)
            if _is_width(value) and value not in widths:
                widths.append(value)
        parts += [v for v in vars(part).values() if hasattr(v, "to_dict")
                  and hasattr(v, "model_type") and all(v is not p for p in parts)]
    return [shaped for width in widths or [TOKENS]
            for shaped in (_image(1, TOKENS, width), _image(1, width, TOKENS))]


def main_argument(model, inputs: dict) -> str | None:
    """The argument the forward reads its main input as, where it takes no argument of the
    main input's name (`main_input_name`) but requires one that no docstring shapes and no rule
    gives (VibeVoice's tokenizer: its waveform as `hidden_states`); else None."""
    import inspect

    takes = inspect.signature(model.forward).parameters
    main = _main_input(model, takes)
    if main in takes or main not in inputs:
        return None
    documented = documented_arguments(model.forward)
    missing = [name for name, parameter in takes.items() if name not in inputs
               and parameter.default is parameter.empty
               and parameter.kind not in (parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL)
               and not _documented_dims(documented, name)]
    annotation = takes[missing[0]].annotation if len(missing) == 1 else None
    if annotation is not None and annotation is not inspect.Parameter.empty \
            and "Tensor" not in str(annotation):
        return None  # an object, not a tensor (a video tracker's inference session)
    return missing[0] if len(missing) == 1 else None


def as_the_forward_names(model, config, inputs: dict, variants: tuple) -> tuple[dict, tuple]:
    """`inputs` and their `variants` with the main input under the argument the forward reads
    it as (main_argument), followed by variants giving that argument (or any other states it
    requires) as states of each width and layout (_states) instead."""
    import inspect

    main = _main_input(model, inspect.signature(model.forward).parameters)
    argument = main_argument(model, inputs)
    if argument is None:
        return inputs, variants

    def renamed(given):
        return {argument if k == main else k: v for k, v in given.items()}

    inputs, variants = renamed(inputs), tuple(renamed(v) for v in variants)
    if argument.endswith(("states", "embeds")):
        variants += tuple({**inputs, argument: states} for states in _states(config))
    return inputs, variants


# `name (`type` of shape `(dims)`, *optional*):` entries of a forward's docstring's Args
# (transformers also writes the shape in brackets, `[batch_size, config.block_size, dim]`, and
# with two spaces before "of shape")
_DOCUMENTED = re.compile(r"^\s*(\w+) \(['`]+([^'`]*)['`]+(?:\s+of shape\s+['`]*"
                         r"(?:\(([^)]*)\)|\[([^\]\n]*)\])['`]*)?([^\n]*)\):", re.M)


def documented_arguments(forward) -> dict[str, tuple[str, list[str] | None, bool]]:
    """Each argument the Args of `forward`'s docstring (transformers' own) documents: its type,
    its shape's dims as named there (None where it names no shape) and whether it says
    *optional*. `bbox (`torch.LongTensor` of shape `(batch_size, num_boxes, 4)`):` → bbox:
    ("torch.LongTensor", ["batch_size", "num_boxes", "4"], False)."""
    doc = (getattr(forward, "__doc__", None) or "").split("Returns:")[0]
    found = {}
    for name, kind, shape, bracketed, rest in _DOCUMENTED.findall(doc):
        shape = shape or bracketed
        dims = [d.strip() for d in shape.split(",") if d.strip()] if shape else None
        if dims and "{0}" in dims:  # auto_docstring's unfilled input shape placeholder
            at = dims.index("{0}")
            dims[at:at + 1] = ["batch_size", "sequence_length"]
        found.setdefault(name, (kind, dims, "optional" in rest))
    return found


def _documented_dims(documented: dict, name: str) -> list[str] | None:
    """The dims a forward's docstring shapes argument `name` with (documented_arguments), or None
    where it gives none or does not document the argument."""
    return (documented.get(name) or ("", None, True))[1]


def documented_input(name: str, documented: dict, config, given: dict, vocab: int):
    """Argument `name` as the forward's docstring shapes it (`documented_arguments`): each dim
    named as the inputs already `given` size it where their documented shapes name it too (a
    sequence as the config sizes one for the argument's first word: `task_inputs`,
    `task_seq_len`), else
    as the config (or a sub-config) sets a key of that name (LXMERT's `visual_feat_dim`,
    PatchTST's `num_input_channels`), else by what it is (a batch: 1; an image's side, channels
    and frames as the vision config says; a sequence: the config's `context_length` where it
    sets one, else TOKENS); a literal is itself. Values by what the name and type say: a mask
    is ones, a padding zeros (nothing padded), boxes (`bbox`, last dim 4) corners in order on
    a 0–1000 grid (a float type: 0–1), token ids below the vocabulary, other integers 0,
    floats normal."""
    import torch

    sizes = {}
    for other, tensor in given.items():
        dims = _documented_dims(documented, other)
        if dims and hasattr(tensor, "shape") and len(dims) == tensor.dim():
            sizes.update({d: n for d, n in zip(dims, tensor.shape) if d not in sizes})
    kind, dims, _ = documented[name]
    # a sequence the config sizes for this argument (OneFormer's task_inputs: task_seq_len)
    own = _first_set(config, tuple(name.split("_")[0] + suffix
                                   for suffix in ("_seq_len", "_seq_length", "_sequence_length")))
    shape = [own if own and d in ("sequence_length", "seq_length") and d not in sizes
             else _sized_for(name, d, config) or _documented_dim(d, config, sizes) for d in dims]
    of = given.get(name[:-len("_mask")]) if name.endswith("_mask") else None
    if hasattr(of, "dim") and of.dim() > 2 and len(dims) == of.dim() - 1:
        # a mask over an input given channels first (audio features as bins × frames, images
        # as channels × height × width): its positions, the input's shape less axis 1
        shape = [of.shape[0], *of.shape[2:]]
    integer = any(t in kind for t in ("Long", "Int", "Bool"))
    if name.endswith("mask"):
        return torch.ones(shape, dtype=torch.bool if "Bool" in kind else
                          torch.long if integer else torch.float32)
    if name.endswith("padding"):
        return torch.zeros(shape, dtype=torch.long if integer else torch.float32)
    if ("bbox" in name or "box" in name) and shape and shape[-1] == 4:
        # (start, end) × (x, y), sorted along the points: x0 ≤ x1, y0 ≤ y1
        boxes = _ids(*shape[:-1], 2, 2, high=1000).sort(dim=-2).values.reshape(shape)
        return boxes if integer else boxes.float() / 1000
    if integer:
        return _ids(*shape, high=vocab) if name.endswith("ids") \
            else torch.zeros(shape, dtype=torch.long)
    return _image(*shape)


def _sized_for(name: str, dim: str, config) -> int | None:
    """Dim `dim` of argument `name` as the config sizes it for that argument's first word (a
    Q-Former's `encoder_hidden_states`, `hidden_size`: its `encoder_hidden_size`), else None."""
    return _first_set(config, (f"{name.split('_')[0]}_{dim}",)) if dim.isidentifier() else None


def _documented_dim(dim: str, config, sizes: dict) -> int:
    """One dim a docstring names (documented_input): a name, or an expression of names, numbers
    and the config's keys (`config.block_size`, `dim * len(config.target_layer_ids)`,
    `num_tokens + config.block_size`), each name sized as below."""
    import ast

    try:
        tree = ast.parse(dim.strip(), mode="eval").body
    except SyntaxError:
        tree = None
    if tree is not None and not isinstance(tree, ast.Name):
        try:
            value = _dim_expression(tree, config, sizes)
        except (TypeError, ValueError, AttributeError, ZeroDivisionError):
            value = None
        if _is_width(value):
            return value
    if dim.isdigit():
        return int(dim)
    if dim in sizes:
        return int(sizes[dim])
    if dim in ("batch_size", "bs", "batch") or dim.startswith("num_images"):
        return 1
    if _first_set(config, (dim,)):
        return _first_set(config, (dim,))
    if dim in _WIDTH_NAMES:  # a width the docstring names generically (`dim`, `embed_dim`)
        return _first_set(config, ("hidden_size", "d_model", "embed_dim")) or TOKENS
    vision = getattr(config, "vision_config", None) or config
    side = getattr(vision, "image_size", IMAGE)
    sides = list(side) if isinstance(side, (list, tuple)) else [side, side]
    if dim in ("height", "image_size", "frame_size"):
        return sides[0]
    if dim == "width":
        return sides[-1]
    if dim == "num_channels":
        return getattr(vision, "num_channels", 3)
    if dim == "num_frames":
        return getattr(vision, "num_frames", None) or FRAMES
    return _first_set(config, ("context_length",)) or TOKENS


# names a docstring gives a model's width by, where its config names it otherwise
_WIDTH_NAMES = ("dim", "hidden_dim", "embed_dim", "embedding_dim", "d_model", "hidden_size",
                "model_dim")


def _dim_expression(node, config, sizes: dict):
    """The value of a docstring's dim expression (_documented_dim): + - * // / of its parts, a
    `config.key` (or `self.config.key`, a sub-config's key through its attribute), `len(...)`,
    numbers, and names as _documented_dim sizes them. Raises ValueError on anything else."""
    import ast
    import operator

    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        return _documented_dim(node.id, config, sizes)
    if isinstance(node, ast.Attribute):
        chain, part = [], node
        while isinstance(part, ast.Attribute):
            chain.insert(0, part.attr)
            part = part.value
        if not isinstance(part, ast.Name) or part.id not in ("config", "self"):
            raise ValueError(ast.dump(node))
        value = config
        for attr in chain[1:] if part.id == "self" and chain[:1] == ["config"] else chain:
            value = getattr(value, attr)
        return value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" \
            and len(node.args) == 1:
        return len(_dim_expression(node.args[0], config, sizes))
    operations = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
                  ast.FloorDiv: operator.floordiv, ast.Div: operator.floordiv}
    if isinstance(node, ast.BinOp) and type(node.op) in operations:
        return operations[type(node.op)](_dim_expression(node.left, config, sizes),
                                         _dim_expression(node.right, config, sizes))
    raise ValueError(ast.dump(node))


def _pixels(config, video: bool = False):
    """An image as the vision config (else the config) sizes it: channels × its image_size;
    frames before the channels for a video model (its num_frames; FRAMES for a `video` input
    of a config that names none)."""
    vision = getattr(config, "vision_config", None) or config
    side = getattr(vision, "image_size", IMAGE)
    side = side if isinstance(side, (list, tuple)) else (side, side)
    frames = getattr(vision, "num_frames", None) or (FRAMES if video else None)
    return _image(1, *([frames] if frames else []), getattr(vision, "num_channels", 3), *side)


def mask_variants(model, config, inputs: dict) -> tuple[dict, ...]:
    """`inputs` with the mask the forward's docstring documents over each of them, *optional*
    or not (`input_features_mask`: AudioFlamingo3's encoder sums it for its lengths): all ones,
    over the input's positions; tried where the forward fails."""
    import inspect

    takes = inspect.signature(model.forward).parameters
    documented = documented_arguments(model.forward)
    text = getattr(config, "get_text_config", lambda: config)()
    vocab = getattr(text, "vocab_size", None) or 100
    more = dict(inputs)
    for name in inputs:
        mask = f"{name}_mask"
        if mask in takes and mask not in more and (documented.get(mask) or ("", None))[1]:
            more[mask] = documented_input(mask, documented, config, more, vocab)
    return (more,) if len(more) > len(inputs) else ()


def pixel_variants(config, inputs: dict) -> tuple[dict, ...]:
    """`inputs` with a video main input given without frames (a config naming none) given
    FRAMES of them, then with their pixels at the side the config's timm architecture names
    (_timm_side; PE Video's 336), each where it differs: tried where the forward fails."""
    videos = {k: v for k, v in inputs.items()
              if k.startswith("pixel_values") and k.endswith("videos") and v.dim() == 4}
    framed = {**inputs, **{k: _image(v.shape[0], FRAMES, *v.shape[1:])
                           for k, v in videos.items()}}
    side = _timm_side(config)
    variants = [framed] if videos else []
    for given in (inputs, framed) if videos else (inputs,):
        pixels = {k: v for k, v in given.items() if k.startswith("pixel_values")
                  and v.dim() >= 4 and side and tuple(v.shape[-2:]) != (side, side)}
        if pixels:
            variants.append({**given, **{k: _image(*v.shape[:-2], side, side)
                                         for k, v in pixels.items()}})
    return tuple(variants)


def _timm_side(config) -> int | None:
    """The image side of the timm architecture a config (or a sub-config, breadth first) names
    for its vision tower (PE Video's `vit_pe_core_large_patch14_336`: 336), as timm's own
    pretrained config gives it; None where no config names one, or timm does not know it."""
    parts = [config]
    for part in parts:
        architecture = getattr(part, "architecture", None)
        if isinstance(architecture, str) and architecture:
            try:
                from timm.models import get_pretrained_cfg

                size = get_pretrained_cfg(architecture).input_size
            except Exception:  # noqa: BLE001 - timm missing, or an architecture it lacks
                return None
            return size[-1] if size and size[-1] == size[-2] else None
        parts += [v for v in vars(part).values() if hasattr(v, "to_dict")
                  and hasattr(v, "model_type") and all(v is not p for p in parts)]
    return None


# the inputs of each modality, by the names transformers' forwards give them
_MODALITIES = ("input_ids", "pixel_values", "pixel_values_videos", "input_features",
               "input_values")


def modality_variants(model, config, inputs: dict) -> tuple[dict, ...]:
    """`inputs` with every other modality the forward takes, optional in its signature, given
    as the rule gives it where it is the main input (a model of text and images that needs both:
    ViLT's pixels beside its text, Kosmos-2's and SAM 3's text beside their pixels, CLAP's
    audio): tried only where the forward fails on `inputs`."""
    import inspect

    takes = inspect.signature(model.forward).parameters
    text = getattr(config, "get_text_config", lambda: config)()
    vocab = getattr(text, "vocab_size", None) or 100
    more = dict(inputs)
    for name in _MODALITIES:
        if name in takes and name not in more:
            more[name] = (_ids(1, TOKENS, high=vocab) if name == "input_ids"
                          else _pixels(config, video=name.endswith("videos"))
                          if name.startswith("pixel_values") else _audio(name, config))
    if "input_ids" in more and "pixel_values" in more and "input_ids" not in inputs:
        more["input_ids"] = _with_image_tokens(model, config, more, vocab)
    return (more,) if len(more) > len(inputs) else ()


def _audio(name: str, config):
    """`input_features`: mel bins × frames; `input_values`: a waveform of 16,000 samples (with
    the channels a codec's config names), or spectrogram frames × mel bins where the config lays
    its positions for frames (the Audio Spectrogram Transformer)."""
    if name == "input_features":
        return _image(1, _mel_bins(config), _feature_frames(config))
    if _spectrogram_frames(config):
        return _image(1, _spectrogram_frames(config), config.num_mel_bins)
    channels = getattr(config, "audio_channels", None)
    return _image(1, *([channels] if channels else []), 16000)


def audio_variants(config, inputs: dict) -> tuple[dict, ...]:
    """`inputs` with audio as a config that says more about it reads it, tried where the
    forward fails: features of bins × the frames the config stacks (num_stacked_frames:
    FunASR's 7 of 80, 560 values a frame), either layout, a mask beside them over their frames
    kept; a waveform a whole number of the config's hop or patch sizes long (MuseSpark's
    patch_sizes [16, 6, 5, 4]: 1,920; 16,000 samples → 17,280)."""
    variants = []
    stacked = _first_set(config, ("num_stacked_frames", "stacked_frames"))
    features = inputs.get("input_features")
    if stacked and stacked > 1 and hasattr(features, "dim") and features.dim() == 3:
        wide = _image(1, features.shape[1] * stacked, features.shape[2])
        variants += [{**inputs, "input_features": wide},
                     {**inputs, "input_features": wide.transpose(1, 2).contiguous()}]
    waveform = inputs.get("input_values")
    hop = _hop(config) or _product(_first_list(config, "patch_sizes"))
    if hop and hasattr(waveform, "dim") and waveform.shape[-1] % hop:
        samples = -(-waveform.shape[-1] // hop) * hop
        longer = _image(*waveform.shape[:-1], samples)
        variants += [{**inputs, "input_values": longer}]
        if longer.dim() == 2:
            variants += [{**inputs, "input_values": longer.unsqueeze(1)}]
    return tuple(variants)


def _first_list(config, name: str) -> list[int] | None:
    """The first list of counts named `name` in `config` or its sub-configs, breadth first."""
    parts = [config]
    for part in parts:
        value = getattr(part, name, None)
        if isinstance(value, (list, tuple)) and value and all(_is_width(v) for v in value):
            return list(value)
        parts += [v for v in vars(part).values() if hasattr(v, "to_dict")
                  and hasattr(v, "model_type") and all(v is not p for p in parts)]
    return None


def _product(values) -> int | None:
    if not values:
        return None
    product = 1
    for value in values:
        product *= value
    return product


def _hop(config) -> int | None:
    """The samples of a waveform a frame of its features stands for: the config's (or a
    sub-config's) hop_length, else the product of its downsampling_ratios (XCodec2's
    [2, 2, 4, 4, 5]: 320); None where it names neither."""
    return _first_set(config, ("hop_length",)) \
        or _product(_first_list(config, "downsampling_ratios"))


def _required_audio(takes, given) -> list[str]:
    """The audio arguments (input_values, input_features) the forward requires, having no
    default, beside those `given`: a codec that reads its waveform and its features (XCodec2),
    a model of text and audio (PE Audio) whose main input is its text."""
    return [name for name, parameter in takes.items() if name in ("input_values", "input_features")
            and parameter.default is parameter.empty and name not in given]


def _required_token_ids(takes, given) -> list[str]:
    """The token-id arguments (input_ids, qformer_input_ids) the forward requires, having no
    default, beside those `given`: a detector prompted by text (Grounding DINO) or a Q-Former's
    VLM (BLIP-2) needs its text as well as its pixels."""
    return [name for name, parameter in takes.items() if name.endswith("input_ids")
            and parameter.default is parameter.empty and name not in given]


def flattened_patches(takes, vision, merged_side: int = 4):
    """`pixels: (t·h·w, channels·temporal_patch·patch²)`, `grid: [[t, h, w]]` with t = 1 and
    h = w = `merged_side`·spatial_merge: the inputs of a Qwen2-VL-like vision tower, whose forward
    takes its image as flattened patches and needs a grid argument (`grid_thw`, `image_grid_thw`).

    Returns (pixels name, pixels shape, grid name, grid rows), or None for a forward without a
    grid argument it needs, one that takes text (a whole VLM) or a config without a patch size.
    `takes`: the forward's signature's parameters."""
    grid = next((name for name, parameter in takes.items()
                 if "grid" in name and parameter.default is parameter.empty), None)
    pixels = next((name for name in takes
                   if name.startswith("pixel_values") or name == "hidden_states"), None)
    patch = getattr(vision, "patch_size", None)
    if grid is None or pixels is None or "input_ids" in takes or not isinstance(patch, int):
        return None
    temporal = _first_int(vision, ("temporal_patch_size", "patch_temporal"), 1)
    channels = _first_int(vision, ("in_channels", "num_channels"), 3)
    merge = _first_int(vision, ("spatial_merge_size", "merge_size", "merge_kernel_size"), 1)
    side = merged_side * merge
    return pixels, (side * side, channels * temporal * patch * patch), grid, [[1, side, side]]


def grid_companions(takes, vision, rows: list) -> dict[str, list[int]]:
    """The other per-image arguments a tower given flattened patches requires beside its grid:
    `merge_sizes` (VideoLLaMA 3), the merge the patches were laid out for, one per grid row."""
    merge = _first_int(vision, ("spatial_merge_size", "merge_size", "merge_kernel_size"), 1)
    return {name: [merge] * len(rows) for name, parameter in takes.items()
            if "merge_size" in name and parameter.default is parameter.empty}


def _first_int(config, names: tuple[str, ...], default: int) -> int:
    """The first of `names` that `config` sets, as an int (a square kernel's side for a pair)."""
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, (list, tuple)) and value and len(set(value)) == 1:
            value = value[0]
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return default


def _mel_bins(config) -> int:
    """The mel bins of a model's audio features: its config's feature_projection_input_dim (the
    features as its projection reads them: W2V-BERT's 2 stacked frames of 80, 160), num_mel_bins
    or feature_size, else the first set in its sub-configs (an ASR model's encoder_config:
    Canary's 128; the 80 of a config that names none met a projection of 8 · 128 inputs), else
    80."""
    return _first_set(config, ("feature_projection_input_dim", "num_mel_bins",
                               "feature_size")) or 80


def _feature_frames(config) -> int:
    """2 · max_source_positions frames (100 where unset; Whisper's 3000), rounded up to a whole
    number of the subsampling_factor the config or a sub-config sets (Nemotron's 8 refuses 100
    frames: "must be a multiple of `subsampling_factor`")."""
    frames = 2 * getattr(config, "max_source_positions", 50)
    factor = _first_set(config, ("subsampling_factor",)) or 1
    return -(-frames // factor) * factor


def _is_width(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _first_set(config, names: tuple[str, ...]) -> int | None:
    """The first of `names` set to a count in `config`, else in its sub-configs, breadth first."""
    parts = [config]
    for part in parts:
        for name in names:
            if _is_width(getattr(part, name, None)):
                return getattr(part, name)
        parts += [v for v in vars(part).values() if hasattr(v, "to_dict")
                  and hasattr(v, "model_type") and all(v is not p for p in parts)]
    return None


def _spectrogram_frames(config) -> int | None:
    """The frames of a model whose `input_values` are a spectrogram (its config names mel bins
    and the frames its patch positions are laid for: the Audio Spectrogram Transformer), not a
    waveform."""
    frames = getattr(config, "max_length", None)
    bins = getattr(config, "num_mel_bins", None)
    return frames if isinstance(frames, int) and isinstance(bins, int) and frames > 0 < bins \
        else None


def _main_input(model, takes) -> str:
    """The model's main input, as it says (`main_input_name`); where its forward takes no such
    argument (a vision tower that inherits the text default, input_ids), the first pixels,
    audio features or waveform argument its forward does take."""
    main = getattr(model, "main_input_name", "input_ids")
    if isinstance(main, (list, tuple)):  # several (OneFormer's pixels and task): the first
        main = main[0] if main else "input_ids"
    if main in takes:
        return main
    return next((name for name in takes
                 if name.startswith(("pixel_values", "input_features", "input_values"))), main)


def input_variants(inputs: dict) -> tuple[dict, ...]:
    """Variants of `inputs` a model's forward may run on where it fails on them: a waveform with
    a channel axis, audio features as time × bins rather than bins × time (a conformer's layout), or a VLM's text alone (one
    that needs more than pixels: image grids, sizes; its vision tower's weights are then params
    the forward never reads)."""
    variants = []
    if "input_values" in inputs and inputs["input_values"].dim() == 2:
        # a codec's waveform as (batch, channels, samples), one channel (DAC's names none)
        variants.append({**inputs, "input_values": inputs["input_values"].unsqueeze(1)})
    if "input_features" in inputs and inputs["input_features"].dim() == 3:
        variants.append({**inputs, "input_features": inputs["input_features"].transpose(1, 2)
                         .contiguous()})
    if "input_values" in inputs and inputs["input_values"].dim() == 2 \
            and "input_features" in inputs and inputs["input_features"].dim() == 3:
        # a codec that reads both (XCodec2, NeuCodec): a channel axis and time × bins at once
        variants.append({**inputs, "input_values": inputs["input_values"].unsqueeze(1),
                         "input_features": inputs["input_features"].transpose(1, 2)
                         .contiguous()})
    if "pixel_values" in inputs and "input_ids" in inputs:
        text = {k: v for k, v in inputs.items() if k != "pixel_values"}
        text["input_ids"] = text["input_ids"][:, -TOKENS:]  # no image tokens without an image
        variants.append(text)
    return tuple(variants)


def _with_image_tokens(model, config, inputs: dict, vocab: int):
    """The prompt of a model that merges image features into its text (a LLaVA-like VLM): one
    image token per feature its vision tower gives, then the text tokens, none of them that id.
    A model without a token id in its config, or that does not say its features, keeps its text."""
    import torch

    token = next((getattr(config, k) for k in ("image_token_id", "image_token_index")
                  if isinstance(getattr(config, k, None), int)), None)
    features = getattr(model, "get_image_features", None)
    text = inputs["input_ids"]
    if token is None or features is None:
        return text
    try:
        with torch.no_grad():
            found = features(pixel_values=inputs["pixel_values"])
    except Exception:  # noqa: BLE001 - it needs more than pixels (image sizes, grids)
        return text
    if hasattr(found, "pooler_output") and found.pooler_output is not None:
        found = found.pooler_output  # transformers 5: the projected features per image
    parts = found if isinstance(found, (list, tuple)) else [found]
    if not all(isinstance(p, torch.Tensor) for p in parts):
        return text
    images = sum(p.numel() // p.shape[-1] for p in parts)  # one token per feature vector
    text = torch.where(text == token, (text + 1) % vocab, text)
    return torch.cat([torch.full((1, images), token, dtype=text.dtype), text], dim=1)


# a user's factory specs, and folders of .onnx files ----------------------------------------

def _factory_build(task: Task) -> Subject:
    from onnxflops.sources import load

    if not task.shapes:
        raise OnnxFlopsError(f"{task.argument}: give its inputs with --input NAME=DIMS")
    return Subject(load(task.argument).model, kwargs={k: _image(*v) for k, v in task.shapes})


def _onnx_names(folder: str) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*.onnx"))


def _onnx_build(task: Task) -> Subject:
    return Subject(str(Path(task.argument) / task.name))


# The registries of torch models, whose rows fork from a process that imported torch once.
TORCH_REGISTRIES = ("torchvision", "timm", "transformers")


# example inputs: seeded, so that every run of a row is the same ------------------------------

def _image(*shape):
    import torch

    return torch.randn(shape, generator=torch.Generator().manual_seed(0), device="cpu")


def _ids(*shape, high: int):
    import torch

    return torch.randint(0, high, shape, generator=torch.Generator().manual_seed(0), device="cpu")
