"""What a Keras model computes, read from its layers: an oracle that never goes through ONNX.

Keras has no FLOP counter of its own. This walk traces the model once (TensorFlow's graph mode:
shapes only, nothing computed) and records every layer call, nested models and the layers inside
custom layers included, with its input and output shapes. The MACs of each contraction layer come
from its config and those shapes:

- Dense: rows · in · units; EinsumDense: the product of every index of its equation;
- Conv1D/2D/3D: output elements · (in channels / groups) · kernel; DepthwiseConv: output elements
  · kernel; SeparableConv: its depthwise and its pointwise parts; Conv*Transpose: input elements
  · out channels · kernel;
- MultiHeadAttention (and its subclasses): batch · heads · Tq · Tk · (key_dim + value_dim) for
  scores and context, beside its projections (EinsumDense layers of its own, walked);
  GroupQueryAttention the same over its query heads; Attention / AdditiveAttention their
  products with the values (and, for dot scores, with the keys);
- SimpleRNN / GRU / LSTM (alone, in RNN(cell) or Bidirectional): steps · batch · gates · units ·
  (input + units), gates 1, 3 and 4.

A layer without a rule is walked into; products that custom layers take with `keras.ops`
(einsum, matmul, dot_product_attention: a keras-hub model's attention scores; conv and
depthwise_conv: output elements · the kernel's other dims) or with `@` on the traced tensors are
counted from their operands' shapes (an outer product of two vectors as the matmul of inner
size 1 Keras's TensorFlow backend runs it as); a product of constants alone (a table from
literals and static sizes) is folded before anything runs, as in the count: free. Work whose
result reaches no output of the traced forward
pass is not counted: it is never run. Params and buffers are Keras's own: the elements of `trainable_weights`
and of `non_trainable_weights`; unused params are the trainable weights the traced forward pass
never reads (a backbone's untied output embedding). No weight value is read: a model built in
`keras.StatelessScope(initialize_variables=False)`, holding none, is walked too.

It imports Keras and TensorFlow only: nothing of the counting pipeline, which it checks.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass
class KerasOracle:
    macs: int
    params: int  # elements of the trainable weights
    buffers: int  # elements of the non-trainable weights
    unused_params: int  # elements of the trainable weights the forward pass never reads
    by_layer: dict[str, int] = field(default_factory=dict)  # layer path → MACs (all its calls)


def keras_oracle(model, inputs: Mapping[str, tuple] | None = None, *, batch: int = 1) -> KerasOracle:
    """The MACs, params and buffers of `model`, at the input shapes `inputs` gives by input name
    (the others as declared, an open leading dim bound to `batch`)."""
    import keras
    import tensorflow as tf

    shapes = input_shapes(model, inputs, batch)
    specs = [tf.TensorSpec(shape, tf.as_dtype(str(t.dtype))) for t, shape in
             zip(model.inputs, shapes)]
    structure = model.input if model.input is not None else model.inputs
    walk = _Walk()
    read: set[int] = set()
    made: dict[int, str] = {}  # id(variable) → the op its value is read from in the trace

    def call(*xs):
        # Every variable reads as zeros made inside the trace (a fill op, no memory) and each read
        # is noted: the walk needs no weight value, and a model built without them
        # (`keras.StatelessScope(initialize_variables=False)`) is walked too.
        zeros = [(v, tf.zeros(tuple(v.shape), dtype=v.dtype)) for v in model.variables]
        made.update((id(v), value.op.name) for v, value in zeros)
        walk.weight_ops.update(made.values())
        with keras.StatelessScope(state_mapping=zeros, initialize_variables=False) as scope:
            value_of = scope.get_current_value

            def reading(variable):
                read.add(id(variable))
                return value_of(variable)

            scope.get_current_value = reading
            return model(keras.tree.pack_sequence_as(structure, list(xs)), training=False)

    with walk.recording():
        concrete = tf.function(call).get_concrete_function(*specs)
    live = live_ops(concrete.outputs)
    walk.keep_live(concrete.graph, live)
    # A weight read only by work that reaches no output is unused too (an encoder stage past
    # the level a head reads).
    unread = [w for w in model.trainable_weights
              if id(w) not in read or made.get(id(w)) not in live]
    return KerasOracle(sum(walk.macs.values()), weight_elements(model.trainable_weights),
                       weight_elements(model.non_trainable_weights), weight_elements(unread),
                       dict(walk.macs))


def live_ops(outputs) -> set[str]:
    """The names of the ops of a traced graph that some of `outputs` depends on."""
    live, stack = set(), [t.op for t in outputs if t is not None]
    while stack:
        op = stack.pop()
        if op.name not in live:
            live.add(op.name)
            stack.extend(t.op for t in op.inputs)
            stack.extend(op.control_inputs)
    return live


def input_shapes(model, inputs: Mapping[str, tuple] | None, batch: int = 1) -> list[tuple]:
    """Each of `model.inputs`' shapes: given by its Keras name, else declared with an open
    leading dim bound to `batch`. A dim still open is a ValueError naming the input."""
    given = dict(inputs or {})
    shapes = []
    for tensor in model.inputs:
        shape = tuple(given.pop(tensor.name)) if tensor.name in given else tuple(tensor.shape)
        if shape and shape[0] is None:
            shape = (batch, *shape[1:])
        if None in shape:
            raise ValueError(f"input '{tensor.name}' has an open dim: {shape}")
        shapes.append(shape)
    if given:
        raise ValueError(f"no input named {sorted(given)} (inputs: "
                         f"{[t.name for t in model.inputs]})")
    return shapes


def weight_elements(weights) -> int:
    """Elements of `weights`, each variable once."""
    return sum(math.prod(w.shape) for w in {id(w): w for w in weights}.values())


def dense_macs(input_shape, units: int) -> int:
    """rows · in · units: each output row is `units` dot products of length `in`."""
    return math.prod(input_shape[:-1]) * input_shape[-1] * units


def einsum_macs(equation: str, *shapes) -> int:
    """The product of the sizes of every index of `equation` ("ab,bc->ac"), where some index is
    summed; 0 for a product that sums nothing (an outer or elementwise product)."""
    operands, _, output = equation.replace(" ", "").partition("->")
    terms = operands.split(",")
    sizes: dict[str, int] = {}
    for term, shape in zip(terms, shapes):
        if "..." in term:
            before, after = term.split("...")
            spread = shape[len(before):len(shape) - len(after)]
            sizes["..."] = max(sizes.get("..."), math.prod(spread)) if "..." in sizes \
                else math.prod(spread)
            shape = tuple(shape[:len(before)]) + tuple(shape[len(shape) - len(after):])
            term = before + after
        for letter, dim in zip(term, shape):
            sizes[letter] = max(sizes.get(letter, 1), int(dim))
    if not output and "->" not in equation:  # implicit output: the letters seen once
        letters = "".join(terms).replace("...", "")
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    summed = set("".join(terms).replace("...", "")) - set(output)
    return math.prod(sizes.values()) if summed else 0


def runs_as_matmul(equation: str) -> bool:
    """Whether an einsum is an outer product of two vectors ("i,j->ij"), which Keras's
    TensorFlow backend runs as a matmul of a column by a row (inner size 1: one MAC an
    output)."""
    terms, _, output = equation.replace(" ", "").partition("->")
    vectors = terms.split(",")
    return len(vectors) == 2 and all(len(v) == 1 for v in vectors) and (
        vectors[0] != vectors[1]) and output == vectors[0] + vectors[1]


def matmul_macs(a_shape, b_shape) -> int:
    """batch · n · k · m for (…, n, k) @ (…, k, m); a 1-D operand is a row or column."""
    a, b = list(a_shape), list(b_shape)
    if len(a) == 1:
        a = [1, *a]
    if len(b) == 1:
        b = [*b, 1]
    batch_a, batch_b = a[:-2], b[:-2]
    width = max(len(batch_a), len(batch_b))
    batch_a = [1] * (width - len(batch_a)) + batch_a
    batch_b = [1] * (width - len(batch_b)) + batch_b
    return math.prod(max(x, y) for x, y in zip(batch_a, batch_b)) * a[-2] * a[-1] * b[-1]


def conv_macs(output_shape, in_channels: int, groups: int, kernel_size) -> int:
    """output elements · (in channels / groups) · kernel elements."""
    return math.prod(output_shape) * (in_channels // groups) * math.prod(kernel_size)


def conv_transpose_macs(input_shape, filters: int, kernel_size) -> int:
    """input elements · out channels · kernel elements: each input element is scattered through
    the kernel into every output channel."""
    return math.prod(input_shape) * filters * math.prod(kernel_size)


def recurrent_macs(batch: int, steps: int, input_dim: int, units: int, gates: int) -> int:
    """steps · batch · gates · units · (input + units): the input and the recurrent products."""
    return steps * batch * gates * units * (input_dim + units)


def attention_macs(batch: int, heads: int, query_steps: int, key_steps: int, key_dim: int,
                   value_dim: int) -> int:
    """batch · heads · Tq · Tk · (key_dim + value_dim): scores, then their product with values."""
    return batch * heads * query_steps * key_steps * (key_dim + value_dim)


_GATES = {"SimpleRNNCell": 1, "GRUCell": 3, "LSTMCell": 4}


def _shape(value) -> tuple | None:
    shape = getattr(value, "shape", None)
    if shape is None:
        return None
    try:
        return tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        return None


def _first_shape(value) -> tuple | None:
    if isinstance(value, (list, tuple)):
        return _first_shape(value[0]) if value else None
    if isinstance(value, Mapping):
        return _first_shape(next(iter(value.values()))) if value else None
    return _shape(value)


def _channels(shape: tuple, layer) -> int:
    return shape[-1] if getattr(layer, "data_format", "channels_last") == "channels_last" \
        else shape[1]


def _spatial(shape: tuple, layer) -> tuple:
    return shape[1:-1] if getattr(layer, "data_format", "channels_last") == "channels_last" \
        else shape[2:]


def _cell_macs(cell, batch: int, steps: int, input_dim: int) -> int | None:
    kind = type(cell).__name__
    if kind == "StackedRNNCells":
        total = 0
        for inner in cell.cells:
            macs = _cell_macs(inner, batch, steps, input_dim)
            if macs is None:
                return None
            total += macs
            input_dim = inner.units
        return total
    for base in type(cell).__mro__:
        if base.__name__ in _GATES:
            return recurrent_macs(batch, steps, input_dim, cell.units, _GATES[base.__name__])
    return None


def layer_macs(layer, args: tuple, kwargs: dict, output) -> int | None:
    """The MACs of one call of `layer` by its rule; None for a layer without a rule."""
    import keras

    layers = keras.layers
    x = _first_shape(args[0]) if args else _first_shape(next(iter(kwargs.values()), None))
    out = _first_shape(output)
    if x is None:
        return None
    if isinstance(layer, layers.Dense):
        return dense_macs(x, layer.units)
    if isinstance(layer, layers.EinsumDense):
        return einsum_macs(layer.equation, x, _shape(layer.kernel))
    if isinstance(layer, (layers.DepthwiseConv1D, layers.DepthwiseConv2D)):
        return math.prod(out) * math.prod(layer.kernel_size)
    if isinstance(layer, (layers.SeparableConv1D, layers.SeparableConv2D)):
        middle = _channels(x, layer) * layer.depth_multiplier
        spatial = out[0] * math.prod(_spatial(out, layer))
        return spatial * middle * (math.prod(layer.kernel_size) + layer.filters)
    if isinstance(layer, (layers.Conv1DTranspose, layers.Conv2DTranspose, layers.Conv3DTranspose)):
        return conv_transpose_macs(x, layer.filters, layer.kernel_size)
    if isinstance(layer, (layers.Conv1D, layers.Conv2D, layers.Conv3D)):
        return conv_macs(out, _channels(x, layer), layer.groups, layer.kernel_size)
    if isinstance(layer, layers.MultiHeadAttention) and not computes_own_attention(layer):
        query = x
        value = _shape(args[1]) if len(args) > 1 else _shape(kwargs.get("value"))
        key = _shape(kwargs.get("key")) if kwargs.get("key") is not None else value
        key = key if key is not None else query
        return attention_macs(query[0], layer.num_heads, math.prod(query[1:-1]),
                              math.prod(key[1:-1]), layer.key_dim,
                              layer.value_dim or layer.key_dim)
    gqa = getattr(layers, "GroupQueryAttention", None)
    if gqa is not None and isinstance(layer, gqa):
        value = _shape(args[1]) if len(args) > 1 else _shape(kwargs.get("value"))
        return attention_macs(x[0], layer.num_query_heads, math.prod(x[1:-1]),
                              math.prod(value[1:-1]), layer.head_dim, layer.head_dim)
    if isinstance(layer, (layers.Attention, layers.AdditiveAttention)):
        parts = args[0] if isinstance(args[0], (list, tuple)) else args
        query, value = _shape(parts[0]), _shape(parts[1])
        key = _shape(parts[2]) if len(parts) > 2 else value
        steps = query[0] * query[1] * value[1]
        scores = steps * query[-1] if type(layer) is not layers.AdditiveAttention and \
            getattr(layer, "score_mode", "dot") == "dot" else 0
        return scores + steps * value[-1]
    if isinstance(layer, layers.RNN) and len(x) == 3:
        batch, steps = (x[1], x[0]) if getattr(layer, "time_major", False) else (x[0], x[1])
        macs = _cell_macs(layer.cell, batch, steps, x[2])
        if macs is not None:
            return macs
    return None


def computes_own_attention(layer) -> bool:
    """A MultiHeadAttention subclass with a call or an attention step of its own (relative
    positions, segments, a cache): its products are counted as it takes them (keras.ops einsum,
    matmul, fused attention), not by the formula."""
    import keras

    base = keras.layers.MultiHeadAttention
    return isinstance(layer, base) and any(
        getattr(type(layer), method) is not getattr(base, method)
        for method in ("call", "_compute_attention"))


class _Walk:
    """Records the MACs of every layer call and of the products custom layers take."""

    def __init__(self):
        self.macs: dict[str, int] = {}
        self.quiet = 0  # inside a layer whose rule covers its inside, or a product counted
        self.results: list[tuple[str, int, object]] = []  # (where, MACs, what it computed)
        self.weight_ops: set[str] = set()  # the ops each weight is read from in the trace

    def einsum_macs(self, equation: str, *operands) -> int:
        """`einsum_macs`, but an outer product of two vectors that reads an input or a weight
        is the matmul of inner size 1 Keras's TensorFlow backend runs it as (`runs_as_matmul`):
        one MAC an output. One of constants alone (a rotary table from literals) is folded
        before anything runs, as in the count: free."""
        shapes = [_shape(o) for o in operands]
        if runs_as_matmul(equation) and any(self.reads_inputs_or_weights(o) for o in operands):
            return math.prod(shapes[0]) * math.prod(shapes[1])
        return einsum_macs(equation, *shapes)

    def matmul_macs(self, a, b) -> int:
        """`matmul_macs`, but a product of constants alone (D-FINE's sin-cos position table, from
        ranges as long as the feature map's static height and width) is folded before anything
        runs, as in the count: free."""
        if not any(self.reads_inputs_or_weights(o) for o in (a, b)):
            return 0
        return matmul_macs(_shape(a), _shape(b))

    def reads_inputs_or_weights(self, tensor) -> bool:
        """Whether an operand is a weight (a variable a layer passes as it is), or a traced
        tensor that depends on an input of the trace (a placeholder) or on a weight's read
        (`weight_ops`)."""
        import keras

        if isinstance(tensor, keras.Variable):
            return True
        stack, seen = [getattr(tensor, "op", None)], set()
        while stack:
            op = stack.pop()
            if op is None or op.name in seen:
                continue
            seen.add(op.name)
            if op.type == "Placeholder" or op.name in self.weight_ops:
                return True
            stack.extend(t.op for t in op.inputs)
        return False

    def add(self, where: str, macs: int, result=None) -> None:
        self.macs[where] = self.macs.get(where, 0) + int(macs)
        self.results.append((where, int(macs), result))

    def keep_live(self, graph, live: set[str]) -> None:
        """Drop the work whose result the traced forward pass never uses (Qwen3.5's last state
        update, computed and returned only on request): what reaches no output (`live`: the
        names of the ops that do) is not run. A result in another graph (a loop's body) is
        kept."""
        self.macs = {}
        for where, macs, result in self.results:
            ops = [t.op for t in _tensors(result) if getattr(t, "graph", None) is graph]
            if not ops or any(op.name in live for op in ops):
                self.macs[where] = self.macs.get(where, 0) + macs

    @contextlib.contextmanager
    def recording(self):
        from keras.src import backend
        from keras.src.layers.layer import Layer

        walk = self
        original_call = Layer.__call__
        stack: list[str] = []

        def call(layer, *args, **kwargs):
            if walk.quiet:
                return original_call(layer, *args, **kwargs)
            stack.append(getattr(layer, "path", None) or layer.name)
            try:
                output = original_call(layer, *args, **kwargs)
            finally:
                stack.pop()
            return output

        def layer_call(layer, *args, **kwargs):
            if walk.quiet:
                return original_call(layer, *args, **kwargs)
            path = getattr(layer, "path", None) or layer.name
            # A rule's MACs need the output shape: the call runs first, quiet where the rule
            # covers the layer's inside.
            probe = _RuleProbe(layer)
            if probe.covers_inside:
                walk.quiet += 1
                try:
                    output = original_call(layer, *args, **kwargs)
                finally:
                    walk.quiet -= 1
            else:
                walk.quiet_products += probe.counts_products
                try:
                    output = call(layer, *args, **kwargs)
                finally:
                    walk.quiet_products -= probe.counts_products
            macs = layer_macs(layer, args, kwargs, output)
            if macs is not None:
                walk.add(path, macs, output)
            return output

        import tensorflow as tf

        walk.quiet_products = 0
        # Each product's MACs from its operands, or (a convolution) from its operands and result.
        products = [(backend.numpy, "einsum", lambda eq, *ops, **_: walk.einsum_macs(eq, *ops)),
                    (backend.numpy, "matmul", lambda a, b, **_: walk.matmul_macs(a, b)),
                    (backend.nn, "dot_product_attention", _fused_attention_macs),
                    # `a @ b` on the traced tensors: a product no keras.ops call sees
                    (tf.Tensor, "__matmul__", lambda a, b: walk.matmul_macs(a, b)),
                    (tf.Tensor, "__rmatmul__", lambda a, b: walk.matmul_macs(b, a)),
                    # keras.ops convolutions a custom layer takes (Qwen3.5's causal conv)
                    (backend.nn, "conv", _ResultMacs(lambda out, x, kernel, *_, **__: math.prod(
                        _shape(out)) * math.prod(_shape(kernel)[:-1]))),
                    (backend.nn, "depthwise_conv", _ResultMacs(
                        lambda out, x, kernel, *_, **__: math.prod(_shape(out)) * math.prod(
                            _shape(kernel)[:-2])))]
        saved = [(module, name, getattr(module, name)) for module, name, _ in products]

        def counting(function, macs_of, name):
            def product(*args, **kwargs):
                if walk.quiet or walk.quiet_products:
                    return function(*args, **kwargs)
                where = (stack[-1] if stack else "") + f"/{name}"
                walk.quiet += 1
                result = None
                try:
                    result = function(*args, **kwargs)
                    return result
                finally:
                    walk.quiet -= 1
                    try:
                        macs = macs_of(result, *args, **kwargs) if isinstance(
                            macs_of, _ResultMacs) else macs_of(*args, **kwargs)
                    except (TypeError, ValueError, IndexError):
                        macs = None
                    if macs is not None:
                        walk.add(where, macs, result)
            return product

        Layer.__call__ = layer_call
        for (module, name, function), (_, _, macs_of) in zip(saved, products):
            setattr(module, name, counting(function, macs_of, name))
        try:
            yield
        finally:
            Layer.__call__ = original_call
            for module, name, function in saved:
                setattr(module, name, function)


class _ResultMacs:
    """A product's MACs read from its result as well as its operands: `macs(result, *args)`."""

    def __init__(self, macs):
        self.macs = macs

    def __call__(self, result, *args, **kwargs):
        return self.macs(result, *args, **kwargs)


def _tensors(value) -> list:
    """The tensors in a result (one, or a structure of them)."""
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, Mapping):
        return [t for v in value.values() for t in _tensors(v)]
    return [value] if hasattr(value, "op") else []


def _fused_attention_macs(query, key, value, *args, **kwargs) -> int:
    """(B, Tq, H, D) queries against (B, Tk, Hkv, D) keys and (B, Tk, Hkv, Dv) values."""
    q, k, v = _shape(query), _shape(key), _shape(value)
    return attention_macs(q[0], q[2], q[1], k[1], q[3], v[3])


class _RuleProbe:
    """How a layer's rule treats its inside, known before the call: a contraction or recurrent
    layer's rule covers it all; an attention layer's covers its products, not its projections."""

    def __init__(self, layer):
        import keras

        layers = keras.layers
        leaves = (layers.Dense, layers.EinsumDense, layers.Conv1D, layers.Conv2D, layers.Conv3D,
                  layers.DepthwiseConv1D, layers.DepthwiseConv2D, layers.SeparableConv1D,
                  layers.SeparableConv2D, layers.Conv1DTranspose, layers.Conv2DTranspose,
                  layers.Conv3DTranspose)
        attention = tuple(a for a in (layers.MultiHeadAttention, layers.Attention,
                                      layers.AdditiveAttention,
                                      getattr(layers, "GroupQueryAttention", None)) if a)
        recurrent = isinstance(layer, layers.RNN) and _cell_macs(layer.cell, 1, 1, 1) is not None
        self.covers_inside = isinstance(layer, leaves) or recurrent
        self.counts_products = int(isinstance(layer, attention)
                                   and not computes_own_attention(layer))
