"""Forms recognised by probing: activations and normalizations spelled as arithmetic.

GELU or LayerNorm spelled as arithmetic (tf2onnx, older exporters) → the Gelu /
LayerNormalization op, or that op's ONNX function body where the model's opset predates the op.
A candidate subgraph is identified by evaluating it on probe inputs, so any arrangement of the
arithmetic is recognised.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper

from onnxflops.analysis import (
    PROBE,
    VALUES,
    Operands,
    Probe,
    erf,
    expansion_model,
    followed_by,
    interpret,
    mean_axes,
)
from onnxflops.caches import memoized
from onnxflops.canonical.editor import Editor
from onnxflops.graph import GraphView, TensorInfo, is_standard_domain
from onnxflops.ops import GELU_CORES, LATER_INPUTS_NOT_DATA, MEANS, SCALINGS, SQUARINGS


_EVALUATED = followed_by(PROBE) - MEANS  # arithmetic a region of probed nodes may hold


@dataclass
class _Region:
    """Arithmetic nodes computing `output` from `source` and constants."""

    source: str
    nodes: list[onnx.NodeProto]
    output: str

    def op_types(self) -> list[str]:
        return sorted(n.op_type for n in self.nodes)


def _evaluate(g: Editor, region: _Region, x: np.ndarray, constants: dict[str, np.ndarray]):
    """What `region` computes from `x`, its weights given by `constants`, in float64."""
    values = {region.source: x, **constants}

    def operand(name: str) -> np.ndarray:
        if name in values:
            return values[name]
        scalar = g.scalar(name)
        if scalar is not None:
            return np.array(scalar)
        axes = g.view.value(name)  # a ReduceMean's axes
        if axes is None:
            raise KeyError(name)
        return axes

    with np.errstate(all="ignore"):  # a log of a negative probe is a mismatch, not a warning
        for node in region.nodes:
            attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            values[node.output[0]] = interpret(VALUES[node.op_type], _PROBE_BACKEND,
                                               Operands(node.input, operand), attrs)
    return values[region.output]


def _reduced_axes(g: Editor, node: onnx.NodeProto, rank: int) -> tuple[int, ...] | None:
    """Axes a GlobalAveragePool/ReduceMean (keepdims=1) averages over, or None if not static."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if attrs.get("keepdims", 1) != 1:
        return None
    axes = None
    if "axes" not in attrs and len(node.input) > 1 and node.input[1]:
        value = g.view.value(node.input[1])
        axes = None if value is None else value.reshape(-1).tolist()
    return mean_axes(node.op_type, attrs, axes, rank)


def _grow(g: Editor, source: str, weights_allowed: bool, limit: int = 24) -> list[onnx.NodeProto]:
    """Arithmetic nodes downstream of `source` whose other inputs are constants, in graph order:
    at most `limit` for each node that reads `source` (GPT-NeoX normalizes one tensor twice, and
    tf2onnx interleaves the two norms' nodes)."""
    inside: set[str] = {source}
    region: list[onnx.NodeProto] = []
    frontier = list(g.consumers.get(source, []))
    limit *= max(1, len(frontier))
    seen: set[int] = set()
    while frontier and len(region) < limit:
        frontier.sort(key=g.order)
        node = frontier.pop(0)
        if id(node) in seen:
            continue
        seen.add(id(node))
        if not _joins_region(g, node, inside, weights_allowed):
            continue
        region.append(node)
        inside.update(o for o in node.output if o)
        frontier.extend(c for o in node.output for c in g.consumers.get(o, []))
    region.sort(key=g.order)
    return region


