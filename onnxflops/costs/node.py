"""The view of one node that a cost rule receives."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import onnx
import onnx.defs

from onnxflops.caches import memoized
from onnxflops.costs.cost import Cost
from onnxflops.errors import OnnxFlopsError, Uncostable
from onnxflops.graph import GraphView, TensorInfo, domain_key, format_shape
from onnxflops.ops import AXIS_WITHIN_INPUT_RANK


class Engine(Protocol):
    """What rules of composite ops (fused ops, control flow, function bodies) call back into: the
    counter, which holds the cost table, so that a rule never reaches for the table itself."""

    def op_cost(self, node: "Node") -> Cost: ...

    def subgraph_cost(self, node: "Node", attr: str, inputs: list[TensorInfo | None],
                      values: dict[int, np.ndarray] | None = None) -> Cost: ...

    def function_cost(self, node: "Node") -> Cost: ...

    def subgraph_backward(self, node: "Node", attr: str, formal_grads: frozenset[int],
                          values: dict[int, np.ndarray] | None = None) -> Cost: ...

    def function_backward(self, node: "Node", grads: frozenset[int]) -> Cost: ...

    def differentiated_backward(self, node: "Node", xs: list[str], y: str) -> Cost: ...


class Node:
    """A node with its tensors resolved. Rules read shapes, dtypes, attributes and small constants."""

    __slots__ = ("proto", "scope", "opset", "read_values", "read_floats", "_attrs", "_engine")

    def __init__(self, proto: onnx.NodeProto, scope: GraphView, opset: int, engine: Engine):
        self.proto = proto
        self.scope = scope
        self.opset = opset
        # Whether the rule read a constant input's value: then its cost may vary with that value,
        # not only with the node's types and attributes.
        self.read_values = False
        # Whether the rule read a FLOAT attribute (a coefficient): then its cost may vary with
        # that value, which a node's kind leaves out.
        self.read_floats = False
        self._attrs: dict[str, Any] | None = None
        self._engine = engine

    @property
    def op_type(self) -> str:
        return self.proto.op_type

    @property
    def domain(self) -> str:
        return self.proto.domain

    @property
    def name(self) -> str:
        return self.proto.name

    @property
    def num_inputs(self) -> int:
        return len(self.proto.input)

    @property
    def num_outputs(self) -> int:
        return len(self.proto.output)

    def attr(self, name: str, default: Any = None) -> Any:
        if self._attrs is None:
            self._attrs = {a.name: a for a in self.proto.attribute}
        a = self._attrs.get(name)
        if a is None:
            return default
        if a.type == onnx.AttributeProto.FLOAT:
            self.read_floats = True
        value = onnx.helper.get_attribute_value(a)
        return value.decode() if isinstance(value, bytes) else value

    def has_input(self, i: int) -> bool:
        return i < len(self.proto.input) and self.proto.input[i] != ""

    def input(self, i: int) -> TensorInfo:
        if not self.has_input(i):
            raise Uncostable(f"input {i} is absent")
        return self._info(self.proto.input[i])

    def output(self, i: int = 0) -> TensorInfo:
        if i >= len(self.proto.output) or not self.proto.output[i]:
            raise Uncostable(f"output {i} is absent")
        return self._info(self.proto.output[i])

    def inputs(self) -> list[TensorInfo]:
        return [self._info(n) for n in self.proto.input if n]

    def outputs(self) -> list[TensorInfo]:
        return [self._info(n) for n in self.proto.output if n]

    def value(self, i: int) -> np.ndarray | None:
        """The value of a small constant input (axes, pads, scales, shapes), or None."""
        if not self.has_input(i):
            return None
        self.read_values = True
        return self.scope.value(self.proto.input[i])

    def attr_or_input(self, attr: str, i: int, default: Any = None) -> Any:
        """Attributes that later opsets moved to inputs (axes, pads, scales, ...)."""
        if self.has_input(i):
            v = self.value(i)
            if v is None:
                raise Uncostable(f"input '{attr}' is not a known constant")
            return v.tolist()
        return self.attr(attr, default)

    def subgraph_cost(self, attr: str, inputs: list[TensorInfo | None],
                      values: dict[int, np.ndarray] | None = None) -> Cost:
        """Cost of one run of the subgraph in attribute `attr`, its formal inputs typed as given,
        and those at the positions in `values` holding those values (a Loop's trip number)."""
        return self._engine.subgraph_cost(self, attr, inputs, values)

    def function_cost(self) -> Cost:
        """Cost of the ONNX function body that defines this node's op."""
        return self._engine.function_cost(self)

    def subgraph_backward(self, attr: str, formal_grads: frozenset[int],
                          values: dict[int, np.ndarray] | None = None) -> Cost:
        """Backward cost of one run of the subgraph in `attr` (costed forward already, with the
        same `values`), the formal inputs at the positions in `formal_grads` carrying a gradient
        in."""
        return self._engine.subgraph_backward(self, attr, formal_grads, values)

    def function_backward(self, grads: frozenset[int]) -> Cost:
        """Backward cost of the function body that defines this node's op."""
        return self._engine.function_backward(self, grads)

    def differentiated_backward(self, xs: list[str], y: str) -> Cost:
        """Backward cost of the nodes of this node's graph on a path from the tensors `xs` to
        `y`, a gradient flowing from `y` back to `xs` alone (ONNX's Gradient)."""
        return self._engine.differentiated_backward(self, xs, y)

    def cost_of(self, op_type: str, inputs: list[TensorInfo | np.ndarray | None],
                outputs: list[TensorInfo], **attrs: Any) -> Cost:
        """Cost of the standard ONNX op `op_type` (at the latest opset) on tensors typed as given.

        A fused op costs what its unfused standard ops cost, under the table the engine counts
        with. An input given as an array is a constant (axes, bounds); None is an absent optional
        input.
        """
        view = GraphView(onnx.GraphProto(), parent=None)
        names = []
        for i, given in enumerate(inputs):
            name = "" if given is None else f"input{i}"
            if isinstance(given, np.ndarray):
                view.values[name] = given
                view.constant.add(name)
                given = TensorInfo(name, onnx.helper.np_dtype_to_tensor_dtype(given.dtype),
                                   given.shape)
            if given is not None:
                view.tensors[name] = given
            names.append(name)
        for i, given in enumerate(outputs):
            view.tensors[f"output{i}"] = given
        proto = onnx.helper.make_node(op_type, names, [f"output{i}" for i in range(len(outputs))],
                                      **attrs)
        return self._engine.op_cost(Node(proto, view, onnx.defs.onnx_opset_version(), self._engine))

    def input_or_none(self, i: int) -> TensorInfo | None:
        return self._info(self.proto.input[i]) if self.has_input(i) else None

    def _info(self, name: str) -> TensorInfo:
        info = self.scope.info(name)
        if info is None:
            raise Uncostable(f"tensor '{name}' has no type or shape")
        return info


def check_node(node: Node) -> None:
    """What every rule may take for granted, checked before one runs: the node fits its op's
    schema (input and output counts, required attributes, attribute types), else it is
    Uncostable with the reason; no tensor it reads or writes has a negative dim, and no axis it
    names is beyond their rank (onnxruntime refuses it at load: the fuzz run's mlp_legacy:105005,
    a LayerNormalization of axis 2^31 that ONNX's inference let pass), else it is an error naming
    the node."""
    proto = node.proto
    rank = -1  # the largest rank among the node's typed tensors
    for kind, names in (("input", proto.input), ("output", proto.output)):
        for name in names:
            info = node.scope.info(name) if name else None
            if info is None or info.shape is None:
                continue
            shape = info.shape
            rank = max(rank, len(shape))
            if shape and (min(shape) < 0 if info.concrete else
                          any(isinstance(d, int) and d < 0 for d in shape)):
                raise _refused(node, f"its {kind} '{name}' would have shape "
                               f"{format_shape(shape)}: the model's shapes contradict "
                               "themselves")
    spec = _schema_spec(node.op_type, domain_key(node.domain), node.opset)
    if spec is None:
        return
    version, inputs, outputs, required, types = spec
    if not inputs[0] <= len(proto.input) <= inputs[1]:
        raise Uncostable(f"has {len(proto.input)} inputs; {node.op_type}-{version} takes "
                         f"{_between(*inputs)}")
    if not outputs[0] <= len(proto.output) <= outputs[1]:
        raise Uncostable(f"has {len(proto.output)} outputs; {node.op_type}-{version} gives "
                         f"{_between(*outputs)}")
    present = set()
    for a in proto.attribute:
        present.add(a.name)
        wanted = types.get(a.name)
        if wanted is not None and a.type != wanted and not a.ref_attr_name:
            raise Uncostable(f"attribute '{a.name}' is {_attribute_type(a.type)}; "
                             f"{node.op_type} wants {_attribute_type(wanted)}")
        if a.name == "auto_pad" and wanted is not None and a.s not in _AUTO_PADS \
                and not a.ref_attr_name:
            raise _refused(node, f"auto_pad '{a.s.decode('utf-8', 'backslashreplace')}' is "
                           "none of NOTSET, SAME_UPPER, SAME_LOWER and VALID, which onnxruntime "
                           "refuses at load")
        if a.name in _AXIS_ATTRIBUTES and rank >= 0:
            low, high, of_rank = _axis_range(node, rank)
            for axis in [a.i] if a.type == onnx.AttributeProto.INT else a.ints:
                if not low <= axis <= high:  # onnxruntime's inference refuses it at load
                    raise _refused(node, f"axis {axis} is out of range for tensors of "
                                   f"rank {of_rank}")
    for name in required:
        if name not in present:
            raise Uncostable(f"lacks its required attribute '{name}'")
    if domain_key(node.domain) == "":
        _check_kernel_attributes(node, version, types)
        if node.op_type in _POOLS:
            _check_pool_attributes(node)


def _axis_range(node: Node, rank: int) -> tuple[int, int, int]:
    """The axes onnxruntime lets the node name: [-r, r - 1] over its first input's rank r for
    the ops whose schema it checks so (AXIS_WITHIN_INPUT_RANK), else within [-rank - 1, rank]
    of the node's largest rank (an Unsqueeze's or a Flatten's axis may name the end); and the
    rank the range is of."""
    if node.op_type in AXIS_WITHIN_INPUT_RANK and domain_key(node.domain) == "" \
            and node.proto.input and node.proto.input[0]:
        info = node.scope.info(node.proto.input[0])
        if info is not None and info.shape is not None:
            return -len(info.shape), len(info.shape) - 1, len(info.shape)
    return -rank - 1, rank, rank


# Pools whose pads onnxruntime 1.32 checks against their kernel at load, whatever auto_pad and
# dilations say (PoolAttributes: "Pad should be smaller than kernel").
_POOLS = frozenset(("MaxPool", "AveragePool", "LpPool", "MaxUnpool"))


def _check_pool_attributes(node: Node) -> None:
    """Each pad, at the start and the end of each spatial dim, smaller than the kernel there:
    pads[i] < kernel_shape[i] and pads[i + n] < kernel_shape[i] (the fuzz run's
    cnn_legacy:153713, a MaxPool of kernel 2 and pads [0, 0, 7, 0], was counted)."""
    attributes = {a.name: a for a in node.proto.attribute if not a.ref_attr_name}
    kernel = list(attributes["kernel_shape"].ints) if "kernel_shape" in attributes else []
    pads = list(attributes["pads"].ints) if "pads" in attributes else []
    if kernel and len(pads) == 2 * len(kernel) and any(
            pad >= kernel[i % len(kernel)] for i, pad in enumerate(pads)):
        raise _refused(node, f"pads {pads} are not all smaller than its kernel_shape {kernel}, "
                       "which onnxruntime refuses at load")


def _check_kernel_attributes(node: Node, version: int, types: dict[str, int]) -> None:
    """rule(value, attributes) holds for each (attribute, rule, words) of the node's op whose
    attribute the node sets, in _KERNEL_ATTRIBUTES["Op-version"] (its schema's version) or else
    _KERNEL_ATTRIBUTES["Op"]; the attributes it reads beside are the node's, else its schema's
    defaults. Else the node is refused, as onnxruntime's kernel constructor refuses it at load
    though ONNX's checker and inference take it (the fuzz run's cnn_dynamo:225680, a MaxPool of
    storage_order 2^31, was counted). Only what the node sets is judged: a default onnxruntime
    reads its own way (RNN's activations) never is."""
    rules = _KERNEL_ATTRIBUTES.get(f"{node.op_type}-{version}",
                                   _KERNEL_ATTRIBUTES.get(node.op_type))
    if rules is None:
        return
    present = {a.name: _attribute_value(a) for a in node.proto.attribute
               if not a.ref_attr_name and a.name in types}
    values = {**dict(_schema_defaults(node.op_type, node.opset)), **present}
    for name, rule, words in rules:
        if name in present and not rule(values[name], values):
            raise _refused(node, f"{name} {_shown(values[name])} {words}, which onnxruntime "
                           "refuses at load")


def _attribute_value(a: onnx.AttributeProto) -> Any:
    """An attribute's value, its strings (bytes) read as text."""
    value = onnx.helper.get_attribute_value(a)
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode("utf-8", "backslashreplace") for v in value]
    return value


