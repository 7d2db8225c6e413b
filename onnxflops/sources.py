"""The source seam: every kind of model a user can name, how it is told, loaded and converted.

`KINDS` is the one table. Each command and stage (count, profile, compare, convert, llm, survey)
asks it what a source is and turns the source into ONNX through it; only this module imports the
converters. A new kind of model is one entry here and one converter file in converters/.

Loading files runs no stored code by default: Keras files load with safe_mode (Lambda layers are
refused), .pt2 archives through torch.export.load with every unpickling restricted to weights;
pickled torch modules (.pt/.pth) are not accepted at all. `unsafe=True` lifts the first two. A
factory spec imports and runs the user's own module, as naming it asks. Frameworks are imported
only when a model of theirs is loaded or converted: telling a kind imports none.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import onnx

from onnxflops.errors import OnnxFlopsError, first_line
from onnxflops.load import load_model
from onnxflops.progress import step

_KERAS_FILES = (".keras", ".h5", ".hdf5")
_PICKLES = (".pt", ".pth", ".pkl", ".bin")


@dataclass(frozen=True)
class Kind:
    """One kind of model source: how it is told, loaded, converted, and what it needs."""

    name: str
    extra: str | None  # pip install 'onnxflops[extra]' installs what converting it needs
    # True for what the user named (an existing path, a spec, an object) when it is of this kind.
    detect: Callable[[Any], bool]
    # (what the user named, unsafe) → the model object its converter takes (any object: `load`
    # keeps the kind beside it).
    load: Callable[[Any, bool], Any]
    # (loaded model, inputs, batch, exporter, keep_weights) → onnx.ModelProto; None: it is ONNX,
    # read as it is (an .onnx path without its weights unless asked for them).
    convert: Callable[..., onnx.ModelProto] | None
    # The loaded model's input names with the shapes it declares (None: any, or a dim left open).
    inputs: Callable[[Any], dict[str, tuple | None]]
    # Listed in every command's help as what MODEL may be, by `name`; False: an object only the
    # Python API is given, or a file that is refused.
    offered: bool = True
    # (loaded model, inputs, batch, exporter) → the graph the framework's own export gives a user,
    # with its weights (what measuring runs: `to_run`); None: the counted graph with its weights.
    deploy: Callable[..., onnx.ModelProto] | None = None


@dataclass(frozen=True)
class Loaded:
    """A source loaded by its kind, to be converted later (perhaps twice: with and without its
    weights). The kind travels with the model, which need not be a kind of its own."""

    kind: Kind
    model: Any  # what kind.load made of the source (an ONNX source: the source itself)
    source: Any  # what the user named


# -- how each kind is told (no framework imported) -------------------------------------------------

def _is_proto(source) -> bool:
    return isinstance(source, onnx.ModelProto)


def _is_path(source) -> bool:
    return isinstance(source, (str, os.PathLike))


def _existing(source, suffixes: tuple[str, ...]) -> bool:
    return _is_path(source) and Path(source).exists() and Path(source).suffix.lower() in suffixes


def _is_saved_model_dir(source) -> bool:
    """A TensorFlow SavedModel: a folder holding saved_model.pb."""
    return _is_path(source) and Path(source).is_dir() and (Path(source) / "saved_model.pb").exists()


def _is_factory(source) -> bool:
    """`package.module:function` that is no existing path (an .onnx path is never one)."""
    if not _is_path(source) or Path(source).exists() or Path(source).suffix.lower() == ".onnx":
        return False
    from onnxflops.converters.factory import is_factory_spec

    return is_factory_spec(str(source))


def _is_keras_model(model) -> bool:
    keras = sys.modules.get("keras")  # a Keras model means Keras is loaded: none imported here
    return keras is not None and isinstance(model, keras.Model)


def _is_torch_module(model) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(model, torch.nn.Module)


def _is_exported_program(model) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(model, torch.export.ExportedProgram)


def _is_causal_lm_config(source) -> bool:
    """A transformers config.json, or a folder holding one."""
    if not _is_path(source):
        return False
    path = Path(source)
    return path.is_file() and path.suffix.lower() == ".json" or (path / "config.json").is_file()


# -- how each kind is loaded and converted (the converters, imported on use) ----------------------

def _itself(model, unsafe: bool):
    return model


def _keras_file(path, unsafe: bool):
    from onnxflops.converters.from_keras import load_keras_file

    return load_keras_file(Path(path), safe_mode=not unsafe)


def _exported_program_file(path, unsafe: bool):
    from onnxflops.converters.from_torch import load_exported_program

    return load_exported_program(Path(path), unsafe=unsafe)


def _refused_pickle(path, unsafe: bool):
    raise OnnxFlopsError(f"{path}: pickled PyTorch files are not loaded (unpickling runs code); "
                         "save the model with torch.export.save as .pt2, or name a factory as "
                         "package.module:function")


def _factory(spec, unsafe: bool):
    from onnxflops.converters.factory import load_factory

    return load_factory(str(spec))


def _keras_to_onnx(model, inputs, batch, exporter, keep_weights) -> onnx.ModelProto:
    from onnxflops.converters.from_keras import keras_to_onnx

    return keras_to_onnx(model, inputs, batch=batch or 1, keep_weights=keep_weights)


def _saved_model_to_onnx(path: Path, inputs, batch, exporter, keep_weights):
    """A SavedModel folder, converted from its serving signature."""
    from onnxflops.converters.from_keras import saved_model_to_onnx

    return saved_model_to_onnx(path, inputs, batch=batch or 1, keep_weights=keep_weights)


def _torch_to_onnx(model, inputs, batch, exporter, keep_weights) -> onnx.ModelProto:
    from onnxflops.converters.from_torch import torch_to_onnx

    return torch_to_onnx(model, inputs, exporter=exporter, keep_weights=keep_weights)


def _loaded_to_onnx(model, inputs, batch, exporter, keep_weights) -> onnx.ModelProto:
    """What a factory returned, converted as its own kind."""
    return kind_of(model).convert(model, inputs, batch, exporter, keep_weights)


def _keras_deployed(model, inputs, batch, exporter) -> onnx.ModelProto:
    from onnxflops.converters.from_keras import keras_to_deployed_onnx

    return keras_to_deployed_onnx(model, inputs, batch=batch or 1)


def _saved_model_deployed(path: Path, inputs, batch, exporter) -> onnx.ModelProto:
    from onnxflops.converters.from_keras import saved_model_to_deployed_onnx

    return saved_model_to_deployed_onnx(path, inputs, batch=batch or 1)


def _torch_deployed(model, inputs, batch, exporter) -> onnx.ModelProto:
    from onnxflops.converters.from_torch import torch_to_deployed_onnx

    return torch_to_deployed_onnx(model, inputs, exporter=exporter)


def _loaded_deployed(model, inputs, batch, exporter) -> onnx.ModelProto:
    """What a factory returned, deployed as its own kind."""
    kind = kind_of(model)
    if kind is ONNX:
        return model
    if kind.deploy is None:
        return kind.convert(model, inputs, batch, exporter, True)
    return kind.deploy(model, inputs, batch, exporter)


def _onnx_inputs(model) -> dict[str, tuple | None]:
    proto = model if isinstance(model, onnx.ModelProto) else load_model(model)
    weights = {t.name for t in proto.graph.initializer}
    return {i.name: tuple(d.dim_value or None for d in i.type.tensor_type.shape.dim)
            for i in proto.graph.input if i.name not in weights}


def _keras_inputs(model) -> dict[str, tuple | None]:
    return {t.name: tuple(t.shape) for t in model.inputs}


def _torch_inputs(model) -> dict[str, tuple | None]:
    from onnxflops.converters.from_torch import argument_names

    return dict.fromkeys(argument_names(model))


def _none_declared(model) -> dict[str, tuple | None]:
    return {}


def _unconvertible(model, *args) -> onnx.ModelProto:
    raise OnnxFlopsError(f"cannot count a {type(model).__name__}: give an ONNX model, a "
                         "keras.Model, a torch nn.Module, or a path or factory spec of one")


def _causal_lm_graphs(model, *unused, extend_layers: bool = False, prompt: int | None = None):
    """Serving's two graphs, prefill and decode step (converters.causal_lm.CausalLM)."""
    from onnxflops.converters.causal_lm import causal_lm_to_onnx

    return causal_lm_to_onnx(model, extend_layers=extend_layers, prompt=prompt)