def _joins_region(g: Editor, node: onnx.NodeProto, inside: set[str], weights_allowed: bool) -> bool:
    if not is_standard_domain(node.domain) or len(node.output) != 1:
        return False
    if node.op_type not in _EVALUATED and node.op_type not in MEANS:
        return False
    if node.op_type in MEANS and not weights_allowed:
        return False
    info = g.info(node.output[0])
    if info is None or not info.is_float:
        return False
    for slot, name in enumerate(node.input):
        if not name or name in inside:
            continue
        if node.op_type == "ReduceMean" and slot == 1 or node.op_type == "CastLike" and slot == 1:
            continue
        if not g.is_constant(name):
            return False
        if g.scalar(name) is None and not (weights_allowed and g.info(name) is not None):
            return False
    return True


def _closed_regions(g: Editor, source: str, nodes: list[onnx.NodeProto],
                    anchor: onnx.NodeProto) -> Iterable[_Region]:
    """Sub-regions ending at each node (latest first) that contain `anchor` and leak nothing."""
    by_output = {o: n for n in nodes for o in n.output}
    for end in reversed(nodes):
        members, stack = {}, [end]
        while stack:
            n = stack.pop()
            if id(n) in members:
                continue
            members[id(n)] = n
            stack.extend(by_output[i] for i in n.input if i in by_output)
        if id(anchor) not in members:
            continue
        chosen = [n for n in nodes if id(n) in members]
        inner = {o for n in chosen for o in n.output} - {end.output[0]}
        if any(o in g.outputs or any(id(c) not in members for c in g.consumers.get(o, []))
               for o in inner):
            continue
        yield _Region(source, chosen, end.output[0])


def _sources_above(g: Editor, name: str, depth: int = 6) -> list[str]:
    """Tensors from which `name` alone is computed by arithmetic with constants, nearest first."""
    found, roots = [], {name}
    for _ in range(depth + 1):
        if len(roots) == 1 and next(iter(roots)) not in found:
            found.append(next(iter(roots)))
        expanded = set()
        for tensor in roots:
            node = g.producer.get(tensor)
            if node is None or node.op_type not in _EVALUATED or g.is_constant(tensor):
                expanded.add(tensor)
            else:
                expanded.update(i for i in node.input if i and not g.is_constant(i))
        if expanded == roots:
            break
        roots = expanded
    return found


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


_ACTIVATIONS = (("Gelu", {"approximate": "none"}, _gelu, 20),
                ("Gelu", {"approximate": "tanh"}, _gelu_tanh, 20))
_PROBE = np.linspace(-4.0, 4.0, 33)
_PROBE_BACKEND = Probe()


def fuse_activations(g: Editor) -> bool:
    """0.5·x·(1 + erf(x/√2)) in any arrangement (and GELU's tanh form) → Gelu."""
    changed = False
    for anchor in g.of_type(GELU_CORES):
        if g.removed(anchor) or not _scaled(g, anchor.input[0]):
            continue  # GELU takes erf(x/√2) or tanh(√(2/π)·(...))
        for source in _sources_above(g, anchor.input[0]):
            region = _first_match(g, source, anchor, weights_allowed=False,
                                  match=lambda r: _match_activation(g, r))
            if region is not None:
                op_type, attributes, since = region[1]
                changed |= _substitute(g, region[0], op_type, attributes, since, [source])
                break
    return changed


def _scaled(g: Editor, name: str) -> bool:
    """Whether `name` is a product or quotient of something by a scalar constant."""
    node = g.producer.get(name)
    return node is not None and node.op_type in SCALINGS and any(
        g.scalar(i) is not None for i in node.input)


def _first_match(g: Editor, source: str, anchor: onnx.NodeProto, weights_allowed: bool, match):
    nodes = _grow(g, source, weights_allowed)
    if not any(n is anchor for n in nodes):
        return None
    for region in _closed_regions(g, source, nodes, anchor):
        found = match(region)
        if found is not None:
            return region, found
    return None


def _match_activation(g: Editor, region: _Region):
    try:
        y = np.reshape(_evaluate(g, region, _PROBE, {}), -1)
    except (KeyError, ValueError):
        return None
    for op_type, attributes, reference, since in _ACTIVATIONS:
        if y.shape == _PROBE.shape and np.allclose(y, reference(_PROBE), rtol=1e-4, atol=1e-6):
            return op_type, attributes, since
    return None