def _shown(value: Any) -> str:
    """An attribute's value as the refusal shows it: text quoted, lists in brackets."""
    if isinstance(value, str):
        return f"'{value}'"
    if isinstance(value, onnx.TensorProto):
        return f"(a tensor of shape {list(value.dims)})"
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return f"{value:g}" if isinstance(value, float) else str(value)


@memoized(4096)
def _schema_defaults(op_type: str, opset: int) -> tuple[tuple[str, Any], ...]:
    """The default value of each attribute of the standard-domain op's schema that has one."""
    try:
        schema = onnx.defs.get_schema(op_type, opset, "")
    except (onnx.defs.SchemaError, TypeError, OverflowError):
        return ()
    return tuple((name, _attribute_value(a.default_value)) for name, a in schema.attributes.items()
                 if a.default_value.type != onnx.AttributeProto.UNDEFINED)


def _one_of(*allowed: Any):
    """The rule of an attribute onnxruntime takes from a fixed set: value in allowed."""
    return lambda value, _: value in allowed


def _positive(value: Any, _: Any) -> bool:
    """value > 0."""
    return value > 0


def _not_negative(value: Any, _: Any) -> bool:
    """value >= 0."""
    return value >= 0


def _all_positive(values: list, _: Any) -> bool:
    """v > 0 for each v."""
    return all(v > 0 for v in values)


