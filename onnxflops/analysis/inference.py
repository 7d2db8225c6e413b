"""ONNX shape inference: over a whole model, or node by node once per distinct kind of node.

A graph repeats a few kinds of node thousands of times. `NodeTyper` types a graph's tensors in
graph order and runs ONNX's inference (`onnx.shape_inference.infer_node_outputs`: the op's own
inference function, the one `infer_shapes` runs) once per node signature: op, opset, attributes
less their coefficients (kinds.py), input types, and the values of the inputs inference reads
(shapes, axes, sizes). Constant shape arithmetic is evaluated as it is met (evaluate.py), so its
values reach the Reshape, Expand or Slice that reads them, which is what ONNX's data propagation
does. Nodes holding subgraphs are inferred as one-node models, bodies included; onnxruntime's ops
by contrib_shapes. What stays unknown, shapes.analyze hands to onnx's reference evaluator, then
to whole-model inference.
"""

from __future__ import annotations

import itertools
from typing import Callable

import numpy as np
import onnx
import onnx.checker
from onnx import defs, helper, numpy_helper

from onnxflops.analysis.bounds import (
    BOUNDED_OPS,
    bound_branches,
    bound_outputs,
    reaches_bound,
)
from onnxflops.analysis.contrib_shapes import (
    CONTRIB_DEFAULT_DOMAIN,
    contrib_outputs,
    is_contrib,
)
from onnxflops.analysis.evaluate import evaluate
from onnxflops.analysis.expand import local_function_model
from onnxflops.analysis.kinds import attribute_key
from onnxflops.analysis.sequences import type_sequence_op
from onnxflops.analysis.validity import check_declared_type
from onnxflops.errors import OnnxFlopsError, Uncostable, first_line
from onnxflops.graph import (
    MAX_VALUE_ELEMENTS,
    GraphView,
    NodeRow,
    TensorInfo,
    bodies,
    declared_shapes,
    domain_key,
    format_shape,
    free_names,
    holds_subgraph,
    info_from_type,
    is_float,
    is_known,
    is_symbolic,
    taken_branch,
    type_proto_of,
)
from onnxflops.load.schema import check_schema, checker_context, node_label, unknown_op
from onnxflops.ops import (
    CHECKED_DOMAINS,
    HOLDS_SUBGRAPHS,
    SEQUENCE_OPS,
    SHAPE_FROM_VALUES,
    SHAPE_KEEPING,
    SHAPE_READERS,
    TRACE_COPIES,
)

# Inference reads the values of integer inputs (shapes, axes, pads, sizes), and of inputs of any
# type for the ops whose shapes follow from values (scales, bounds, a depth).
_SHAPE_DATA_TYPES = {onnx.TensorProto.INT64, onnx.TensorProto.INT32}

Outputs = list[TensorInfo | None]  # one per output name; None where the type stays unknown
# How the nodes of a signature are typed, where not from it alone (see NodeTyper._how).
_UNTYPED_INPUT, _EACH_NODE = object(), object()


def infer_model(model: onnx.ModelProto, warnings: list[str], refuse: str | None = None,
                data_prop: bool = True, body_shapes: bool = True) -> onnx.ModelProto:
    """`infer_shapes` with data propagation (unless `data_prop` is False), strict first; what
    strict mode rejects is a warning, or with `refuse` (what to name) an OnnxFlopsError, as
    onnxruntime refuses such a model: but for ops of domains ONNX holds no schemas of (accepted
    on purpose: a rule may cost them)."""
    try:
        # check_type: a body's ops get the type constraints top-level nodes are checked against
        return onnx.shape_inference.infer_shapes(model, check_type=refuse is not None,
                                                 strict_mode=True, data_prop=data_prop)
    except onnx.shape_inference.InferenceError as e:
        if refuse and body_shapes and _SHAPE_DIFFERS in str(e):
            # onnxruntime runs a body whose declared shapes differ from the inferred ones (an
            # element type that differs it refuses): counted as inferred, as in the main graph.
            warnings.append(f"{refuse}: a shape declared in its body differs from the one "
                            f"inferred, which is counted: {first_line(e).split('): ')[-1]}")
            return infer_model(_body_shapes_undeclared(model), warnings, refuse, data_prop,
                               body_shapes=False)
        if refuse and not unknown_op(str(e)):
            raise OnnxFlopsError(f"{refuse}: ONNX's shape inference refuses it, as onnxruntime "
                                 f"would: {first_line(e)}") from None
        warnings.append("shape inference: " + first_line(e))
    except (RuntimeError, ValueError) as e:
        warnings.append("shape inference failed: " + first_line(e))
    try:
        return onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=data_prop)
    except Exception as e:  # noqa: BLE001 - left to node-by-node inference, said in a warning
        warnings.append("shape inference gave up: " + first_line(e))
        return model


