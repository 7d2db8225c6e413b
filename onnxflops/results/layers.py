"""The layer a node came from, read off the name scope its exporter left."""

from __future__ import annotations

import ast
import itertools
import re
from typing import Iterable

import onnx

from onnxflops.caches import memoized

_KERAS_LAYER_SCOPE = re.compile(r".+_\d+$")


def layer_of(proto: onnx.NodeProto) -> str:
    """The module or layer a node came from, from the name scope its exporter left.

    torch's exporters give the module path (`layer1.0.conv1`): the dynamo exporter in metadata, the
    legacy one in names like `/layer1/layer1.0/conv1/Conv`. tf2onnx gives the TensorFlow scope,
    where Keras 3 layers are the leading components with a `_N` suffix
    (`model_1/ff1_1/Tensordot/MatMul` → `model_1/ff1_1`); other scopes are kept as they are.
    """
    for prop in proto.metadata_props:
        if prop.key == "pkg.torch.onnx.name_scopes":
            return _layer_of_name_scopes(prop.value)
    name = proto.name
    cut = name.rfind("/")
    return _layer_of_scope(name[:cut]) if cut >= 0 else ""


# Nodes of one layer share its scope: each scope is parsed once.
@memoized(maxsize=4096)
def _layer_of_name_scopes(value: str) -> str:
    """The innermost module of the exporter's scopes, a Python list's repr: a module path may hold
    commas (a module reached through a slice, `model.slice(None, -1, None).0`)."""
    try:
        scopes = ast.literal_eval(value)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        scopes = [s.strip(" '\"") for s in value.strip("[]").split(",")]
    if not isinstance(scopes, (list, tuple)):
        return ""
    scopes = [s for s in scopes[:-1] if isinstance(s, str) and s]
    return _unsliced(scopes[-1]) if scopes else ""


# A module reached through a slice of a Sequential or ModuleList (`self.model[:-1]`), then its
# position in the slice: `slice(None, -1, None).0` or `[slice(1, None, None)][0]`.
_SLICED = re.compile(r"\.?\[?slice\((-?\d+|None), (-?\d+|None), (-?\d+|None)\)\]?(?:\.|\[)(\d+)\]?")


def _unsliced(path: str) -> str:
    """position i of slice(start, stop, step) = start + i·step: `model.slice(None, -1, None).0` →
    `model.0`, the module's name in the container itself. A start the container's length decides
    (negative, or None with a negative step) stays a slice, written as Python writes it
    (`model[-2:].0`)."""
    def resolved(found: re.Match) -> str:
        start, stop, step = (None if g == "None" else int(g) for g in found.groups()[:3])
        position = int(found.group(4))
        step = 1 if step is None else step
        if step > 0 and (start is None or start >= 0):
            return f".{(start or 0) + position * step}"
        written = ":".join("" if g is None else str(g) for g in (start, stop))
        return f"[{written}{'' if step == 1 else f':{step}'}].{position}"

    return _SLICED.sub(resolved, path) if "slice(" in path else path


@memoized(maxsize=4096)
def _layer_of_scope(scope: str) -> str:
    if not scope.startswith("/"):  # torch's legacy names start with one
        layers = list(itertools.takewhile(_KERAS_LAYER_SCOPE.match, scope.split("/")))
        return "/".join(layers) if layers else scope
    path = ""
    for part in scope.strip("/").split("/"):
        path = part if not path or part.startswith(path + ".") else f"{path}.{part}"
    return path


def layer_in_model(layer: str) -> str:
    """A layer's name below the model's own scope: `model_1/dense_1` → `dense_1`. The layers of a
    nested Keras model keep its scope, each its own (`model_1/backbone_1/fc1_1` →
    `backbone_1/fc1_1`); of any other TF scope the second component is kept."""
    parts = layer.split("/")
    if len(parts) < 2:
        return layer
    if all(_KERAS_LAYER_SCOPE.match(part) for part in parts):
        return "/".join(parts[1:])
    return parts[1]


# The attribute a wrapping nn.Module (DataParallel, a keyword-call adapter) keeps its model in.
_WRAPPER = "module"


def framework_names(layers: Iterable[str]) -> dict[str, list[str]]:
    """Each layer's module path as its framework names it, component by component.

    torch: `encoder.layer.0.attention` → [encoder, layer, 0, attention]; a `module.` prefix that
    every layer shares (the model was called through a wrapper holding it as `module`) is left
    out. Keras through tf2onnx: the model's scope is left out and each layer loses the `_N` suffix
    TensorFlow's name scopes add (`model_1/encoder_1/ff1_1` → [encoder, ff1]); other TF scopes
    keep their second component. Top-level nodes (no layer) have no components.
    """
    paths: dict[str, list[str]] = {}
    for layer in layers:
        if "/" in layer:
            inner = layer_in_model(layer)
            parts = inner.split("/")
            keras = all(_KERAS_LAYER_SCOPE.match(p) for p in layer.split("/"))
            paths[layer] = [p.rsplit("_", 1)[0] for p in parts] if keras else parts
        else:
            paths[layer] = layer.split(".") if layer else []
    torch_paths = [p for layer, p in paths.items() if layer and "/" not in layer]
    if torch_paths and all(p[0] == _WRAPPER for p in torch_paths):
        for layer, path in paths.items():
            if layer and "/" not in layer:
                paths[layer] = path[1:]
    return paths


def modules_at_depth(layers: Iterable[str], depth: int) -> dict[str, str]:
    """Each layer's module `depth` levels down the model's tree, in the framework's names
    (framework_names): `module.layer1.0.conv1` at depth 2 → `layer1.0`; '' for top-level nodes."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth={depth!r}: a whole number from 1")
    return {layer: ("/" if "/" in layer else ".").join(path[:depth])
            for layer, path in framework_names(layers).items()}
