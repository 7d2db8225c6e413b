"""Which executed node did the work of which counted node.

onnxruntime fuses, splits and renames nodes (Conv+Relu → FusedConv or an NCHWc Conv between
reorders, MatMul+Add → Gemm, LayerNorm arithmetic → LayerNormalization, ...) and keeps no map
back. Its optimized model still names the tensors between fused regions as the original graph
did (or, for NCHWc nodes, names the node after the tensor it computes in blocked layout): a
tensor both graphs compute is a cut point. Cutting each graph at those shared tensors
splits it into regions; a counted region and an executed region that compute the same shared
tensor did the same work. Linking them (transitively) gives groups in which every counted node
belongs to exactly one group, and a group with no executed node is work onnxruntime folded to a
constant or removed at load time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

import onnx


@dataclass
class Group:
    counted: list[int] = field(default_factory=list)  # indices into the counted nodes
    executed: list[int] = field(default_factory=list)  # indices into the executed graph's nodes
    deployed: list[int] = field(default_factory=list)  # indices into the deployed graph's nodes


def match(counted: Sequence[onnx.NodeProto], executed: onnx.GraphProto,
          deployed: onnx.GraphProto | None = None) -> list[Group]:
    """Groups in execution order; those that onnxruntime does not execute come last.

    With `deployed`, `executed` is onnxruntime's optimization of that graph (the one the
    framework's own export gives a user: constants folded, BatchNorm folded into its conv), not of
    the counted one: the three graphs are cut at the tensors all three compute, and linked through
    it. A group with counted nodes and no deployed node is work the export folded away.
    """
    runs = list(executed.node)
    graphs = [list(counted), *([list(deployed.node)] if deployed is not None else []), runs]
    # Constants do not tie a producer to its consumer: the export (deployed initializers) or
    # onnxruntime at load time (executed initializers) did that work once, not in the consumer.
    folded = {t.name for t in executed.initializer}
    if deployed is not None:
        folded |= {t.name for t in deployed.initializer}
    # The counted graph's names are another export's where the executed graph is the deployed one.
    folded_counted = {t for t in folded if not numbered(t)} if deployed is not None else folded
    producers = [_producers(nodes, {}) for nodes in graphs[:-1]]
    aliases = _layout_aliases(runs, producers[-1])  # against the graph onnxruntime optimized
    producers.append(_producers(runs, aliases))
    shared = set.intersection(*(set(p) for p in producers))
    if deployed is not None:  # two exports: only the names both take from the model are alike
        shared = {t for t in shared if not numbered(t)}
    links = _UnionFind()
    for side, (nodes, producer) in enumerate(zip(graphs, producers)):
        alias = aliases if side == len(graphs) - 1 else {}
        for i, node in enumerate(nodes):
            links.add((side, i))
            for tensor in (alias.get(t, t) for t in node.input):
                if tensor in producer and tensor not in shared \
                        and tensor not in (folded_counted if side == 0 else folded):
                    links.union((side, producer[tensor]), (side, i))
    for tensor in shared:
        for side in range(1, len(graphs)):
            links.union((0, producers[0][tensor]), (side, producers[side][tensor]))
    groups: dict[tuple, Group] = {}
    last = len(graphs) - 1
    for side, i in links.items():
        group = groups.setdefault(links.find((side, i)), Group())
        (group.counted if side == 0 else group.executed if side == last
         else group.deployed).append(i)
    for g in groups.values():
        g.counted.sort()
        g.executed.sort()
        g.deployed.sort()
    return sorted(groups.values(), key=lambda g: (not g.executed, g.executed[:1] or g.counted[:1]))


# Names an exporter numbers as it goes (onnxscript's val_12, TorchScript's onnx::Conv_12,
# tf2onnx's Const__12): two exports of one model may give one to different tensors.
_NUMBERED = re.compile(r"val_\d+|onnx::.*\d|.*__\d+")


def numbered(name: str) -> bool:
    """Whether an exporter numbered this tensor name rather than taking it from the model."""
    return _NUMBERED.fullmatch(name) is not None


def boundary(group: Sequence[int], counted: Sequence[onnx.NodeProto],
             consumers: dict[str, set[int]], graph_outputs: set[str]) -> tuple[set, set]:
    """(tensors read from outside, tensors written for outside) of a group of counted nodes:
    what a fused kernel moves, its intermediates staying in registers and caches."""
    members = set(group)
    produced: set[str] = set()
    read: set[str] = set()
    for i in group:
        read.update(t for t in counted[i].input if t and t not in produced)
        produced.update(t for t in counted[i].output if t)
    written = {t for t in produced
               if t in graph_outputs or not consumers.get(t, set()) <= members}
    return read - produced, written


def consumers_of(nodes: Sequence[onnx.NodeProto]) -> dict[str, set[int]]:
    found: dict[str, set[int]] = {}
    for i, node in enumerate(nodes):
        for t in node.input:
            found.setdefault(t, set()).add(i)
    return found


def _producers(nodes: Sequence[onnx.NodeProto], aliases: dict[str, str]) -> dict[str, int]:
    return {aliases.get(t, t): i for i, node in enumerate(nodes) for t in node.output if t}


def _layout_aliases(runs: Sequence[onnx.NodeProto], counted: dict[str, int]) -> dict[str, str]:
    """Executed tensors that are counted tensors in another memory layout.

    onnxruntime's NCHWc transformer names each blocked-layout node after the tensor it computes
    (`<tensor>_nchwc`). Without these cut points a whole chain of NCHWc convs would be one region.
    Where a reorder writes the original tensor back, that reorder is its producer instead.
    """
    written = {t for node in runs for t in node.output}
    aliases = {}
    for node in runs:
        original = node.name.removesuffix("_nchwc")
        if node.domain == "com.microsoft.nchwc" and original != node.name and node.output \
                and original in counted and original not in written:
            aliases[node.output[0]] = original
    return aliases


class _UnionFind:
    def __init__(self):
        self.parent: dict = {}

    def add(self, key) -> None:
        self.parent.setdefault(key, key)

    def find(self, key):
        root = key
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[key] != root:
            self.parent[key], key = root, self.parent[key]
        return root

    def union(self, a, b) -> None:
        self.parent[self.find(a)] = self.find(b)

    def items(self) -> list:
        return list(self.parent)
