"""Which constant nodes are the network's work and which are free: the constant-work policy.

A node whose every input is constant (GraphView marks them: the facts) is one of two things:

- **foldable**: floating-point work on the model's weights — a relative-position table projected
  through attention weights, learned queries through a Linear, a position-bias MLP over a stored
  coordinate table, weight normalization g·v/‖v‖, weight standardization (w − mean)/std, a
  LayerNorm or scaling of a learned table — or on a table of literals the graph builds: a
  sin-cos position table made from a Range (arange → outer products → sin/cos → concat, a
  detector's encoder), a rotary table a layer rebuilds in each call, a window, a mel filter
  bank, and the float work of the op that makes the table (a float Range). PyTorch runs it on
  every forward (FlopCounterMode, fvcore, thop count it), so it is counted in the totals; a
  runtime such as onnxruntime computes it once at load, so it is also reported apart as
  `foldable`.
- **free** (`constant_work`, not in the totals):
  - work that reads neither a weight nor a table: shape arithmetic on dims that binding made
    constant, arithmetic on scalars and on tensors of one value (a scale computed as
    1/sqrt(64), a mask from a tensor of ones the code made: each computes one value, a
    coefficient, however large its shape), a condition on positions (a causal mask made by
    comparing Ranges, and what is selected or computed from it);
  - work descended from an op that *initialises* weights (RandomNormal, RandomUniform, ...:
    seed 000, where TensorFlow's profiler counted a layer's random-normal initializer), which
    never runs in a forward pass: a draw shaped, scaled and shifted by literals;
  - (de)quantizing a weight: its storage format, which fused kernels read as stored;
  - work with no floating-point operation: moves that assemble weights (Slice, Concat,
    Transpose, Reshape, Gather, Cast of initializers; their bytes too, as the node that reads the
    result reads the weight's bytes already) and integer work on index tables.

A draw that meets a weight is no initialiser: noise a vocoder or a generator draws on each forward
and runs through its layers (UnivNet's `noise_sequence` through a Conv and a ConvTranspose), or
scales by a learned strength. That work, and all computed from it, is the network's: counted, and
neither foldable (the draw changes at each run, so no runtime computes it once) nor free.

An RNN's first step on a zero state (h0 times W_hh, once torch.export unrolls it) is such work
too: foldable, and counted, as it was.

A weight is a float initializer or Constant of more than one element: a scalar is a coefficient,
an integer tensor holds indices, axes or shapes, and a Constant node holding one value in every
element is a literal the code made (torch.ones(1, 16) traced), as ConstantOfShape's is. A table
is what a TABLE_MAKERS op (a Range, a window) makes from scalars and what is computed from it;
integer work on it (an int64 Range, index arithmetic) has no floating-point operation, so counts
nothing either way.
The params a foldable node reads are credited, as before, to the network node that reads its
result (GraphView.weight_sources). Bodies (Loop, If, Scan, a function's) apply the same policy to
their own constant nodes: a window's function body counts its Range and the table's arithmetic.
"""

from __future__ import annotations

from onnxflops.graph import GraphView, NodeRow, bodies, free_names, holds_subgraph
from onnxflops.ops import COMPARISONS, INITIALISERS, STORAGE_FORMATS, TABLE_MAKERS

# What a constant tensor was computed from: weights; a random draw (initialising, free); a draw
# and weights together (the network's work on noise, each forward); a table of literals.
_WEIGHT, _INITIALISED, _ON_A_DRAW, _TABLE = 1, 2, 4, 8


