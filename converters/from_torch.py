"""PyTorch → ONNX through torch.onnx.export, with a graph that depends on structure only.

Both exporters are told not to fold BatchNorm into the preceding conv (the dynamo exporter's
optimizer is off; the legacy one keeps BatchNorm with TrainingMode.PRESERVE), so BatchNorm's
scale/bias stay params and its running statistics buffers. The module is exported with stand-in
weights (see `converters.structure`) unless `keep_weights=True`, so that the legacy exporter cannot
merge initializers that merely happen to be equal. torch is imported only when a module is converted.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import logging
import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx

from converters.common import check_container, is_single_input, root_cause
from converters.structure import StandInValues, is_float_dtype
from onnxflops.errors import OnnxFlopsError, first_line

OPSET = 18
EXPORTERS = ("dynamo", "legacy")
_WEIGHTS_ONLY = "TORCH_FORCE_WEIGHTS_ONLY_LOAD"


def torch_to_onnx(module, inputs=None, *, exporter: str = "dynamo", keep_weights: bool = False,
                  opset: int = OPSET) -> onnx.ModelProto:
    """Convert an nn.Module (or a torch.export.ExportedProgram) in eval mode.

    `inputs`: a tensor or a shape, a sequence of tensors/shapes (float32 random tensors are made from
    shapes), or a mapping forward-argument name → tensor/shape. An ExportedProgram defaults to its
    example inputs.
    """
    import torch

    if exporter not in EXPORTERS:
        raise OnnxFlopsError(f"unknown exporter '{exporter}' (choose from {', '.join(EXPORTERS)})")
    logging.getLogger("torch.onnx").setLevel(logging.ERROR)
    is_program = isinstance(module, torch.export.ExportedProgram)
    label = f"PyTorch model '{_model_name(module, is_program)}'"
    names = argument_names(module)
    args = _example_args(module, inputs, names, is_program, label)
    if is_program and exporter == "legacy":
        raise OnnxFlopsError(f"{label}: an ExportedProgram converts with the dynamo exporter only")
    weights = list(module.state_dict.values()) if is_program else _unique_tensors(module)
    with contextlib.ExitStack() as stack:
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")  # exporter advice about the graph, not the user's problem
        stack.enter_context(contextlib.redirect_stdout(io.StringIO()))  # progress, graph dumps
        if not keep_weights:
            stack.enter_context(_stand_in_weights(weights))
        if not is_program:
            stack.enter_context(eval_mode(module))
        try:
            export = export_dynamo if exporter == "dynamo" else _export_legacy
            proto = export(module, args, names, opset)
        except OnnxFlopsError:
            raise
        except Exception as e:  # the exporters raise anything; the user gets one line
            raise OnnxFlopsError(f"{label}: the {exporter} exporter cannot convert it "
                                 f"({first_line(root_cause(e))})") from None
    proto.graph.name = _model_name(module, is_program)
    return proto


def load_exported_program(path, *, unsafe: bool = False):
    """Load a .pt2 file saved with torch.export.save.

    torch.export.load may unpickle parts of the archive in full (running code they name); unless
    `unsafe`, every unpickling it does is restricted to weights (TORCH_FORCE_WEIGHTS_ONLY_LOAD).
    """
    import torch

    check_container(Path(path))
    previous = os.environ.get(_WEIGHTS_ONLY)
    if not unsafe:
        os.environ[_WEIGHTS_ONLY] = "1"
    try:
        return torch.export.load(str(path))
    except Exception as e:  # a corrupt or unsafe archive raises zipfile, pickle or runtime errors
        # --unsafe helps only where the weights-only unpickler refused something.
        refused = "weights only" in str(e).lower() or "weights_only" in str(e).lower()
        hint = "; if it holds pickled objects and you trust it, use --unsafe" \
            if refused and not unsafe else ""
        raise OnnxFlopsError(f"{path}: not a loadable torch.export program ({first_line(e)}"
                             f"{hint})") from None
    finally:
        if previous is None:
            os.environ.pop(_WEIGHTS_ONLY, None)
        else:
            os.environ[_WEIGHTS_ONLY] = previous


def export_dynamo(module, args: tuple, names: list[str], opset: int,
                  dynamic_shapes=None) -> onnx.ModelProto:
    """torch.onnx.export with torch.export, its optimizer off; `dynamic_shapes` as torch.export
    takes them (the dims left symbolic in the graph)."""
    import torch

    program = torch.onnx.export(module, args, dynamo=True, optimize=False, opset_version=opset,
                                input_names=names[:len(args)] or None, verbose=False,
                                dynamic_shapes=dynamic_shapes)
    return program.model_proto


def _export_legacy(module, args: tuple, names: list[str], opset: int) -> onnx.ModelProto:
    import torch

    buffer = io.BytesIO()
    with _native_output_silenced():
        torch.onnx.export(module, args, buffer, dynamo=False, opset_version=opset,
                          input_names=names[:len(args)] or None, do_constant_folding=True,
                          training=torch.onnx.TrainingMode.PRESERVE)
    return onnx.load_from_string(buffer.getvalue())


@contextlib.contextmanager
def _native_output_silenced():
    """The TorchScript exporter's C++ logger dumps the whole graph to stdout when it fails."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(fd) for fd in (1, 2)]
    with open(os.devnull, "w") as devnull:
        for fd in (1, 2):
            os.dup2(devnull.fileno(), fd)
        try:
            yield
        finally:
            for fd, copy in zip((1, 2), saved):
                os.dup2(copy, fd)
                os.close(copy)