def declared_inputs(source) -> dict[str, tuple | None]:
    """A source's input names with the shapes it declares (None: any, or a dim left open)."""
    loaded = load(source)
    return loaded.kind.inputs(loaded.model)


# -- the table ------------------------------------------------------------------------------------

ONNX = Kind("ONNX model (.onnx file or onnx.ModelProto)", None, _is_proto, _itself, None,
            _onnx_inputs)
FACTORY = Kind("factory spec (package.module:function)", None, _is_factory, _factory,
               _loaded_to_onnx, declared_inputs, deploy=_loaded_deployed)
KINDS: tuple[Kind, ...] = (
    ONNX,
    Kind("TensorFlow SavedModel folder", "keras", _is_saved_model_dir, lambda s, u: Path(s),
         _saved_model_to_onnx, _none_declared, deploy=_saved_model_deployed),
    Kind("torch.export program (.pt2 file)", "torch", lambda s: _existing(s, (".pt2",)),
         _exported_program_file, _torch_to_onnx, declared_inputs, deploy=_torch_deployed),
    Kind("torch.export.ExportedProgram", "torch", _is_exported_program, _itself, _torch_to_onnx,
         _torch_inputs, offered=False, deploy=_torch_deployed),
    Kind("torch nn.Module", "torch", _is_torch_module, _itself, _torch_to_onnx, _torch_inputs,
         offered=False, deploy=_torch_deployed),
    Kind("pickled torch module (.pt, .pth, .pkl, .bin: refused)", "torch",
         lambda s: _existing(s, _PICKLES), _refused_pickle, _unconvertible, declared_inputs,
         offered=False),
    FACTORY,
    Kind("Keras model file (.keras, .h5, .hdf5)", "keras", lambda s: _existing(s, _KERAS_FILES),
         _keras_file, _keras_to_onnx, declared_inputs, deploy=_keras_deployed),
    Kind("keras.Model", "keras", _is_keras_model, _itself, _keras_to_onnx, _keras_inputs,
         offered=False, deploy=_keras_deployed),
)
# Served by `llm` as two graphs, never counted as one: not among the kinds `kind_of` tells.
CAUSAL_LM = Kind("transformers causal LM (model, config, config.json or its folder)", "hf",
                 _is_causal_lm_config, _itself, _causal_lm_graphs, _none_declared)