def _upsample_scales_fit(scales: list[float], values: dict) -> bool:
    """The scales onnxruntime's Upsample takes in its linear and cubic modes (ScalesValidation):
    linear, 2 or 3 dims, 4 of s0 = 1 and s1 = 1 or s3 = 1, 5 of s0 = s1 = 1; cubic, 2 dims, or
    4 of s0 = s1 = 1, or of s0 = s3 = 1 with the others at least 1; nearest, any."""
    mode, n = values.get("mode"), len(scales)
    if mode == "linear":
        return n in (2, 3) or (n == 4 and scales[0] == 1 and 1 in (scales[1], scales[3])) or (
            n == 5 and scales[0] == scales[1] == 1)
    if mode == "cubic":
        return n == 2 or (n == 4 and scales[0] == 1 and (
            scales[1] == 1 or (scales[3] == 1 and min(scales[1], scales[2]) >= 1)))
    return True


def _activations_known(names: list[str], _: Any) -> bool:
    """Every name one of the activations onnxruntime's GRU and LSTM know, in any case (its RNN
    wants them as spelled)."""
    return all(name.lower() in _RNN_ACTIVATIONS_ANY_CASE for name in names)


def _activations_counted(gates: int):
    """The rule of a recurrent op's activations: gates names per direction, two directions if
    bidirectional (onnxruntime: activations.size() == num_directions * gates)."""
    return lambda names, values: len(names) == gates * (
        2 if values.get("direction") == "bidirectional" else 1)