def _model_name(module, is_program: bool) -> str:
    if is_program:
        return "ExportedProgram"
    return type(module).__name__


def argument_names(module) -> list[str]:
    """The forward() arguments of a module, or the user inputs of an ExportedProgram."""
    import torch

    if isinstance(module, torch.export.ExportedProgram):
        return [spec.arg.name for spec in module.graph_signature.input_specs
                if spec.kind.name == "USER_INPUT"]
    try:
        parameters = inspect.signature(module.forward).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in parameters
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _example_args(module, inputs, names: list[str], is_program: bool, label: str) -> tuple:
    import torch

    if inputs is None:
        if is_program and module.example_inputs is not None:
            return tuple(module.example_inputs[0])
        raise OnnxFlopsError(f"{label}: give its inputs (shapes or tensors), e.g. "
                             "inputs=((1, 3, 224, 224),)")
    if isinstance(inputs, Mapping):
        unknown = [n for n in inputs if n not in names]
        if unknown:
            raise OnnxFlopsError(f"{label}: forward() has no argument '{unknown[0]}' "
                                 f"(arguments: {', '.join(names)})")
        missing = [n for n in names[:len(inputs)] if n not in inputs]
        if missing:
            raise OnnxFlopsError(f"{label}: forward() argument '{missing[0]}' was not given")
        items = [inputs[n] for n in names[:len(inputs)]]
    elif is_single_input(inputs):
        items = [inputs]
    else:
        items = list(inputs)
    generator = torch.Generator().manual_seed(0)
    return tuple(_as_tensor(item, generator, label) for item in items)



def _as_tensor(item, generator, label: str):
    import torch

    if isinstance(item, torch.Tensor):
        return item
    if isinstance(item, np.ndarray):
        return torch.from_numpy(item)
    if isinstance(item, Sequence) and all(isinstance(d, (int, np.integer)) and d > 0 for d in item):
        return torch.randn(tuple(int(d) for d in item), generator=generator)
    raise OnnxFlopsError(f"{label}: input {item!r} is neither a tensor nor a shape of positive ints")


def _unique_tensors(module) -> list:
    """Parameters and buffers, each shared tensor once, in registration order."""
    return list(module.parameters()) + list(module.buffers())


@contextlib.contextmanager
def _stand_in_weights(tensors):
    import torch

    floats = [t for t in {id(t): t for t in tensors}.values() if is_float_dtype(t.dtype)]
    saved = [t.detach().clone() for t in floats]
    values = StandInValues()
    try:
        with torch.no_grad():
            for t in floats:
                t.copy_(torch.from_numpy(values.like(tuple(t.shape), np.float32)))
        yield
    finally:
        with torch.no_grad():
            for t, real in zip(floats, saved):
                t.copy_(real)


@contextlib.contextmanager
def eval_mode(module):
    was_training = module.training
    module.eval()
    try:
        yield
    finally:
        module.train(was_training)