def kind_of(source) -> Kind:
    """The kind of `source`, told from its type, suffix or spelling alone (no file is read, no
    framework imported). What no kind claims is ONNX, whose reader says in one line what it is
    not. A source already loaded is of the kind that loaded it."""
    if isinstance(source, Loaded):
        return source.kind
    if _is_proto(source) or _is_path(source) and Path(source).suffix.lower() == ".onnx":
        return ONNX
    return next((kind for kind in KINDS if kind.detect(source)), ONNX)


def needs_conversion(source) -> bool:
    """True for what `to_onnx` converts; False for ONNX (a proto, or any other path or object)."""
    return kind_of(source) is not ONNX


def load(source, *, unsafe: bool = False) -> Loaded:
    """The model a source names, loaded but not converted (`.model`; an ONNX source is its own),
    with its kind."""
    if isinstance(source, Loaded):
        return source
    kind = kind_of(source)
    if kind is ONNX:
        return Loaded(kind, source, source)
    with _framework_needed(source):
        return Loaded(kind, kind.load(source, unsafe), source)


def frameworks_for(*sources) -> None:
    """TensorFlow then triton in one process crashes it (both bundle LLVM; torch loads triton as
    it loads or exports): where one source may load TensorFlow and another torch, torch and
    triton are imported first. One source, or sources of one framework, import nothing."""
    if not frameworks_meet(*sources) or "tensorflow" in sys.modules:  # nothing to order, or late
        return
    import importlib.util

    if importlib.util.find_spec("torch") is not None:
        import torch  # noqa: F401
    if importlib.util.find_spec("triton") is not None:
        import triton  # noqa: F401


def frameworks_meet(*sources) -> bool:
    """Whether one of `sources` may load TensorFlow (extra keras) and another torch."""
    sides = [_frameworks_it_may_load(source) for source in sources]
    return any("keras" in a and "torch" in b for i, a in enumerate(sides)
               for j, b in enumerate(sides) if i != j)


def _frameworks_it_may_load(source) -> set[str]:
    """The extras (frameworks) loading `source` may import: a factory's code may import either."""
    kind = kind_of(source)
    if kind is FACTORY:
        return {"keras", "torch"}
    return {kind.extra} - {None}


def accepts(declared: tuple | None, shape) -> bool:
    """Whether an input declared so can be bound to `shape` (same rank, fixed dims equal)."""
    if declared is None or not hasattr(shape, "__len__"):
        return True
    return len(declared) == len(shape) and all(d is None or d == s for d, s in zip(declared, shape))


@dataclass
class Prepared:
    """A source as the counting pipeline reads it, and as onnxruntime runs it."""

    counted: onnx.ModelProto | str | Any  # what counting loads: a path loads without the weights
    name: str  # as the source names it: a file's name, else the graph's
    converted: bool  # conversion bound the input shapes already
    deployed: bool = False  # the framework's own export (to_run), not the counted graph
    _weighted: onnx.ModelProto | None = None

    def weighted(self) -> onnx.ModelProto:
        """The model with its weights: read only now for a path (after any budget check)."""
        if self._weighted is None:
            try:
                self._weighted = onnx.load(str(self.counted))
            except Exception as e:  # onnx raises several types for a missing or short data file
                raise OnnxFlopsError(f"{self.counted}: cannot read its weights to run it "
                                     f"({first_line(e)})") from None
        return self._weighted


