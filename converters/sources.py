"""What a user can name as a model, turned into ONNX.

- an .onnx file or an onnx.ModelProto: used as is (never converted);
- a keras.Model, a torch nn.Module or torch.export.ExportedProgram object;
- a .keras / .h5 file, a TensorFlow SavedModel directory, a torch.export .pt2 file;
- a factory spec `package.module:function` naming a function (or class) that returns one of them.

Loading files runs no stored code by default: Keras files load with safe_mode (Lambda layers are
refused), .pt2 archives through torch.export.load with every unpickling restricted to weights;
pickled torch modules (.pt/.pth) are not accepted at all. `unsafe=True` lifts the first two. A
factory spec imports and runs the user's own module, as naming it asks.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from pathlib import Path

import onnx

from onnxflops.converters.common import native_output_silenced, triton_kept_out
from onnxflops.converters.from_keras import (
    is_saved_model_dir,
    keras_to_onnx,
    load_keras_file,
    saved_model_to_onnx,
)
from onnxflops.converters.common import framework_needed, install_hint
from onnxflops.converters.from_torch import argument_names, load_exported_program, torch_to_onnx
from onnxflops.errors import OnnxFlopsError, first_line
from onnxflops.load import load_model

_KERAS_FILES = (".keras", ".h5", ".hdf5")
_PICKLES = (".pt", ".pth", ".pkl", ".bin")
_FACTORY_SPEC = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")


def needs_conversion(model) -> bool:
    """True for what `convert` takes; False for ONNX (a proto, or any other path or object)."""
    if isinstance(model, onnx.ModelProto):
        return False
    if not isinstance(model, (str, os.PathLike)):
        return _is_keras_model(model) or _is_torch_model(model)
    path = Path(model)
    if path.exists():
        return path.suffix.lower() in _KERAS_FILES + _PICKLES + (".pt2",) or is_saved_model_dir(path)
    return _FACTORY_SPEC.fullmatch(str(model)) is not None


def convert(model, inputs=None, *, batch: int | None = None, exporter: str = "dynamo",
            keep_weights: bool = False, unsafe: bool = False) -> onnx.ModelProto:
    """ONNX for any model source but an ONNX one (see the module docstring for the kinds).

    `inputs` are shapes or example tensors, by input name (a mapping) or in order; `batch` binds
    the batch dim of Keras inputs that leave it open (default 1). `exporter` picks the torch
    exporter; `unsafe` lets Keras files with Lambda layers, and .pt2 files with pickled objects,
    load.
    """
    subject = str(model) if isinstance(model, (str, os.PathLike)) else type(model).__name__
    with framework_needed(subject):
        if isinstance(model, (str, os.PathLike)):
            model = _load(model, unsafe)
        if _is_keras_model(model):
            return keras_to_onnx(model, inputs, batch=batch or 1, keep_weights=keep_weights)
        if _is_torch_model(model):
            return torch_to_onnx(model, inputs, exporter=exporter, keep_weights=keep_weights)
        if isinstance(model, _SavedModel):
            return saved_model_to_onnx(model.path, inputs, batch=batch or 1,
                                       keep_weights=keep_weights)
    raise OnnxFlopsError(f"cannot count a {type(model).__name__}: give an ONNX model, a "
                         "keras.Model, a torch nn.Module, or a path or factory spec of one")


def load(source, *, unsafe: bool = False):
    """The model a source names, loaded but not converted; ONNX sources come back unchanged."""
    if isinstance(source, (str, os.PathLike)) and needs_conversion(source):
        with framework_needed(str(source)):
            return _load(source, unsafe)
    return source


def declared_inputs(model) -> dict[str, tuple | None]:
    """A loaded model's input names with the shapes it declares (None: any, or a dim left open)."""
    if _is_keras_model(model):
        return {t.name: tuple(t.shape) for t in model.inputs}
    if _is_torch_model(model):
        return dict.fromkeys(argument_names(model))
    if isinstance(model, _SavedModel):
        return {}
    proto = model if isinstance(model, onnx.ModelProto) else load_model(model)
    weights = {t.name for t in proto.graph.initializer}
    return {i.name: tuple(d.dim_value or None for d in i.type.tensor_type.shape.dim)
            for i in proto.graph.input if i.name not in weights}


def accepts(declared: tuple | None, shape) -> bool:
    """Whether an input declared so can be bound to `shape` (same rank, fixed dims equal)."""
    if declared is None or not hasattr(shape, "__len__"):
        return True
    return len(declared) == len(shape) and all(d is None or d == s for d, s in zip(declared, shape))


class _SavedModel:
    """A SavedModel directory, converted from its serving signature."""

    def __init__(self, path: Path):
        self.path = path


def _load(source: str | os.PathLike, unsafe: bool):
    path = Path(source)
    suffix = path.suffix.lower()
    if path.exists():
        if is_saved_model_dir(path):
            return _SavedModel(path)
        if suffix in _KERAS_FILES:
            return load_keras_file(path, safe_mode=not unsafe)
        if suffix == ".pt2":
            return load_exported_program(path, unsafe=unsafe)
        if suffix in _PICKLES:
            raise OnnxFlopsError(f"{path}: pickled PyTorch files are not loaded (unpickling runs "
                                 "code); save the model with torch.export.save as .pt2, or name "
                                 "a factory as package.module:function")
        raise OnnxFlopsError(f"{path}: not a model file onnxflops knows (.onnx, .keras, .h5, "
                             ".pt2 or a SavedModel directory)")
    spec = str(source)
    if _FACTORY_SPEC.fullmatch(spec):
        with triton_kept_out():  # the user's code may import torch._dynamo, which loads triton
            return _from_factory(spec)
    raise OnnxFlopsError(f"{source}: no such file (a factory is named as package.module:function)")


def _from_factory(spec: str):
    module_name, _, attr = spec.partition(":")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` does: the user's own packages import
    try:
        with native_output_silenced():  # TensorFlow logs from C++ as it is imported
            module = importlib.import_module(module_name)
    except ImportError as e:
        raise OnnxFlopsError(f"{spec}: cannot import module '{module_name}' ({first_line(e)})"
                             f"{install_hint(e)}") from None
    except (Exception, SystemExit) as e:  # the module itself fails: a SyntaxError, a raise, exit()
        raise OnnxFlopsError(f"{spec}: importing module '{module_name}' raised "
                             f"{type(e).__name__}: {first_line(e)}") from None
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise OnnxFlopsError(f"{spec}: module '{module_name}' has no function '{attr}'")
    try:
        with native_output_silenced():
            model = factory()
    except (Exception, SystemExit) as e:  # the user's factory raised or exited: one line
        raise OnnxFlopsError(f"{spec}: the factory raised {type(e).__name__}: {first_line(e)}") \
            from None
    if not (_is_keras_model(model) or _is_torch_model(model)):
        raise OnnxFlopsError(f"{spec}: returned a {type(model).__name__}, not a keras.Model or a "
                             "torch nn.Module")
    return model


def _is_keras_model(model) -> bool:
    keras = sys.modules.get("keras")
    return keras is not None and isinstance(model, keras.Model)


def _is_torch_model(model) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(model, (torch.nn.Module, torch.export.ExportedProgram))