_RNN_ACTIVATIONS = frozenset(("Affine", "Relu", "LeakyRelu", "ThresholdedRelu", "Tanh",
                              "ScaledTanh", "Sigmoid", "HardSigmoid", "Elu", "Softsign",
                              "Softplus"))
_RNN_ACTIVATIONS_ANY_CASE = frozenset(name.lower() for name in _RNN_ACTIVATIONS)
_DIRECTION = ("direction", _one_of("forward", "reverse", "bidirectional"),
              "is none of 'forward', 'reverse' and 'bidirectional'")
_CLIP = ("clip", _positive, "is not positive")
_HIDDEN_SIZE = ("hidden_size", _positive, "is not positive")
_ACTIVATIONS = ("activations", _activations_known, "names an activation onnxruntime does not know")
_CUMULATIVE = (("exclusive", _one_of(0, 1), "is neither 0 nor 1"),
               ("reverse", _one_of(0, 1), "is neither 0 nor 1"))
_PADDING_MODE = ("padding_mode", _one_of("zeros", "border", "reflection"),
                 "is none of 'zeros', 'border' and 'reflection'")
_UPSAMPLE_MODE = ("mode", _one_of("nearest", "linear", "cubic"),
                  "is none of 'nearest', 'linear' and 'cubic'")