def fuse_layer_norms(g: Editor) -> bool:
    """(x − mean)/√(var + ε)·γ + β in any arrangement (tf2onnx writes 13 ops) → LayerNormalization."""
    changed = False
    for variance in g.of_type(MEANS):
        if g.removed(variance):
            continue
        mean = _mean_of_deviation(g, variance.input[0])
        if mean is None:
            continue
        source = mean.input[0]
        found = _first_match(g, source, mean, weights_allowed=True,
                             match=lambda r: _match_layer_norm(g, r))
        if found is not None:
            region, (axis, epsilon, scale, bias) = found
            inputs = [source, scale] + ([bias] if bias else [])
            changed |= _substitute(g, region, "LayerNormalization",
                                   {"axis": axis, "epsilon": epsilon}, 17, inputs)
    return changed


def _mean_of_deviation(g: Editor, squared: str) -> onnx.NodeProto | None:
    """The mean reduction m when `squared` is (x − m)², written as a product or a power of 2."""
    square = g.producer.get(squared)
    if square is None or square.op_type not in SQUARINGS or len(square.input) != 2:
        return None
    if square.op_type == "Mul" and square.input[0] != square.input[1] \
            or square.op_type == "Pow" and g.scalar(square.input[1]) != 2.0:
        return None
    deviation = g.producer.get(square.input[0])
    if deviation is None or deviation.op_type != "Sub":
        return None
    mean = g.producer.get(deviation.input[1])
    if mean is None or mean.op_type not in MEANS or mean.input[0] != deviation.input[0]:
        return None
    return mean