_SHAPE_DIFFERS = "Inferred shape and existing shape differ"


def _body_shapes_undeclared(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` whose nested graphs (bodies) declare no shape of their outputs and
    intermediate tensors, only their element types."""
    model, original = onnx.ModelProto(), model
    model.CopyFrom(original)
    stack = [a.g for n in model.graph.node for a in n.attribute if a.HasField("g")] + \
        [g for n in model.graph.node for a in n.attribute for g in a.graphs]
    while stack:
        graph = stack.pop()
        for vi in [*graph.output, *graph.value_info]:
            if vi.type.HasField("tensor_type"):
                vi.type.tensor_type.ClearField("shape")
        stack.extend(a.g for n in graph.node for a in n.attribute if a.HasField("g"))
        stack.extend(g for n in graph.node for a in n.attribute for g in a.graphs)
    return model


def _refused_at_any_size(schema, proto: onnx.NodeProto, types: dict, opset_imports,
                         ir_version: int) -> bool:
    """Whether ONNX's inference refuses the node with every input dim unknown (ranks and types
    kept, no values): a refusal of ranks or types, which no size the graph meets would lift
    (a MaxPool of the 1-D output of a Unique, the fuzz run's cnn_legacy:105721)."""
    blurred = {}
    for name, type_proto in types.items():
        tensor = type_proto.tensor_type
        rank = len(tensor.shape.dim) if tensor.HasField("shape") else None
        blurred[name] = helper.make_tensor_type_proto(
            tensor.elem_type, None if rank is None else [None] * rank)
    try:
        onnx.shape_inference.infer_node_outputs(schema, proto, blurred, {},
                                                opset_imports=opset_imports,
                                                ir_version=ir_version)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError):
        return True
    except Exception:  # noqa: BLE001 - no verdict: the refusal stays the bound's
        return False
    return False


class NodeTyper:
    """Types the tensors of one graph (`view`, whose inputs and initializers are typed)."""

    def __init__(self, view: GraphView, model: onnx.ModelProto, opsets: dict[str, int],
                 warnings: list[str], body_outputs: Callable[[onnx.ModelProto], Outputs] | None = None,
                 branch_types: Callable[[GraphView, onnx.GraphProto, dict[str, int]],
                                        list[tuple[TensorInfo | None, str | None]]] | None = None):
        """`body_outputs`: the output types of a model (analysed), for calls of the model's
        local functions, typed from their bodies once per signature. `branch_types(scope, body,
        opsets)`: the output types of an If's branch analysed in scope, each with why its size
        is an upper bound (or None), for Ifs whose branches ONNX's inference cannot reconcile."""
        self.view = view
        self.model = model
        self.checker = checker_context(model)
        self.checked: set[tuple] = set()  # kinds of nodes typed as declared, checked
        self.functions = {(f.domain, f.name) for f in model.functions}
        self.body_outputs = body_outputs
        self.branch_types = branch_types
        self.opset_imports = list(model.opset_import)
        self.ir_version = model.ir_version
        self.opsets = opsets
        self.warnings = warnings
        # By node signature (see _type): how its nodes are typed, or their types.
        self.by_signature: dict[tuple, object] = {}
        self.kind_numbers = itertools.count()
        self.schemas: dict[tuple, defs.OpSchema | None] = {}
        self.refusal_as_written: str | None = None  # whole-model inference's, once asked
        # The shapes the model declares, for what inference cannot find (write_declared_shapes).
        self.declared = _with_implied(declared_shapes(model), view) if view.parent is None else {}

    def type_graph(self) -> bool:
        """Type every node's outputs where they are unknown, and mark and evaluate constants.
        True when some output is still unknown."""
        view = self.view
        # This runs once per node of graphs of any size: the top graph's tensors are read directly.
        lookup = view.tensors.get if view.parent is None else view.info
        unknown_left = False
        for position, row in enumerate(view.rows()):
            typed = True
            for name in row.outputs:
                if name and not is_known(lookup(name)):
                    typed = self._type(position, row, lookup)
                    break
            else:  # typed as the model declares: checked against its schema all the same
                if row.domain in CHECKED_DOMAINS:
                    self._check_declared(row)
            view.mark_constant(row)
            if view.is_constant_row(row):
                self._evaluate(row)
            if not typed:  # rare: look again, after the evaluation
                unknown_left |= not all(is_known(lookup(name)) for name in row.outputs if name)
        return unknown_left

    def _type(self, position: int, row: NodeRow,
              lookup: Callable[[str], TensorInfo | None]) -> bool:
        """Type the node's outputs; False where some may have stayed unknown."""
        proto, op_type, domain, inputs, outputs = row
        if op_type == "Constant" and not domain:
            return False  # typed from its value by the view, where it has one
        if op_type in SEQUENCE_OPS and not domain and type_sequence_op(self.view, row):
            return True  # its elements typed one by one (ONNX's inference types them alike)
        typed = self._type_inferred(position, row, lookup)
        if not typed and op_type in BOUNDED_OPS and not domain and bound_outputs(self.view, row):
            return True  # a size that depends on data, at its upper bound
        if not typed and op_type == "If" and not domain and self.branch_types is not None \
                and bound_branches(self.view, row,
                                   lambda body: self.branch_types(self.view, body, self.opsets)):
            return all(is_known(lookup(name)) for name in outputs if name)
        if not typed and self.declared:
            return self._type_declared(row, lookup)
        return typed

    def _type_declared(self, row: NodeRow, lookup: Callable[[str], TensorInfo | None]) -> bool:
        """Type the outputs inference left unknown as the model declares them (a Resize to sizes
        read from an input, whose output the model states), checked against what inference
        found of them (rank, dims, element type). True where every output is typed."""
        for name in row.outputs:
            info = lookup(name) if name else None
            stated = self.declared.get(name)
            if stated is None or is_known(info) or info is None or not info.dtype:
                continue
            if info.shape is not None and (len(info.shape) != len(stated) or any(
                    isinstance(d, int) and d != s for d, s in zip(info.shape, stated))):
                raise OnnxFlopsError(f"node {node_label(row)}: the model declares its output "
                                     f"'{name}' {format_shape(stated)}, but it is "
                                     f"{format_shape(info.shape)}")
            self.view.tensors[name] = TensorInfo(name, info.dtype, stated)
        return all(is_known(lookup(name)) for name in row.outputs if name)

    def _type_inferred(self, position: int, row: NodeRow,
                       lookup: Callable[[str], TensorInfo | None]) -> bool:
        """Type the node's outputs by ONNX's inference; False where some may have stayed
        unknown."""
        proto, op_type, domain, inputs, outputs = row
        # Everything about the node but its names, its inputs' values and its coefficients (no
        # ONNX inference reads them). An input without a type is True, an absent one False.
        signature = (op_type, domain, attribute_key(proto, self.opsets.get(domain_key(domain), 0)),
                     tuple([info.type_key if (info := lookup(name)) is not None else bool(name)
                            for name in inputs]),
                     tuple([not name for name in outputs]) if "" in outputs else ())
        how = self.by_signature.get(signature)
        if how is None:
            how = self.by_signature[signature] = self._how(row, lookup)
        if how is _UNTYPED_INPUT:
            return False  # its producer is reported, and so is this node
        if how is _EACH_NODE:
            found, outputs_known = self._type_one(row, lookup), False
        else:
            if type(how) is dict:  # inference reads input values: their types by those values
                values = self._values(row, lookup)
                by_values, how = how, how.get(values)
                if how is None:
                    how = by_values[values] = self._inferred(row, lookup)
            found, outputs_known, kind = how
            if kind is not None:
                self.view.kinds[position] = kind  # every type from one signature: nodes alike
        tensors = self.view.tensors
        for name, info in zip(outputs, found):
            if name and info is not None:
                declared = tensors.get(name)
                if declared is None or declared.shape is None or info.shape is not None:
                    if declared is not None:  # the element type the model declares for it
                        check_declared_type(row, name, declared.dtype, info.dtype)
                    tensors[name] = info.renamed(name)  # a shape the model declared is kept
        return outputs_known

    def _how(self, row: NodeRow, lookup: Callable[[str], TensorInfo | None]):
        """How nodes of one signature are typed: _UNTYPED_INPUT, _EACH_NODE (subgraphs,
        onnxruntime's ops), a dict of their types by the input values inference reads (filled as
        they are met), or their types."""
        proto, op_type, domain, inputs, outputs = row
        if domain in CHECKED_DOMAINS:
            self._check_schema(row)
        infos = [lookup(name) if name else None for name in inputs]
        if any(info is None for name, info in zip(inputs, infos) if name):
            return _UNTYPED_INPUT
        # A call of a local function is typed from its body (_infer_node), once per signature,
        # though its domain is none onnx holds schemas of.
        local = bool(self.functions) and (domain, op_type) in self.functions
        if not local and (domain or op_type in CONTRIB_DEFAULT_DOMAIN) \
                and is_contrib(op_type, domain, self.opsets.get("", 0)) \
                or (op_type in HOLDS_SUBGRAPHS if not domain else holds_subgraph(proto)):
            return _EACH_NODE
        if op_type in SHAPE_FROM_VALUES or any(info is not None and info.dtype in _SHAPE_DATA_TYPES
                                               for info in infos):
            return {}
        return self._inferred(row, lookup)

    def _check_declared(self, row: NodeRow) -> None:
        """_check_schema, once per op and attributes, of a node whose outputs the model types."""
        check_kind(row, self.checker, self.checked)

    def _check_schema(self, row: NodeRow) -> None:
        check_schema(row, self.checker)

    def _type_one(self, row: NodeRow, lookup: Callable[[str], TensorInfo | None]) -> Outputs:
        proto, op_type, domain, inputs, outputs = row
        if holds_subgraph(proto):
            return self._infer_with_bodies(row)
        infos = [lookup(name) if name else None for name in inputs]
        return [None if out is None else TensorInfo(name, *out)
                for name, out in zip(outputs, contrib_outputs(proto, infos))]

    def _values(self, row: NodeRow, lookup: Callable[[str], TensorInfo | None]) -> tuple:
        """The input values inference reads, as bytes (None where unknown or not read)."""
        return tuple([None if value is None else value.tobytes()
                      for value in self._data(row, lookup)])

    def _data(self, row: NodeRow,
              lookup: Callable[[str], TensorInfo | None]) -> list[np.ndarray | None]:
        """The values of the inputs inference reads, where known."""
        op_type, inputs = row.op_type, row.inputs
        reads_any = op_type in SHAPE_FROM_VALUES
        return [self.view.value(name) if (info := lookup(name) if name else None) is not None
                and (reads_any or info.dtype in _SHAPE_DATA_TYPES) else None for name in inputs]

    def _inferred(self, row: NodeRow, lookup: Callable[[str], TensorInfo | None]) -> tuple:
        """(output types, whether all are known, the kind of the nodes typed from them or None
        where they are not alike). A kind is a number of the signature's own: the counter keys
        its outcomes on it, and a number hashes at once where the signature would be hashed
        again for every node."""
        inputs, outputs = row.inputs, row.outputs
        infos = [lookup(name) if name else None for name in inputs]
        found = self._infer_node(row, infos, self._data(row, lookup))
        if row.op_type == "Reshape" and not row.domain:
            try:
                _check_reshape(row, infos, found)
            except OnnxFlopsError as e:
                found = self._refused_at_bound(row, e)
        known = all(info is not None and info.known for name, info in zip(outputs, found) if name)
        alike = known and all(info is None or info.known for info in infos)
        return found, known, next(self.kind_numbers) if alike else None

    def _infer_node(self, row: NodeRow, infos: list[TensorInfo | None],
                    data: list[np.ndarray | None]) -> Outputs:
        """ONNX's inference of one node; `data`: input values by position, or []."""
        proto, op_type, domain, inputs, outputs = row
        unknown: Outputs = [None] * len(outputs)
        if self.functions and (proto.domain, op_type) in self.functions:
            return self._function_outputs(row, infos, data)
        schema = self._schema(op_type, domain)
        if schema is None:
            return unknown  # an op ONNX does not know: the counter reports it
        types = {name: type_proto_of(info) for name, info in zip(inputs, infos) if name}
        values = {name: numpy_helper.from_array(np.asarray(value), name)
                  for name, value in zip(inputs, data) if value is not None}
        try:
            found = onnx.shape_inference.infer_node_outputs(
                schema, proto, types, values, opset_imports=self.opset_imports,
                ir_version=self.ir_version)
        except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as e:
            if unknown_op(str(e)):
                return unknown
            refusal = OnnxFlopsError(f"node {node_label(row)}: ONNX's shape inference refuses "
                                     f"it, as onnxruntime would: {first_line(e)}")
            if not _refused_at_any_size(schema, proto, types, self.opset_imports,
                                        self.ir_version):
                return self._refused_at_bound(row, refusal)
            raise refusal from None
        except Exception as e:  # noqa: BLE001 - inference raises several kinds; the node stays untyped
            label = proto.name or f"{op_type} node"
            self.warnings.append(f"shape inference: {label} ({op_type}): "
                                 f"{str(e).strip().splitlines()[0]}")
            return unknown
        return [_unnamed(info_from_type(name, found[name])) if name in found else None
                for name in outputs]

    def _refused_at_bound(self, row: NodeRow, refusal: OnnxFlopsError) -> Outputs:
        """A node whose input sizes were taken at an upper bound, which its shapes refuse, is
        left untyped (so uncosted, with why): a graph traced at some sizes may hold only those.
        Any other refusal is the model's: onnxruntime would refuse it too."""
        if not reaches_bound(self.view, row.inputs) or self._refused_as_written(row):
            raise refusal from None
        self.warnings.append(f"{refusal} (its inputs' sizes are upper bounds, which the graph may "
                             "never meet)")
        return [None] * len(row.outputs)

    def _refused_as_written(self, row: NodeRow) -> bool:
        """Whether ONNX's whole-model inference, which sees a data-dependent size as a symbol (as
        onnxruntime does when it loads the model), refuses this node all the same: a dim the
        node's shapes fix whatever the bound (the [n, 1] a Flatten makes of a Unique's [n],
        which a Gemm of K = 4 refuses; the fuzz run's cnn_legacy:191009). Not run where local
        functions are left as calls: that inference would expand every call."""
        if self.model.functions:
            return False
        if self.refusal_as_written is None:
            try:
                onnx.shape_inference.infer_shapes(self.model, strict_mode=True, data_prop=True)
                self.refusal_as_written = ""
            except Exception as e:  # noqa: BLE001 - any refusal, read by node below
                self.refusal_as_written = str(e)
        proto = row.proto
        return f"(op_type:{proto.op_type}, node name: {proto.name})" in self.refusal_as_written

    def _function_outputs(self, row: NodeRow, infos: list[TensorInfo | None],
                          data: list[np.ndarray | None]) -> Outputs:
        """The output types of a call of a model-local function, from its body analysed with
        the call's input types (and known integer inputs)."""
        unknown: Outputs = [None] * len(row.outputs)
        if self.body_outputs is None:
            return unknown
        values = [None if value is None or is_float(info.dtype) else np.asarray(value)
                  for info, value in zip(infos, data or [None] * len(infos))
                  ] if infos else []
        try:
            found = self.body_outputs(local_function_model(row.proto, infos, values, self.model))
        except Uncostable as e:
            self.warnings.append(f"shape inference: {row.proto.name or row.op_type} "
                                 f"({row.op_type}): {e}")
            return unknown
        return [None if info is None else _unnamed(info) for info in found]

    def _schema(self, op_type: str, domain: str) -> defs.OpSchema | None:
        key = (op_type, domain)
        if key not in self.schemas:
            try:
                self.schemas[key] = defs.get_schema(op_type, self.opsets.get(domain, 0), domain)
            except defs.SchemaError:
                self.schemas[key] = None
        return self.schemas[key]

    def _infer_with_bodies(self, row: NodeRow) -> Outputs:
        """A node with subgraphs, inferred as a one-node model; it takes its inferred bodies.
        An If whose condition is known is left to its taken branch's analysis (bound_branches):
        ONNX's inference would read the branch that cannot run too, whose shapes may contradict
        themselves (a Split into a negative part: the expanded AffineGrid's 2-D branch given a
        3-D size)."""
        proto, op_type, domain, inputs, outputs = row
        view = self.view
        if op_type == "If" and not domain and inputs \
                and taken_branch(view.value(inputs[0])) is not None:
            return [None] * len(outputs)
        read = sorted({i for i in inputs if i}.union(*map(free_names, bodies(proto))))
        values = {name: view.value(name) for name in read}
        given = [helper.make_value_info(name, type_proto_of(info)) for name in read
                 if values[name] is None and (info := view.info(name)) is not None]
        constants = [numpy_helper.from_array(np.asarray(value), name)
                     for name, value in values.items() if value is not None]
        graph = helper.make_graph([proto], "node", given,
                                  [helper.make_value_info(o, onnx.TypeProto()) for o in outputs if o],
                                  constants)
        model = helper.make_model(graph, opset_imports=self.opset_imports,
                                  ir_version=self.ir_version)
        if op_type == "Loop" and not domain:
            _type_loop_body(model.graph.node[0], [view.info(name) if name else None
                                                  for name in inputs])
        inferred = infer_model(model, self.warnings, refuse=f"node {node_label(row)}",
                               data_prop=not any(_long_integer_vector(vi) for vi in given))
        proto.CopyFrom(inferred.graph.node[0])  # its bodies now carry their inferred types
        found = {vi.name: vi.type for vi in inferred.graph.output}
        types = [_unnamed(info_from_type(name, found[name])) if name in found else None
                 for name in outputs]
        if op_type == "Loop" and not domain:
            _carry_loop_outputs(proto, types, [view.info(name) if name else None
                                               for name in inputs[2:]])
            trips = self._loop_trips(row)
            _stack_loop_outputs(proto, types, trips)
            _grow_loop_outputs(proto, types, inputs[2:], view, trips)
        return types

    def _loop_trips(self, row: NodeRow) -> int | None:
        """How many times a Loop runs its body, where the inputs say: its trip count M when it
        has no condition, or one that starts true and that the body passes on unchanged, or one
        that starts true where M is at most 1 (the body's condition is read after the first
        trip, when M has already stopped the loop: TensorFlow's map over a batch of one)."""
        inputs = row.inputs
        trip = self.view.value(inputs[0]) if inputs and inputs[0] else None
        if trip is None or trip.size != 1 or trip.dtype.kind not in "iu":
            return None
        trips = int(trip.reshape(-1)[0])
        condition = inputs[1] if len(inputs) > 1 else ""
        if trips < 0:
            return None  # the cost rule names it
        if condition and trips > 0:
            start = self.view.value(condition)
            body = bodies(row.proto)[0]
            if start is None or start.size != 1 or not bool(start.reshape(-1)[0]) \
                    or len(body.input) < 2 or not body.output:
                return None
            if trips == 1:
                return trips
            kept = _passes_on(body, body.input[1].name, body.output[0].name)
            if isinstance(kept, str):  # an outer tensor: true in every trip where its value is
                value = self.view.value(kept)
                kept = value is not None and value.size == 1 and bool(value.reshape(-1)[0])
            if not kept:
                return None
        return trips

    def _evaluate(self, row: NodeRow) -> None:
        """The value of a small constant node (shape arithmetic), typed from it where unknown."""
        proto, op_type, domain, inputs, outputs = row
        view = self.view
        if len(outputs) != 1 or op_type == "Constant" or op_type in SHAPE_READERS \
                or outputs[0] in view.values or not small(view, outputs[0]):
            return
        feeds = {name: view.value(name) for name in inputs if name}
        if any(value is None for value in feeds.values()):
            return
        try:
            value = evaluate([proto], feeds, self.opsets.get("", 0))[outputs[0]]
        except Exception:  # noqa: BLE001 - an op numpy does not cover, or one it cannot run as given
            return  # shapes.analyze evaluates what is left with onnx's reference evaluator
        if not isinstance(value, np.ndarray) or view.sequence(outputs[0]) is not None:
            return  # a sequence (SequenceEmpty's): typed by its elements, not held as a value
        view.values[outputs[0]] = value
        if not is_known(view.info(outputs[0])):
            view.tensors[outputs[0]] = TensorInfo(
                outputs[0], helper.np_dtype_to_tensor_dtype(value.dtype), value.shape)


def _with_implied(declared: dict[str, tuple], view: GraphView) -> dict[str, tuple]:
    """The declared shapes, and those they imply: the input of an op that keeps its input's
    shape (a Sqrt after a ReduceSum of axes read from data) has its declared output's."""
    if not declared:
        return declared
    implied = dict(declared)
    for row in reversed(view.rows()):
        if row.op_type in SHAPE_KEEPING and not row.domain and row.inputs and row.outputs \
                and row.outputs[0] in implied and row.inputs[0]:
            implied.setdefault(row.inputs[0], implied[row.outputs[0]])
    return implied


def _long_integer_vector(vi: onnx.ValueInfoProto) -> bool:
    """An integer vector longer than shape arithmetic's values (box indices, say): ONNX's data
    propagation would hold it as a shape of one dim per element, memory without end (millions of
    candidate boxes exhaust it)."""
    tensor = vi.type.tensor_type
    dims = tensor.shape.dim
    return tensor.elem_type in _SHAPE_DATA_TYPES and len(dims) == 1 \
        and dims[0].dim_value > MAX_VALUE_ELEMENTS


def _type_loop_body(loop: onnx.NodeProto, inputs: list[TensorInfo | None]) -> None:
    """Give the Loop body's formal inputs that declare no type the types they take: the
    iteration number, the condition, and the loop-carried values' initial types."""
    body = next((a.g for a in loop.attribute if a.name == "body"), None)
    if body is None:
        return
    given = [(onnx.TensorProto.INT64, ()), (onnx.TensorProto.BOOL, ())] + [
        (info.dtype, info.shape) if info is not None and info.known else None
        for info in inputs[2:]]
    for formal, typed in zip(body.input, given):
        if typed is not None and not formal.type.tensor_type.HasField("shape") \
                and formal.type.WhichOneof("value") in (None, "tensor_type"):
            formal.type.CopyFrom(helper.make_tensor_type_proto(typed[0], typed[1]))


def _carry_loop_outputs(loop: onnx.NodeProto, types: Outputs,
                        initial: list[TensorInfo | None]) -> None:
    """A loop-carried output ONNX's inference left unshaped has its initial shape where the
    body gives each trip's value that shape too (so every trip's does)."""
    body = next((a.g for a in loop.attribute if a.name == "body"), None)
    if body is None:
        return
    for slot, start in enumerate(initial[:len(types)]):
        info = types[slot]
        if start is None or not start.known or info is not None and info.shape is not None:
            continue
        each = _body_type(body, body.output[1 + slot].name) if 1 + slot < len(body.output) \
            else None
        if each is not None and each.shape == start.shape and each.dtype == start.dtype:
            types[slot] = TensorInfo("", start.dtype, start.shape)


def _body_type(body: onnx.GraphProto, name: str) -> TensorInfo | None:
    """A body tensor's type as declared or inferred (an output's declaration may lack what
    inference found and wrote to value_info)."""
    found = None
    for vi in [*body.output, *body.value_info]:
        if vi.name == name:
            info = info_from_type(name, vi.type)
            if info.known:
                return info
            found = found or info
    return found


def _stack_loop_outputs(loop: onnx.NodeProto, types: Outputs, trips: int | None) -> None:
    """The Loop's scan outputs (after its N loop-carried ones) stack the body's per-trip values:
    their first dim is the trip count, which ONNX's inference leaves unknown."""
    body = next((a.g for a in loop.attribute if a.name == "body"), None)
    if body is None or trips is None:
        return
    carried = len(loop.input) - 2
    for slot in range(max(carried, 0), len(types)):
        per_trip = body.output[1 + slot] if 1 + slot < len(body.output) else None
        info = types[slot]
        if per_trip is not None and (info is None or info.shape is None):
            each = info_from_type("", per_trip.type)
            if each.shape is not None:
                info = TensorInfo("", each.dtype, (None, *each.shape))
        if info is not None and info.shape and info.shape[0] is None:
            types[slot] = TensorInfo("", info.dtype, (trips, *info.shape[1:]))


def _grow_loop_outputs(loop: onnx.NodeProto, types: Outputs, initial: list[str],
                       view: GraphView, trips: int | None) -> None:
    """dim_a(out) = dim_a(initial) + trips · dim_a(piece): a loop-carried value that each trip
    concatenates with a piece of fixed shape along axis a (torchvision's paste and keypoint loops:
    `res = cat((res, piece))`, from an empty start)."""
    body = next((a.g for a in loop.attribute if a.name == "body"), None)
    if body is None or trips is None:
        return
    producers = {o: n for n in body.node for o in n.output}
    for slot, name in enumerate(initial[:len(types)]):
        start = view.info(name) if name else None
        info = types[slot]
        if start is None or not start.concrete or not start.shape \
                or info is not None and info.known or 2 + slot >= len(body.input):
            continue
        grown = _grown_shape(body, producers, slot, start.shape, trips)
        if grown is not None:
            types[slot] = TensorInfo("", start.dtype, grown)


def _grown_shape(body: onnx.GraphProto, producers: dict, slot: int, start: tuple,
                 trips: int) -> tuple | None:
    carried_in, carried_out = body.input[2 + slot].name, body.output[1 + slot].name
    concat = producers.get(carried_out)
    if concat is None or concat.op_type != "Concat" or concat.domain or len(concat.input) != 2:
        return None

    def source(name: str) -> str:  # through the casts and copies the trace put between
        node = producers.get(name)
        while node is not None and node.op_type in TRACE_COPIES and not node.domain:
            name = node.input[0]
            node = producers.get(name)
        return name

    pieces = [name for name in concat.input if source(name) != carried_in]
    if len(pieces) != 1:
        return None
    piece = _body_type(body, pieces[0])
    axis = next((a.i for a in concat.attribute if a.name == "axis"), None)
    if piece is None or piece.shape is None or axis is None or len(piece.shape) != len(start) \
            or not -len(start) <= axis < len(start):
        return None
    axis %= len(start)
    # Concat holds the other dims equal: the start's, where inference left the piece's unknown.
    if not isinstance(piece.shape[axis], int) or any(
            isinstance(p, int) and p != s for i, (p, s) in enumerate(zip(piece.shape, start))
            if i != axis):
        return None
    return start[:axis] + (start[axis] + trips * piece.shape[axis],) + start[axis + 1:]


def _passes_on(body: onnx.GraphProto, condition_in: str, condition_out: str) -> bool | str:
    """The body's condition output is its condition input, directly or through Identity or a
    Cast to bool (True), or a tensor of the scope around it (its name: the trace's constant `True`,
    which TorchScript's loops cast to bool again in every trip), or neither."""
    name = condition_out
    producers = {o: n for n in body.node for o in n.output}
    formal = {i.name for i in body.input}
    while name != condition_in:
        node = producers.get(name)
        if node is None:
            return name if name not in formal and name not in _initializers(body) else False
        if len(node.input) != 1 or not (node.op_type == "Identity" or _casts_to_bool(node)):
            return False
        name = node.input[0]
    return True


def _casts_to_bool(node: onnx.NodeProto) -> bool:
    """A Cast to bool: the truth of its input (nonzero), which is what the trip count reads."""
    return node.op_type == "Cast" and not node.domain and any(
        a.name == "to" and a.i == onnx.TensorProto.BOOL for a in node.attribute)


def _initializers(body: onnx.GraphProto) -> set[str]:
    return {t.name for t in body.initializer}


def check_kind(row: NodeRow, context: onnx.checker.C.CheckerContext, checked: set) -> None:
    """check_schema, once per op and attributes (`checked` holds the kinds done)."""
    proto = row.proto
    key = (row.op_type, row.domain, attribute_key(proto, 0) if proto.attribute else ())
    if key not in checked:
        checked.add(key)
        check_schema(row, context)


def _check_reshape(row: NodeRow, infos: list[TensorInfo | None], found: Outputs) -> None:
    """A Reshape to another number of elements: ONNX's inference lets it pass, onnxruntime fails
    on it, and no count of it means anything."""
    data, reshaped = (infos or [None])[0], (found or [None])[0]
    if data is None or reshaped is None or not data.concrete or not reshaped.concrete:
        return
    if data.numel != reshaped.numel:
        raise OnnxFlopsError(f"node {node_label(row)}: reshapes '{row.inputs[0]}' "
                             f"({format_shape(data.shape)}, {data.numel} elements) to "
                             f"{format_shape(reshaped.shape)} ({reshaped.numel})")


def small(view: GraphView, name: str) -> bool:
    """Whether a tensor is small enough to hold its value (shape arithmetic, not a weight)."""
    info = view.info(name)
    if info is None or not info.known:
        return info is None or not is_float(info.dtype)
    numel = info.numel  # symbolic for a tensor shaped by symbols: never evaluated
    return isinstance(numel, int) and numel <= MAX_VALUE_ELEMENTS


def _unnamed(info: TensorInfo) -> TensorInfo:
    """Dims inference could not find are None: its names for them (`unk__0`) restart with each
    node inferred alone, and would make unrelated dims look equal."""
    if info.shape is None or info.known:
        return info
    return TensorInfo(info.name, info.dtype, tuple(d if isinstance(d, int) or is_symbolic(d)
                                                   else None for d in info.shape))