# The attribute values onnxruntime 1.32's CPU kernels refuse in their constructors, at session
# creation ("Exception during initialization"), though ONNX's checker and strict inference take
# them: op -> (attribute, rule(value, the node's attributes with their defaults), what the value
# is). Found by reading the kernels (onnxruntime/core/providers/cpu/...) and checked one by one
# against onnxruntime 1.32 (tests/test_hostile_runtime_refusals.py). A recurrent op's layout 1 is
# left counted: valid ONNX that onnxruntime's CPU kernels merely do not implement.
_KERNEL_ATTRIBUTES: dict[str, tuple[tuple[str, Any, str], ...]] = {
    "MaxPool": (("storage_order", _one_of(0, 1),
                 "is neither 0 (row-major) nor 1 (column-major)"),),
    "LRN": (("size", lambda v, _: v > 0 and v % 2 == 1, "is not a positive odd number"),
            ("alpha", _positive, "is not positive"), ("beta", _positive, "is not positive")),
    "LpNormalization": (("p", _one_of(1, 2), "is neither 1 nor 2"),),
    "Mod": (("fmod", _one_of(0, 1), "is neither 0 nor 1"),),
    "BitShift": (("direction", _one_of("LEFT", "RIGHT"), "is neither 'LEFT' nor 'RIGHT'"),),
    "NonMaxSuppression": (("center_point_box", _one_of(0, 1), "is neither 0 nor 1"),),
    "RoiAlign": (("mode", _one_of("avg", "max"), "is neither 'avg' nor 'max'"),
                 ("sampling_ratio", _not_negative, "is negative")),
    "MaxRoiPool": (("spatial_scale", _positive, "is not positive"),),
    "DepthToSpace": (("mode", _one_of("DCR", "CRD"), "is neither 'DCR' nor 'CRD'"),),
    "Upsample": (_UPSAMPLE_MODE,
                 ("scales", lambda v, _: all(s >= 1 for s in v), "has a scale below 1"),
                 ("scales", _upsample_scales_fit, "are not ones onnxruntime's Upsample takes in its mode")),
    "Resize": (_UPSAMPLE_MODE,
               ("coordinate_transformation_mode",
                _one_of("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                        "align_corners", "asymmetric", "tf_half_pixel_for_nn",
                        "tf_crop_and_resize"), "is not a mode onnxruntime knows"),
               # onnxruntime reads nearest_mode only where the mode is nearest.
               ("nearest_mode", lambda v, values: values.get("mode") != "nearest" or v in (
                   "round_prefer_floor", "round_prefer_ceil", "floor", "ceil"),
                "is not a mode onnxruntime knows"),
               ("antialias", lambda v, values: v == 0 or values.get("mode") in ("linear", "cubic"),
                "is set though its mode is neither 'linear' nor 'cubic'"),
               ("exclude_outside", lambda v, values: v == 0 or values.get("mode") == "cubic" or (
                   values.get("mode") == "linear" and values.get("antialias", 0) != 0),
                "is set though its mode is neither 'cubic' nor an antialiased 'linear'")),
    "Pad": (("mode", _one_of("constant", "reflect", "edge", "wrap"),
             "is none of 'constant', 'reflect', 'edge' and 'wrap'"),),
    # GridSample-16 names its modes bilinear and bicubic, GridSample-20 on linear and cubic.
    "GridSample-16": (("mode", _one_of("bilinear", "nearest", "bicubic"),
                       "is none of 'bilinear', 'nearest' and 'bicubic'"), _PADDING_MODE),
    "GridSample": (("mode", _one_of("linear", "nearest", "cubic"),
                    "is none of 'linear', 'nearest' and 'cubic'"), _PADDING_MODE),
    "ConstantOfShape": (("value", lambda v, _: int(np.prod(v.dims)) == 1,
                         "is not a tensor of one element"),),
    "QuantizeLinear": (("block_size", _not_negative, "is negative"),),
    "CumSum": _CUMULATIVE,
    "CumProd": _CUMULATIVE,
    "TensorScatter": (("mode", _one_of("linear", "circular"), "is neither 'linear' nor 'circular'"),),
    "ReverseSequence": (("batch_axis", _one_of(0, 1), "is neither 0 nor 1"),
                        ("time_axis", _one_of(0, 1), "is neither 0 nor 1"),
                        ("batch_axis", lambda v, values: v != values.get("time_axis"),
                         "is its time_axis as well"),
                        ("time_axis", lambda v, values: v != values.get("batch_axis"),
                         "is its batch_axis as well")),
    "Col2Im": (("dilations", _all_positive, "are not all positive"),
               ("strides", _all_positive, "are not all positive")),
    "Scan": (("scan_input_directions", lambda v, _: all(d in (0, 1) for d in v),
              "are not all 0 (forward) or 1 (reverse)"),
             ("scan_output_directions", lambda v, _: all(d in (0, 1) for d in v),
              "are not all 0 (forward) or 1 (reverse)")),
    "MaxUnpool": (("kernel_shape", _all_positive, "are not all positive"),
                  ("strides", _all_positive, "are not all positive")),
    "StringNormalizer": (("case_change_action", _one_of("LOWER", "UPPER", "NONE"),
                          "is none of 'LOWER', 'UPPER' and 'NONE'"),),
    "TfIdfVectorizer": (("mode", _one_of("TF", "IDF", "TFIDF"), "is none of 'TF', 'IDF' and 'TFIDF'"),
                        ("min_gram_length", _positive, "is not positive"),
                        ("max_gram_length", lambda v, values: v >= values.get("min_gram_length", 1),
                         "is below its min_gram_length"),
                        ("max_skip_count", _not_negative, "is negative"),
                        ("weights", lambda v, values: len(v) == len(values.get("ngram_indexes", v)),
                         "are not as many as its ngram_indexes")),
    "DequantizeLinear": (("block_size", _not_negative, "is negative"),),
    "RNN": (_DIRECTION,
            ("activations", lambda names, _: all(n in _RNN_ACTIVATIONS for n in names),
             "names an activation onnxruntime does not know"),
            ("activations", _activations_counted(1), "are not 1 per direction")),
    "GRU": (_DIRECTION, _HIDDEN_SIZE, _CLIP, _ACTIVATIONS,
            ("activations", _activations_counted(2), "are not 2 per direction")),
    "LSTM": (_DIRECTION, _HIDDEN_SIZE, _CLIP, _ACTIVATIONS,
             ("activations", _activations_counted(3), "are not 3 per direction")),
}


