"""Control flow: a subgraph's cost times how often it runs."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import onnx

from onnxflops.costs.node import Node
from onnxflops.costs.registry import CONTROL_FLOW, Cost, Grads, backward, rule
from onnxflops.errors import Uncostable
from onnxflops.graph import INT64_MAX, TensorInfo, taken_branch


@rule("Loop", category=CONTROL_FLOW)
def loop(n: Node) -> Cost:
    """cost(body) × trip count M (the constant after binding); Σᵢ cost(body at trip i) where the
    body's shapes follow its trip number"""
    trips = trip_count(n)
    inputs = _body_inputs(n)
    try:
        body = n.subgraph_cost("body", inputs)
    except Uncostable:
        if not 0 < trips <= MAX_TRIPS_APART:
            raise
        # each trip's shapes read off its trip number (a gather of per-trip offsets, say)
        body = sum((n.subgraph_cost("body", inputs, _trip(i)) for i in range(1, trips)),
                   n.subgraph_cost("body", inputs, _trip(0)))
        return replace(body, detail={"trip_count": trips, "costed_per_trip": True})
    return replace(body.scaled(trips), detail={"trip_count": trips})


# The most trips a Loop's body is costed for one by one, where its shapes follow the trip number:
# each is an analysis of the body, so the time grows with the trip count read from the file.
MAX_TRIPS_APART = 256


def _body_inputs(n: Node) -> list[TensorInfo | None]:
    """The body's formal inputs: the trip number, the condition, the loop-carried values."""
    counters = [TensorInfo("", onnx.TensorProto.INT64, ()), TensorInfo("", onnx.TensorProto.BOOL, ())]
    return counters + [n.input_or_none(i) for i in range(2, n.num_inputs)]


def _trip(i: int) -> dict[int, np.ndarray]:
    return {0: np.array(i, dtype=np.int64)}


def trip_count(n: Node) -> int:
    m = n.value(0)
    if m is None or m.size != 1 or int(m) >= INT64_MAX:
        raise Uncostable("the Loop's trip count M is not a constant after binding the inputs")
    if int(m) < 0:
        raise Uncostable(f"the Loop's trip count M is {int(m)}: a count of runs cannot be negative")
    return int(m)


@backward("Loop")
def loop_backward(n: Node, grads: Grads) -> Cost:
    """backward of the body × trip count (Σ over trips where it was costed per trip), every
    loop-carried value carrying a gradient"""
    carried = frozenset(range(2, n.num_inputs))
    trips = trip_count(n)
    try:
        return n.subgraph_backward("body", carried).scaled(trips)
    except Uncostable:
        if not 0 < trips <= MAX_TRIPS_APART:
            raise
        return sum((n.subgraph_backward("body", carried, _trip(i)) for i in range(1, trips)),
                   n.subgraph_backward("body", carried, _trip(0)))


@rule("Scan", category=CONTROL_FLOW)
def scan(n: Node) -> Cost:
    """cost(body) × length of the scanned axis (× batch before opset 9)"""
    if n.opset < 9:
        return _batched_scan(n)
    scanned = n.attr("num_scan_inputs")
    if not 0 < scanned <= n.num_inputs:  # checked before anything is made `scanned` long
        raise Uncostable(f"num_scan_inputs is {scanned}, but the node has {n.num_inputs} inputs")
    states = n.num_inputs - scanned
    axes = n.attr("scan_input_axes") or [0] * scanned
    if len(axes) != scanned:
        raise Uncostable(f"scan_input_axes has {len(axes)} axes for {scanned} scanned inputs")
    first = n.input(states)
    axis = axes[0] % first.rank
    iterations = first.dims[axis]
    slices = []
    for i, ax in enumerate(axes):
        x = n.input(states + i)
        ax %= x.rank
        slices.append(TensorInfo("", x.dtype, x.dims[:ax] + x.dims[ax + 1:]))
    body = n.subgraph_cost("body", [n.input(i) for i in range(states)] + slices)
    return replace(body.scaled(iterations), detail={"iterations": iterations})