def _match_layer_norm(g: Editor, region: _Region):
    x_info = g.info(region.source)
    if x_info is None or not x_info.known or not x_info.is_float:
        return None
    rank = x_info.rank
    reduced = {_reduced_axes(g, n, rank) for n in region.nodes if n.op_type in MEANS}
    if len(reduced) != 1 or None in reduced:
        return None
    axes = reduced.pop()
    axis = axes[0] if axes else rank
    if axes != tuple(range(axis, rank)):
        return None
    normalized = x_info.dims[axis:]
    # a norm of a weight table (DeBERTa's relative embeddings) is constant throughout: its x and
    # what the region computes from it are not its γ or β
    computed = {region.source} | {o for n in region.nodes for o in n.output}
    weights = sorted({i for n in region.nodes for i in n.input
                      if i and i not in computed and g.is_constant(i) and g.scalar(i) is None
                      and not (n.op_type in LATER_INPUTS_NOT_DATA and i != n.input[0])})
    if not 1 <= len(weights) <= 2 or any(not _broadcasts_to(g.info(w), normalized) for w in weights):
        return None
    epsilons = sorted({g.scalar(i) for n in region.nodes for i in n.input if g.scalar(i) is not None
                       and 0 < g.scalar(i) < 0.1})
    rng = np.random.default_rng(0)
    if not all(isinstance(d, int) for d in normalized):
        return None  # a symbolic normalized dim: no probe of its size
    # Leading dims only repeat the rows: 3 of each (a symbol's too) shows the same math.
    probe_shape = tuple(min(d, 3) if isinstance(d, int) else 3
                        for d in x_info.dims[:axis]) + tuple(normalized)
    x = rng.normal(size=probe_shape) * rng.uniform(0.5, 2.0, size=probe_shape[:axis] + (1,) *
                                                    len(normalized)) + rng.normal()
    probes = {w: rng.uniform(0.5, 1.5, size=g.info(w).dims) for w in weights}
    try:
        y = _evaluate(g, region, x, probes)
    except (KeyError, ValueError):
        return None
    mean = x.mean(axis=axes, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    for scale, bias in itertools.permutations(weights + [None] * (2 - len(weights)), 2):
        if scale is None:
            continue
        for epsilon in epsilons:
            expected = (x - mean) / np.sqrt(variance + epsilon) * probes[scale] \
                + (probes[bias] if bias else 0.0)
            if np.shape(y) == expected.shape and np.allclose(y, expected, rtol=1e-6, atol=1e-9):
                return axis, float(epsilon), scale, bias
    return None


def _broadcasts_to(info: TensorInfo | None, normalized: tuple[int, ...]) -> bool:
    if info is None or not info.known:
        return False
    dims = list(info.dims)
    while dims and dims[0] == 1 and len(dims) > len(normalized):
        dims.pop(0)
    return tuple(dims) == tuple(normalized)


def _substitute(g: Editor, region: _Region, op_type: str, attributes: dict, since: int,
                inputs: list[str]) -> bool:
    """Replace `region` by one `op_type` node, or by its function body before opset `since`.

    A region that already does the run-time work of the replacement is left as it is.
    """
    body = None if g.opset >= since else _expanded(
        op_type, tuple(sorted(attributes.items())), since,
        tuple((g.info(i).dtype, g.info(i).shape) for i in inputs))
    if _same_work([op_type] if body is None else _run_time_ops(body), region.op_types()):
        return False
    replacement = [helper.make_node(op_type, inputs, [region.output], **attributes)] \
        if body is None else _instantiated(g, body, inputs, region.output)
    g.replace(region.nodes, [g.named_after(n, region.nodes[-1]) for n in replacement])
    return True


def _same_work(a: list[str], b: list[str]) -> bool:
    """Equal op lists, a two-operand Sum counted as the Add it is."""
    def norm(ops):
        return sorted("Add" if op == "Sum" else op for op in ops)
    return norm(a) == norm(b)


@memoized(maxsize=64)
def _expanded(op_type: str, attributes: tuple, since: int, inputs: tuple) -> onnx.ModelProto:
    """The op's ONNX function body for inputs of these (dtype, shape), with inferred shapes."""
    names = [f"input_{i}" for i in range(len(inputs))]
    call = helper.make_node(op_type, names, ["output"], **dict(attributes))
    infos = [TensorInfo(n, dtype, shape) for n, (dtype, shape) in zip(names, inputs)]
    return onnx.shape_inference.infer_shapes(expansion_model(call, since, infos))


def _run_time_ops(body: onnx.ModelProto) -> list[str]:
    """Op types of the body's nodes that depend on its inputs (the rest is constant work)."""
    live, ops = {i.name for i in body.graph.input}, []
    for node in body.graph.node:
        read = [i for slot, i in enumerate(node.input) if not (node.op_type == "CastLike" and slot)]
        if live & set(read):
            live.update(node.output)
            ops.append(node.op_type)
    return ops


def _instantiated(g: Editor, body: onnx.ModelProto, inputs: list[str],
                  output: str) -> list[onnx.NodeProto]:
    """The body's nodes wired to `inputs` and `output`, its other tensors renamed into the graph."""
    view = GraphView(body.graph)
    renamed = {f"input_{i}": name for i, name in enumerate(inputs)} | {"output": output}
    for node in body.graph.node:
        for o in node.output:
            if o not in renamed:
                renamed[o] = g.fresh(output)
                info = view.info(o)
                if info is not None:
                    g.set_info(renamed[o], info.dtype, info.shape)
    nodes = []
    for node in body.graph.node:
        copy = onnx.NodeProto()
        copy.CopyFrom(node)
        for field in (copy.input, copy.output):
            for i, name in enumerate(field):
                field[i] = renamed.get(name, name)
        if node.op_type == "Constant":
            g.register_constant(copy.output[0], view.value(node.output[0]))
        if node.op_type == "Sum" and len(node.input) == 2:
            copy.op_type = "Add"  # as exporters write it, so per-op tables line up
        nodes.append(copy)
    return nodes