def _refused(node: Node, problem: str) -> OnnxFlopsError:
    """The error of a node the model cannot hold: "node 'name' (Op): problem", in one line."""
    label = node.name or f"a {node.op_type} node"
    return OnnxFlopsError(f"node '{label}' ({node.op_type}): {problem}")


# The auto_pad values onnxruntime's kernels take ("" reads as NOTSET); it refuses another at load
# ("Unknown AutoPadType String"), whatever ONNX's inference made of it (the fuzz run's
# cnn_dynamo:115875, a Conv of auto_pad 'NNTSET', was counted).
_AUTO_PADS = frozenset((b"", b"NOTSET", b"SAME_UPPER", b"SAME_LOWER", b"VALID"))
# Attributes naming axes: checked against the node's ranks (a function body or onnx's inference
# would otherwise build something as long as the axis is large).
_AXIS_ATTRIBUTES = frozenset(("axis", "axes"))


@memoized(4096)
def _schema_spec(op_type: str, domain: str, opset: int) -> tuple | None:
    """What check_node reads of the op's schema: its version, input and output count ranges,
    required attributes and each attribute's type; None for an op onnx has no schema of."""
    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
    except (onnx.defs.SchemaError, TypeError, OverflowError):
        return None
    attributes = schema.attributes
    return (schema.since_version, (schema.min_input, schema.max_input),
            (schema.min_output, schema.max_output),
            tuple(name for name, a in attributes.items() if a.required),
            {name: a.type.value for name, a in attributes.items()})


def _between(low: int, high: int) -> str:
    return str(low) if low == high else f"{low} to {high}" if high < 2**31 - 1 else f"{low} or more"


def _attribute_type(value: int) -> str:
    return onnx.AttributeProto.AttributeType.Name(value) \
        if value in onnx.AttributeProto.AttributeType.values() else f"of type {value}"