class ConstantWork:
    """The policy for one graph's constant nodes, its origins found in one pass in graph order."""

    def __init__(self, graph: GraphView):
        self.graph = graph
        self._origins: dict[str, int] = {}
        for row in graph.rows():
            if graph.is_constant_row(row):
                self._trace(row)
        self._into_data = self._reaching_data()

    def _reaching_data(self) -> set[str]:
        """Constant float tensors whose values enter the network's data: read by a node that is
        not constant, left as the graph's output, read by a body (Loop, If, Scan) from around
        it, or computed into one that is. A table whose float values all end as integers (a
        nearest resize's source positions, floored and cast to gather indices) is addressing,
        as a comparison of positions is a condition: its arithmetic is no work on values."""
        graph = self.graph
        reached = {o.name for o in graph.graph.output}
        for row in graph.rows():
            if not graph.is_constant_row(row):
                reached.update(name for name in row.inputs if name)
                if holds_subgraph(row.proto):
                    for body in bodies(row.proto):
                        reached |= free_names(body)
        for row in reversed(graph.rows()):
            if graph.is_constant_row(row) and any(name in reached for name in row.outputs):
                info = [graph.info(name) for name in row.outputs if name in reached]
                if any(i is None or i.is_float for i in info):
                    reached.update(name for name in row.inputs if name)
        return reached

    def _trace(self, row: NodeRow) -> None:
        _, op_type, domain, inputs, outputs = row
        if op_type == "Constant" and not domain:
            origin = _WEIGHT if self._is_weight(outputs[0]) and not self._is_splat(outputs[0]) \
                else 0
        elif op_type in INITIALISERS and not domain:
            origin = _INITIALISED  # its inputs give a shape, a type or odds, not the values drawn
        elif op_type in TABLE_MAKERS and not domain:
            origin = _TABLE  # from scalars, a table of positions (of any length: a symbol's)
        else:
            origin = self._read_origin(row)
            if origin & _ON_A_DRAW or origin & _WEIGHT and origin & _INITIALISED:
                origin = _ON_A_DRAW
        for name in outputs:
            if name:
                self._origins[name] = origin

    def origin(self, name: str) -> int:
        found = self._origins.get(name)
        if found is not None:
            return found
        return _WEIGHT if self.graph.initializer(name) is not None and self._is_weight(name) else 0

    def _is_weight(self, name: str) -> bool:
        info = self.graph.info(name)
        return info is not None and info.is_float and info.concrete and info.numel > 1

    def _is_splat(self, name: str) -> bool:
        """Whether a Constant node's tensor holds one value in every element: a literal the code
        made (torch.ones(1, 16): Longformer's attention mask where none is given), not a weight
        stored in the graph. Where its value is not held (too large), a weight."""
        value = self.graph.value(name)
        return value is not None and value.size > 0 and bool((value == value.flat[0]).all())

    def _read_origin(self, row: NodeRow) -> int:
        """The origins of what a node reads, as its work uses them: a comparison of positions
        makes a condition (a causal mask), not a table."""
        origin = self._input_origin(row.inputs)
        if row.op_type in COMPARISONS and not row.domain:
            origin &= ~_TABLE
        return origin

    def _reaches_data(self, row: NodeRow) -> bool:
        return any(name in self._into_data for name in row.outputs if name)

    def _input_origin(self, inputs: list[str]) -> int:
        origin = 0
        for name in inputs:
            if name:
                origin |= self.origin(name)
        return origin

    def may_fold(self, row: NodeRow) -> bool:
        """Whether a constant node works on weights or on a table of literals (not on scalars,
        one-value tensors or shapes alone) and does not descend from an initialiser op: foldable
        if its cost holds floating-point work."""
        if row.op_type in INITIALISERS and not row.domain or row.op_type in STORAGE_FORMATS:
            return False
        if row.op_type in TABLE_MAKERS and not row.domain:
            # its own work makes the table: float work (an integer Range's is on shapes)
            info = self.graph.info(row.outputs[0])
            return info is not None and info.is_float and self._reaches_data(row)
        origin = self._read_origin(row)
        if origin & _TABLE and not origin & _WEIGHT and not self._reaches_data(row):
            return False  # addressing: the table's values end as indices
        return bool(origin & (_WEIGHT | _TABLE)) and not origin & (_INITIALISED | _ON_A_DRAW)

    def works_on_a_draw(self, row: NodeRow) -> bool:
        """Whether a constant node computes with a random draw and the weights, or with what
        such work computed: the network's work on each forward, counted and not foldable."""
        return any(self._origins.get(name) == _ON_A_DRAW for name in row.outputs if name)


def is_foldable_cost(macs, flops) -> bool:
    """A cost that holds floating-point work (MACs or FLOPs), not only moves or integer ops."""
    return macs != 0 or flops != 0