def to_onnx(source, inputs=None, *, batch: int | None = None, exporter: str = "dynamo",
            unsafe: bool = False, keep_weights: bool = False) -> Prepared:
    """`source` as ONNX: an ONNX source as it is, any other converted (loaded first if a path or
    spec). This is the one place that decides "convert or load, with or without weights".

    `inputs` are shapes or example tensors, by input name (a mapping) or in order; `batch` binds
    the batch dim of Keras inputs that leave it open (default 1). `exporter` picks the torch
    exporter; `keep_weights` converts with the model's own weights (for running it), else with
    stand-ins that no exporter simplification can key on (for counting it).
    """
    if kind_of(source) is ONNX:
        return _as_it_is(load(source).model)
    with step("converting"):
        loaded = load(source, unsafe=unsafe)
        with _framework_needed(loaded.source):
            proto = loaded.kind.convert(loaded.model, inputs, batch, exporter, keep_weights)
    return Prepared(proto, _name(loaded, proto), True, _weighted=proto)


# Which graph measuring runs: what the framework's own export gives a user, or the one counted.
GRAPHS = ("deployed", "counted")


def to_run(source, inputs=None, *, graph: str = "deployed", batch: int | None = None,
           exporter: str = "dynamo", unsafe: bool = False) -> Prepared:
    """The graph that measuring runs (profile, report, compare's output check), with its weights.
    This is the one place that decides "which graph runs".

    graph="deployed": a framework model as its framework's own export gives it to a user
    (torch.onnx.export with its default optimization, or the legacy exporter's defaults for
    exporter="legacy"; tf2onnx's default conversion for Keras): what a user times and ships.
    graph="counted": the structure-only graph counting reads (`to_onnx`), with the real weights.
    An ONNX source runs as it is either way. `inputs` etc. as `to_onnx` takes them.
    """
    if graph not in GRAPHS:
        raise OnnxFlopsError(f"unknown graph '{graph}' (choose from {', '.join(GRAPHS)})")
    kind = kind_of(source)
    if graph == "counted" or kind is ONNX or kind.deploy is None:
        return to_onnx(source, inputs, batch=batch, exporter=exporter, unsafe=unsafe,
                       keep_weights=True)
    loaded = load(source, unsafe=unsafe)
    try:
        with _framework_needed(loaded.source):
            proto = kind.deploy(loaded.model, inputs, batch, exporter)
    except OnnxFlopsError as e:  # what counting converts still runs, said so
        warnings.warn(f"{e}; running the counted graph instead (as with --graph counted)",
                      stacklevel=2)
        return to_onnx(loaded, inputs, batch=batch, exporter=exporter, unsafe=unsafe,
                       keep_weights=True)
    return Prepared(proto, _name(loaded, proto), True, deployed=True, _weighted=proto)


def _name(loaded: Loaded, proto: onnx.ModelProto) -> str:
    """What a converted model is called: a path or spec by its name as the user gave it, an
    object by the name its converter gave the graph (a torch module's class, a Keras model's
    name), never by its text (a module's printout runs to pages)."""
    if _is_path(loaded.source):
        return Path(str(loaded.source)).name
    return proto.graph.name or type(loaded.model).__name__


def _as_it_is(source) -> Prepared:
    """An ONNX source, read as it is (a path: its weights only when asked for)."""
    if isinstance(source, onnx.ModelProto):
        return Prepared(source, source.graph.name or "model", False, _weighted=source)
    if not _is_path(source):  # no model at all: the ONNX reader says so in one line
        return Prepared(source, type(source).__name__, False)
    return Prepared(str(source), Path(source).name, False)


def causal_lm(source, *, extend_layers: bool = False, prompt: int | None = None):
    """A causal LM's prefill and decode-step graphs (converters.causal_lm.CausalLM) from a
    transformers model, its config (object, config.json or a folder holding one) or a factory
    spec; graphs already exported come back as they are. `prompt`: the length a prefill is
    exported at where the model's code fixes it (causal_lm_to_onnx)."""
    if is_causal_lm(source):
        return source
    return CAUSAL_LM.convert(source, extend_layers=extend_layers, prompt=prompt)


def is_causal_lm(model) -> bool:
    """A causal LM's graphs already exported (converters.causal_lm.CausalLM)."""
    module = sys.modules.get("onnxflops.converters.causal_lm")  # none made if it is not loaded
    return module is not None and isinstance(model, module.CausalLM)


def is_graph_only(proto: onnx.ModelProto) -> bool:
    """A converted model whose weights have no data (they were on the meta device)."""
    from onnxflops.converters.from_torch import is_graph_only as graph_only

    return graph_only(proto)


def absent_weights_file() -> str:
    """The file a graph-only model's initializers name for their data (never written)."""
    from onnxflops.converters.common import ABSENT_WEIGHTS

    return ABSENT_WEIGHTS


def _framework_needed(source):
    """A framework missing while loading or converting `source`: one line naming its extra."""
    from onnxflops.converters.common import framework_needed

    return framework_needed(str(source) if _is_path(source) else type(source).__name__)