def _batched_scan(n: Node) -> Cost:
    """Scan-8: inputs sequence_lens (optional), states [B, ...], scanned [B, T, ...]; the body
    runs per batch row and step on the rows' slices: cost(body) × B × T, T the full length (the
    longest a sequence_lens allows)."""
    scanned = n.attr("num_scan_inputs")
    states = n.num_inputs - 1 - scanned
    if not 0 < scanned or states < 0:
        raise Uncostable(f"num_scan_inputs is {scanned}, but the node has {n.num_inputs} inputs")
    first = n.input(1 + states)
    if first.rank < 2:
        raise Uncostable("Scan-8's scanned inputs have a batch and a sequence axis")
    batch, steps = first.dims[:2]
    slices = [TensorInfo("", n.input(1 + i).dtype, n.input(1 + i).dims[1:]) for i in range(states)]
    slices += [TensorInfo("", x.dtype, x.dims[2:])
               for x in (n.input(1 + states + i) for i in range(scanned))]
    body = n.subgraph_cost("body", slices)
    return replace(body.scaled(batch * steps), detail={"iterations": steps, "batch": batch})


@backward("Scan")
def scan_backward(n: Node, grads: Grads) -> Cost:
    """backward of the body × iterations; states carry a gradient, scanned inputs as the model's"""
    states = n.num_inputs - n.attr("num_scan_inputs")
    first = n.input(states)
    axis = (n.attr("scan_input_axes") or [0])[0] % first.rank
    body = n.subgraph_backward("body", frozenset(range(states)) | grads)
    return body.scaled(first.dims[axis])


@rule("If", category=CONTROL_FLOW)
def if_(n: Node) -> Cost:
    """cost(branch taken) where the condition is known; else the more expensive branch (both
    are in the node's detail)"""
    taken = taken_branch(n.value(0))
    if taken is not None:  # the other cannot run: neither analysed nor costed
        return replace(n.subgraph_cost(taken, []), detail={"branch": taken})
    then, other = n.subgraph_cost("then_branch", []), n.subgraph_cost("else_branch", [])
    worst = _costlier(then, other)
    return replace(worst, detail={"then_branch": _summary(then), "else_branch": _summary(other)})


@backward("If")
def if_backward(n: Node, grads: Grads) -> Cost:
    """backward of the branch taken where the condition is known; else the more expensive of
    the two branches' backward"""
    taken = taken_branch(n.value(0))
    branches = [n.subgraph_backward(b, frozenset())
                for b in ([taken] if taken else ("then_branch", "else_branch"))]
    return _costlier(*branches)


def _costlier(*costs: Cost) -> Cost:
    """The branch an If costs: the most FLOPs, then the most integer work."""
    return max(costs, key=lambda c: (c.flops_under("default"), c.all_int_ops))


def _summary(c: Cost) -> dict:
    return {"macs": c.macs, "flops": c.flops_under("default"), "int_ops": c.all_int_ops}


@rule("SequenceMap", category=CONTROL_FLOW)
def sequence_map(n: Node) -> Cost:
    """Σ over the sequence's elements i of cost(body on element i of each sequence input)"""
    sequences = {i: n.scope.sequence(n.proto.input[i]) for i in range(n.num_inputs)
                 if n.scope.sequence(n.proto.input[i]) is not None}
    if 0 not in sequences:
        raise Uncostable("SequenceMap runs its body once per sequence element, and the length of "
                         "its sequence is not known: bind it (--input NAME=seq(LENGTH;DIMS))")
    length = len(sequences[0])
    if any(len(elements) != length for elements in sequences.values()):
        raise Uncostable("SequenceMap's sequences differ in length")
    total = Cost()
    for i in range(length):
        inputs = [sequences[k][i] if k in sequences else n.input_or_none(k)
                  for k in range(n.num_inputs)]
        total = total + n.subgraph_cost("body", inputs)
    return replace(total, detail={"iterations": length})
