"""Keras (and TensorFlow SavedModel) → ONNX through tf2onnx, with a graph that depends on structure only.

Three things would otherwise make the ONNX graph depend on weight values:
- Grappler folds constants: a zero bias add disappears, fresh BatchNorm statistics vanish into the
  preceding conv. Unless `keep_weights=True`, the model is traced reading each variable as a
  constant filled with a stand-in value of its own (see `onnxflops.converters.structure`): no
  weight is read, copied or expanded on the way to ONNX, where each is a header (see
  `onnxflops.converters.filled`), so memory stays near the model's own, and a model built in
  `keras.StatelessScope(initialize_variables=False)`, whose variables hold nothing, converts too.
- Keras 3 writes BatchNormalization as arithmetic that Grappler pushes into a bias-free conv. While
  tracing, 4-D/5-D BatchNorm is emitted as TensorFlow's FusedBatchNormV3, which tf2onnx turns into
  an ONNX BatchNormalization (scale and bias are params, mean and variance buffers, as in torch).
- tf2onnx's own optimizer fuses Conv + BatchNormalization; that one rewrite is switched off.
- Keras compiles grouped convolutions with XLA (a call tf2onnx cannot convert): while tracing,
  every convolution is TensorFlow's own op.
TensorFlow is imported only when a Keras model is converted.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from onnxflops.bind.inputs import dtype_name, inputs_by_name
from onnxflops.converters.common import (check_container, conversion_failed,
                                         framework_logging_silenced,
                                         is_single_input, keras_imported,
                                         native_output_silenced)
from onnxflops.converters.filled import drop_fill_notes, fill_value, filled_tensors_as_headers
from onnxflops.converters.structure import StandInValues, is_float_dtype
from onnxflops.converters.tensor_lists import unrolled_tensor_lists
from onnxflops.dims import format_shape
from onnxflops.converters.weight_match import (
    MONOTONE_MIN,
    SMALL_WEIGHT,
    Weight,
    weight_roles_by_value,
)
from onnxflops.load import record_weight_roles, weight_roles
from onnxflops.errors import OnnxFlopsError, did_you_mean, first_line, input_hint, last_line
from onnxflops.graph import MAX_VALUE_ELEMENTS, is_standard_domain

OPSET = 18
_STAND_IN = "onnxflops_stand_in"  # the name of each traced weight's constant
_TF_NAMESPACE = "ai.onnx.converters.tensorflow"


def keras_to_onnx(model, inputs=None, *, batch: int = 1, keep_weights: bool = False,
                  opset: int = OPSET) -> onnx.ModelProto:
    """Convert a keras.Model; an open batch dim is bound to `batch` unless `inputs` gives shapes.

    `inputs`: None, a mapping input name → shape (or array), or a sequence of shapes/arrays in the
    order of `model.inputs`.
    """
    _quiet_tensorflow()
    import keras
    import tensorflow as tf

    label, specs, structure = _signature(model, inputs, batch)
    variables = [] if keep_weights else _float_variables(model.variables)
    stand_ins = _stand_in_fills(variables)

    def call(*xs):
        with _reading_stand_ins(variables, stand_ins):
            return model(keras.tree.pack_sequence_as(structure, list(xs)), training=False)

    with _traceable_batch_norm(), _traceable_grouped_conv():
        proto = _convert(tf.function(call), specs, None if keep_weights else stand_ins, opset,
                         label)
    if keep_weights:
        _record_real_weight_roles(proto, model.variables)
    else:  # stand-ins are distinct: a weight no initializer holds is in no initializer
        _record_unread_weights(proto, model)
    proto.graph.name = model.name
    return proto


def _signature(model, inputs, batch: int):
    """(how errors name the model, the tf.TensorSpecs it is traced with, the nesting its call
    takes them in): one reading of `inputs` for both conversions."""
    label = f"Keras model '{model.name}'"
    layer_names = _input_layer_names(model)
    specs = _input_specs(_model_inputs(model, label), _by_tensor_name(model, inputs, layer_names),
                         batch, label, layer_names)
    return label, specs, _input_structure(model)


def keras_to_deployed_onnx(model, inputs=None, *, batch: int = 1) -> onnx.ModelProto:
    """The graph tf2onnx's default conversion gives a user (what `model.export(format="onnx")`
    runs): the model's own weights, Grappler's constant folding (BatchNorm arithmetic pushed into
    the conv, zero biases gone) and tf2onnx's optimizers. Inputs as `keras_to_onnx` takes them;
    the graph inputs are named alike."""
    _quiet_tensorflow()
    import keras
    import tensorflow as tf

    label, specs, structure = _signature(model, inputs, batch)

    def call(*xs):
        return model(keras.tree.pack_sequence_as(structure, list(xs)), training=False)

    proto = _deployed(tf.function(call), specs, label)
    proto.graph.name = model.name
    return proto


def _deployed(fn, specs: list, label: str) -> onnx.ModelProto:
    """`fn` through tf2onnx.convert.from_function with its defaults."""
    import tensorflow as tf
    from tf2onnx import convert

    with native_output_silenced(), framework_logging_silenced(), _traceable_grouped_conv():
        try:
            with tf.device("/cpu:0"):
                proto, _ = convert.from_function(fn, input_signature=specs)
        except Exception as e:  # tf2onnx and TF raise anything; the user gets one line
            raise OnnxFlopsError(f"{label}: tf2onnx cannot convert it ({last_line(e)})") from None
    _check_converted(proto, label)
    return proto


def saved_model_to_onnx(path: str | os.PathLike, inputs=None, *, batch: int = 1,
                        keep_weights: bool = False, opset: int = OPSET) -> onnx.ModelProto:
    """Convert the serving signature of a TensorFlow SavedModel directory (no Python code runs)."""
    import tensorflow as tf

    label, signature, call, specs = _serving_call(path, inputs, batch)
    proto = _convert(tf.function(call), specs, None if keep_weights else [], opset, label)
    if keep_weights:
        _record_real_weight_roles(proto, signature.variables)
    proto.graph.name = Path(path).name
    return proto


def saved_model_to_deployed_onnx(path: str | os.PathLike, inputs=None, *,
                                 batch: int = 1) -> onnx.ModelProto:
    """A SavedModel's serving signature through tf2onnx's default conversion (see
    `keras_to_deployed_onnx`)."""
    import tensorflow as tf

    label, _, call, specs = _serving_call(path, inputs, batch)
    proto = _deployed(tf.function(call), specs, label)
    proto.graph.name = Path(path).name
    return proto


def _serving_call(path, inputs, batch: int):
    """(label, the serving signature, a function calling it with its inputs in order, their
    TensorSpecs) of a SavedModel directory."""
    _quiet_tensorflow()
    import tensorflow as tf

    label = f"SavedModel '{path}'"
    try:
        loaded = tf.saved_model.load(str(path))
    except (OSError, ValueError, tf.errors.OpError) as e:
        raise OnnxFlopsError(f"{label}: cannot be loaded ({first_line(e)})") from None
    signature = loaded.signatures.get("serving_default")
    if signature is None:
        raise OnnxFlopsError(f"{label}: has no 'serving_default' signature")
    declared = signature.structured_input_signature[1]
    names = sorted(declared)
    specs = _input_specs([(n, tuple(declared[n].shape), declared[n].dtype.name) for n in names],
                         inputs, batch, label)

    def call(*xs):
        return signature(**dict(zip(names, xs)))

    call.loaded = loaded  # the signature's variables live as long as the function
    return label, signature, call, specs


def load_keras_file(path: str | os.PathLike, *, safe_mode: bool = True):
    """Load a .keras or .h5 file. safe_mode refuses Lambda layers that would run stored bytecode."""
    _quiet_tensorflow()
    import keras

    check_container(Path(path))
    try:
        return keras.models.load_model(str(path), compile=False, safe_mode=safe_mode)
    except ValueError as e:
        message = first_line(e)
        if "safe_mode" in str(e) or "unsafe" in str(e).lower():
            message = ("it contains a Lambda layer or other stored Python code; loading it runs that "
                       "code, so it is refused unless you trust the file (safe_mode=False / --unsafe)")
        raise OnnxFlopsError(f"{path}: {message}") from None
    except (OSError, TypeError, KeyError) as e:
        raise OnnxFlopsError(f"{path}: not a loadable Keras model ({first_line(e)})") from None


def is_saved_model_dir(path: Path) -> bool:
    return path.is_dir() and (path / "saved_model.pb").exists()


def _quiet_tensorflow() -> None:
    logging.getLogger("tf2onnx").setLevel(logging.CRITICAL)  # unconverted ops are raised, not logged
    keras_imported()


def _model_inputs(model, label: str) -> list[tuple[str, tuple, str]]:
    try:
        declared = model.inputs
    except (AttributeError, ValueError):
        declared = None
    if not declared:
        raise OnnxFlopsError(f"{label} has no defined inputs (not built); call it once or give "
                             f"them, e.g. {input_hint('x', (1, 224, 224, 3))}")
    return [(t.name, tuple(t.shape), str(t.dtype)) for t in declared]


def _input_layer_names(model) -> dict[str, str]:
    """Each input's tensor name ("keras_tensor") → its input layer's name ("input_layer", what
    `model.summary()` shows)."""
    names = {}
    for tensor in model.inputs:
        history = getattr(tensor, "_keras_history", None)
        layer = getattr(history, "operation", None) or (history[0] if history else None)
        if getattr(layer, "name", None):
            names[tensor.name] = layer.name
    return names


def _by_tensor_name(model, inputs, layer_names: Mapping[str, str]):
    """`inputs` with its names that are an input layer's name given as that input's tensor name:
    the model is bound by either name."""
    if not isinstance(inputs, Mapping):
        return inputs
    tensor_names = {layer: tensor for tensor, layer in layer_names.items()}
    declared = {t.name for t in model.inputs}
    return {name if name in declared else tensor_names.get(name, name): shape
            for name, shape in inputs.items()}


def _input_structure(model):
    """How the model takes its inputs (one tensor, a list, a dict by name: every keras-hub
    backbone), with `model.inputs` as its leaves in order."""
    try:
        structure = model.input
    except (AttributeError, ValueError):
        structure = None
    if structure is None:
        return model.inputs[0] if len(model.inputs) == 1 else list(model.inputs)
    return structure


def _input_specs(declared: list[tuple[str, tuple, str]], given, batch: int, label: str,
                 layer_names: Mapping[str, str] | None = None) -> list:
    """TensorSpecs for the inputs: declared shapes, leading None → batch, overridden by `given`."""
    import tensorflow as tf

    names = [name for name, _, _ in declared]
    overrides = _overrides(given, names, label)
    specs = []
    for position, (name, shape, dtype) in enumerate(declared):
        if name in overrides:
            shape, dtype = _shape_and_dtype(overrides[name], dtype)
        elif shape and shape[0] is None:
            shape = (batch,) + tuple(shape[1:])
        unknown = [i for i, d in enumerate(shape) if d is None]
        if unknown:
            layer = (layer_names or {}).get(name)
            also = f" (its layer: '{layer}')" if layer and layer != name else ""
            hint = input_hint(layer or name, ["N" if d is None else d for d in shape])
            raise OnnxFlopsError(f"{label}: input '{name}'{also} has unknown dim {unknown[0]} "
                                 f"(shape {format_shape(shape)}); give its shape with {hint}")
        specs.append(tf.TensorSpec(shape, tf.as_dtype(dtype), name=_tf_name(name, position)))
    return specs


def _overrides(given, names: list[str], label: str) -> dict[str, Any]:
    if given is None:
        return {}
    if isinstance(given, Mapping):
        unknown = [n for n in given if n not in names]
        if unknown:
            raise OnnxFlopsError(f"{label} has no input '{unknown[0]}'"
                                 f"{did_you_mean(unknown[0], names)} (inputs: {', '.join(names)})")
        return dict(given)
    items = [given] if is_single_input(given) else list(given)
    if len(items) != len(names):
        raise OnnxFlopsError(f"{label} takes {len(names)} input(s) ({', '.join(names)}), "
                             f"{len(items)} given")
    return inputs_by_name(items, names)



def _shape_and_dtype(value, declared_dtype: str) -> tuple[tuple[int, ...], str]:
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return tuple(int(d) for d in value.shape), dtype_name(value.dtype)
    return tuple(int(d) for d in value), getattr(value, "dtype", declared_dtype)  # TypedShape




def _tf_name(name: str, position: int) -> str:
    cleaned = "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)
    return cleaned if cleaned[:1].isalnum() else f"input_{position}"


def _convert(fn, specs: list, stand_ins: list[Weight] | None, opset: int,
             label: str) -> onnx.ModelProto:
    """`fn` converted, with the real weights where `stand_ins` is None. Otherwise it holds the
    stand-ins the traced graph reads (a Keras model's, see `keras_to_onnx`), and every float
    variable the graph still captures (all of a SavedModel's) is frozen as a stand-in too, added to
    it: the initializers are told apart by them."""
    import tensorflow as tf
    from tf2onnx import convert, tf_loader

    with contextlib.ExitStack() as stack:
        stack.enter_context(native_output_silenced())  # TensorFlow's C++ logging
        stack.enter_context(framework_logging_silenced())  # tf2onnx's and absl's Python logging
        stack.enter_context(_without_conv_batchnorm_fusion())
        stack.enter_context(_filled_constants_kept_small(stand_ins is not None))
        stack.enter_context(_work_written_twice_kept())
        stack.enter_context(_weight_arithmetic_kept())
        try:
            concrete = fn.get_concrete_function(*specs)
            # The arguments only: tensors the model captured (a Normalization layer's mean and
            # variance given to its constructor) are frozen into constants with the rest.
            input_names = [t.name for t in concrete.inputs[:len(specs)]]
            output_names = [t.name for t in concrete.outputs if t.dtype != tf.resource]
            with _freezing_stand_ins(stand_ins):
                frozen = _frozen(concrete, input_names)
            with tf.Graph().as_default():  # Grappler runs on the GraphDef, in graph mode
                fed = _weights_fed(frozen) if stand_ins is not None else []
                frozen = tf_loader.tf_optimize(input_names, output_names, frozen)
            unrolled_tensor_lists(frozen)  # a TensorArray a Python loop fills

            def convert_frozen():
                with tf.device("/cpu:0"):
                    return convert._convert_common(
                        frozen, name=label, continue_on_error=True, opset=opset,
                        custom_op_handlers={"Erfc": (_erfc_as_erf, []), **_COMPLEX_HANDLERS},
                        input_names=input_names, output_names=output_names, use_default=fed,
                        tensors_to_rename=_tensor_names(concrete, input_names))[0]

            try:
                with _optimizer_without_weight_copies():
                    proto = convert_frozen()
            except Exception:  # a failing optimizer pass: convert again, where it is skipped
                proto = convert_frozen()
        except OnnxFlopsError:
            raise
        except Exception as e:  # tf2onnx and TF raise anything; the user gets one line
            import traceback

            raise conversion_failed(label, f"cannot convert ({last_line(e)})",
                                    details="".join(traceback.format_exception(e))) from None
    _check_converted(proto, label)
    if stand_ins:
        record_weight_roles(proto, **weight_roles_by_value(proto, stand_ins))
        drop_fill_notes(proto.graph)
    return proto


def _tensor_names(concrete, input_names: list[str]) -> dict[str, str]:
    """The ONNX names of the graph's inputs and outputs: each input by its spec's name, each
    output a dict holds by its key (`_output_names`)."""
    import tensorflow as tf

    specs = [s for s in tf.nest.flatten(concrete.structured_input_signature)
             if isinstance(s, tf.TensorSpec)]
    return {**dict(zip(input_names, (s.name for s in specs))),
            **_output_names(concrete.structured_outputs)}


def _output_names(outputs) -> dict[str, str]:
    """Graph tensor name → ONNX name for outputs returned in a dict: a tensor by its key, the
    tensors of a list or tuple under a key (D-FINE's intermediate predictions) as `key_0`,
    `key_1`, ... (nested: `key_0_1`); {} where the outputs are no dict (they keep their names)."""
    names = {}

    def name(value, label):
        if isinstance(value, Mapping):
            for key, item in value.items():
                name(item, f"{label}_{key}")
        elif isinstance(value, (list, tuple)):
            for index, item in enumerate(value):
                name(item, f"{label}_{index}")
        elif getattr(value, "name", None):
            names[value.name] = label

    if isinstance(outputs, Mapping):
        for key, value in outputs.items():
            name(value, str(key))
    return names


def _weights_fed(graph_def) -> list[str]:
    """Each traced stand-in weight's constant, read through a PlaceholderWithDefault of it (in
    place, same name): Grappler folds what depends on constants only, and a weight-only
    computation (a relative-position table projected or gathered at fixed positions) would become
    a constant, its work and its weight lost. Behind a placeholder it stays in the graph (the count
    reports it as foldable work) and tf2onnx, told to use the default, makes the weight an
    initializer again. Returns the placeholders' names."""
    from tensorflow.core.framework import node_def_pb2

    fed = []
    for node in list(graph_def.node):
        if node.op != "Const" or not node.name.split("/")[-1].startswith(_STAND_IN):
            continue
        name = node.name
        node.name = f"{name}/value"
        placeholder = node_def_pb2.NodeDef(name=name, op="PlaceholderWithDefault",
                                           input=[node.name])
        placeholder.attr["dtype"].type = node.attr["dtype"].type
        placeholder.attr["shape"].shape.CopyFrom(node.attr["value"].tensor.tensor_shape)
        graph_def.node.append(placeholder)
        fed.append(name)
    return fed


def _frozen(concrete, input_names: list[str]):
    """The function's GraphDef with its variables turned into constants, as tf2onnx's
    from_function freezes it but without importing the result back into a concrete function
    (two more copies of every weight: ResNet50's peak drops from 3.0 to 1.8 GB). `input_names`
    loses the resource inputs, as from_function's does."""
    import tensorflow as tf
    from tf2onnx import tf_loader

    graph_def = tf_loader.convert_variables_to_constants_large_model(concrete)
    graph_def = tf_loader.fix_freezing_errors(graph_def)  # what from_function does if it must
    graph_def = tf_loader.fix_freezing_errors_part2(graph_def)
    with tf.Graph().as_default() as graph, tf_loader.tf_session(graph=graph) as session:
        tf.import_graph_def(graph_def, name="")
        input_names[:] = tf_loader.inputs_without_resource(session, input_names)
    return graph_def


def _float_variables(variables) -> list:
    """Each float variable once, in order: those that get stand-ins."""
    unique = list({id(v): v for v in variables}.values())
    return [v for v in unique if is_float_dtype(dtype_name(v.dtype))]


def _record_real_weight_roles(proto: onnx.ModelProto, variables) -> None:
    """The record of a graph converted with the real weights, read from their values."""
    floats = _float_variables(variables)
    keys = weight_keys(floats)  # two weights of one path (SmolLM's o_proj) are two keys
    weights = [Weight(keys[id(v)], v.numpy(), bool(getattr(v, "trainable", True)))
               for v in floats]
    record_weight_roles(proto, **weight_roles_by_value(proto, weights, distinct=False))


def _record_unread_weights(proto: onnx.ModelProto, model) -> None:
    """Add to the record the Keras weights no initializer holds: trainable ones are unused
    parameters (an untied output embedding a backbone owns and never reads), the others buffers
    all the same (a Normalization layer's statistics, read from a snapshot that TensorFlow folds
    into constants, and its count), as Keras counts them."""
    roles = weight_roles(proto)
    if roles is None:
        return
    held = set(roles.parameters.values()) | set(roles.buffers.values())
    unused, unread = {}, {}
    for weights, missing in ((model.trainable_weights, unused),
                             (model.non_trainable_weights, unread)):
        for weight in {id(w): w for w in weights}.values():
            key = weight_keys(model.variables).get(id(weight), weight.name)
            if key not in held:
                missing[key] = math.prod(weight.shape)
    record_weight_roles(proto, roles.parameters, roles.buffers, sizes=roles.sizes,
                        constants=roles.constants, exhaustive=roles.exhaustive, unused=unused,
                        unread_buffers=unread)


def weight_keys(variables) -> dict[int, str]:
    """id(variable) → the name its params are recorded by: its Keras path, or its name and
    position; the n-th variable of a path others had before it gets `#n` (keras-hub's T5 names the
    encoder's and the decoder's relative-position tables alike, and one would hide the other)."""
    keys: dict[int, str] = {}
    seen: dict[str, int] = {}
    for position, v in enumerate({id(v): v for v in variables}.values()):
        key = getattr(v, "path", None) or f"{v.name}#{position}"
        seen[key] = seen.get(key, 0) + 1
        keys[id(v)] = key if seen[key] == 1 else f"{key}#{seen[key]}"
    return keys


def _stand_in_fills(variables) -> list[Weight]:
    """One stand-in per variable, its value never read (a model built in a
    `keras.StatelessScope(initialize_variables=False)` has none): a value distinct in the
    variable's dtype that fills it, or, for a small float32/float64 one, random values found in
    no other weight (`SMALL_WEIGHT`): an elementwise function of it that TensorFlow folds keeps their order, so
    the folded constant is still known to hold it (see `weight_roles_by_value`)."""
    small = [MONOTONE_MIN <= math.prod(v.shape) <= SMALL_WEIGHT
             and dtype_name(v.dtype) in ("float32", "float64") for v in variables]
    chosen = [position for position, is_small in enumerate(small) if is_small]
    arrays = StandInValues().distinct_arrays([math.prod(variables[p].shape) for p in chosen])
    drawn = {p: a.astype(dtype_name(variables[p].dtype)) for p, a in zip(chosen, arrays)}
    # Fill values are none of the arrays' values: one found in an array would name two weights.
    fills = StandInValues(taken=drawn.values())
    stand_ins = []
    keys = weight_keys(variables)
    for position, v in enumerate(variables):
        key = keys[id(v)]
        trainable = bool(getattr(v, "trainable", True))
        if position in drawn:
            stand_ins.append(Weight(key, drawn[position], trainable))
        else:
            stand_ins.append(Weight(key, fills.distinct_scalar(dtype_name(v.dtype)), trainable,
                                    math.prod(v.shape)))
    return stand_ins


@contextlib.contextmanager
def _reading_stand_ins(variables, stand_ins: list[Weight]):
    """While tracing: every variable reads as a constant holding its stand-in. The GraphDef holds
    a filled one as one value and a shape (TensorFlow's compact form for a filled tensor), so no
    large weight is copied into the graph, and Grappler sees constants as it would frozen ones."""
    if not variables:
        yield
        return
    import keras
    import tensorflow as tf

    mapping = [(v, tf.constant(w.values[0], dtype=v.dtype, shape=tuple(v.shape), name=_STAND_IN)
                if w.size is not None else
                tf.constant(w.values.reshape(tuple(v.shape)), dtype=v.dtype, name=_STAND_IN))
               for v, w in zip(variables, stand_ins)]
    with keras.StatelessScope(state_mapping=mapping, initialize_variables=False):
        yield


@contextlib.contextmanager
def _filled_constants_kept_small(active: bool):
    """tf2onnx reads each TensorFlow constant filled with one value as a broadcast view of it, and
    keeps it as a header (see `onnxflops.converters.filled`): no stand-in weight is expanded."""
    if not active:
        yield
        return
    from tf2onnx import tf_utils
    from tf2onnx.optimizer.merge_duplicated_nodes_optimizer import MergeDuplicatedNodesOptimizer

    read = tf_utils.get_tf_tensor_data
    equal_attributes = MergeDuplicatedNodesOptimizer._have_equal_attr

    def unexpanded(tensor):
        value = _tf_fill_value(tensor)
        return read(tensor) if value is None else np.broadcast_to(value, _tf_dims(tensor))

    def headers_compared_by_fill(optimizer, node_1, node_2, graph):
        # The optimizer groups constants by their bytes: headers have none, so all of them
        # would be compared element by element.
        tensors = [n.attr["value"].t if n.is_const() else None for n in (node_1, node_2)]
        if any(t is not None and fill_value(t) is not None for t in tensors):
            return None not in tensors and all(
                getattr(tensors[0], f) == getattr(tensors[1], f)
                for f in ("dims", "data_type", "doc_string"))
        return equal_attributes(optimizer, node_1, node_2, graph)

    tf_utils.get_tf_tensor_data = unexpanded
    MergeDuplicatedNodesOptimizer._have_equal_attr = headers_compared_by_fill
    try:
        with filled_tensors_as_headers():
            yield
    finally:
        tf_utils.get_tf_tensor_data = read
        MergeDuplicatedNodesOptimizer._have_equal_attr = equal_attributes


def _tf_dims(tensor) -> tuple[int, ...]:
    return tuple(d.size for d in tensor.tensor_shape.dim)


def _tf_fill_value(tensor):
    """The value of a large TensorFlow TensorProto written compactly as one value and a shape."""
    if tensor.tensor_content or math.prod(_tf_dims(tensor)) <= MAX_VALUE_ELEMENTS:
        return None
    fields = [values for field, values in tensor.ListFields() if field.name.endswith("_val")]
    if len(fields) != 1 or len(fields[0]) != 1:
        return None
    from tensorflow.python.framework import tensor_util

    one = type(tensor)()
    one.CopyFrom(tensor)
    one.tensor_shape.ClearField("dim")
    return tensor_util.MakeNdarray(one).reshape(())


@contextlib.contextmanager
def _freezing_stand_ins(stand_ins: list[Weight] | None):
    """While freezing: every float variable becomes a constant filled with a stand-in value of its
    own, added to `stand_ins`, written as one value and a shape; its value is never read."""
    if stand_ins is None:
        yield
        return
    import tensorflow as tf
    from tensorflow.python.framework import convert_to_constants, tensor_util

    converter = convert_to_constants._FunctionConverterDataInEager
    evaluate, make_tensor_proto = converter._eval, tensor_util.make_tensor_proto
    values = StandInValues(taken=[w.values for w in stand_ins])  # distinct from those traced

    def stand_in(self, tensor):
        if not (isinstance(tensor, tf.Variable) and tensor.dtype.is_floating):
            return evaluate(self, tensor)
        shape = tuple(tensor.shape)
        fill = values.distinct_scalar(tensor.dtype.name)
        stand_ins.append(Weight(f"{tensor.name}#{len(stand_ins)}", fill,
                                bool(getattr(tensor, "trainable", True)), math.prod(shape)))
        return np.broadcast_to(fill.reshape(()), shape)

    def compact(values, dtype=None, shape=None, verify_shape=False, allow_broadcast=False):
        if isinstance(values, np.ndarray) and values.size > 1 and not any(values.strides):
            values = values.flat[0]  # one value and the shape: TensorFlow's form of a fill
        return make_tensor_proto(values, dtype, shape, verify_shape, allow_broadcast)

    converter._eval, tensor_util.make_tensor_proto = stand_in, compact
    try:
        yield
    finally:
        converter._eval, tensor_util.make_tensor_proto = evaluate, make_tensor_proto


@contextlib.contextmanager
def _optimizer_without_weight_copies():
    """tf2onnx's optimizer copies every weight at each of its ~25 passes, and keeps the copies:
    it deep-copies the whole graph to roll a failing pass back, and re-serializes each node's
    attributes into the same NodeProto, whose protobuf arena keeps the old ones until the node
    dies (13 GB of a 528 MB VGG16). Here a pass is not rolled back (a failure raises) and each
    node is re-serialized into a fresh NodeProto, so one copy of the weights lives at a time."""
    from tf2onnx import constants
    from tf2onnx.graph import Node

    update_proto = Node.update_proto

    def into_fresh_proto(node, external_tensor_storage=None):
        stale = node._op
        stale.ClearField("attribute")  # update_proto writes them all again from node.attr
        node._op = type(stale)()
        node._op.CopyFrom(stale)
        update_proto(node, external_tensor_storage)

    variable = constants.ENV_TF2ONNX_CATCH_ERRORS
    previous = os.environ.get(variable)
    os.environ[variable] = "FALSE"
    Node.update_proto = into_fresh_proto
    try:
        yield
    finally:
        Node.update_proto = update_proto
        if previous is None:
            os.environ.pop(variable, None)
        else:
            os.environ[variable] = previous


@contextlib.contextmanager
def _traceable_batch_norm():
    """Emit BatchNorm as TensorFlow's FusedBatchNormV3, which Grappler leaves whole, while tracing.

    The fused op takes 4-D/5-D tensors: 2-D and 3-D ones (after a Dense or a Conv1D) get unit
    dims inserted around the call, free reshapes in the count. A missing scale or offset is a
    constant of ones or zeros.
    """
    from keras.src import backend

    arithmetic = backend.nn.batch_normalization

    def batch_normalization(x, mean, variance, axis, offset=None, scale=None, epsilon=1e-3):
        rank = len(x.shape)
        channels_last = axis in (-1, rank - 1)
        if rank > 5 or not (channels_last or axis == 1):
            return arithmetic(x, mean, variance, axis, offset, scale, epsilon)
        import tensorflow as tf

        # Without its scale (scale=False) or offset (center=False) a BatchNorm is the fused op
        # with ones or zeros there, which no weight holds: left to arithmetic, Grappler would
        # fold the normalization into the preceding convolution's weights, losing them.
        scale = tf.ones_like(variance) if scale is None else scale
        offset = tf.zeros_like(mean) if offset is None else offset

        shape = tf.shape(x)
        if rank < 4:  # [N, C] → [N, 1, 1, C]; [N, T, C] → [N, T, 1, C]; [N, C, L] → [N, C, L, 1]
            units = tf.ones([4 - rank], dtype=shape.dtype)
            parts = [shape[:-1], units, shape[-1:]] if channels_last else [shape, units]
            x = tf.reshape(x, tf.concat(parts, axis=0))
        layouts = {(True, 4): "NHWC", (True, 5): "NDHWC", (False, 4): "NCHW", (False, 5): "NCDHW"}
        y = tf.raw_ops.FusedBatchNormV3(
            x=x, scale=scale, offset=offset, mean=mean, variance=variance, epsilon=epsilon,
            data_format=layouts[channels_last, max(rank, 4)], is_training=False)[0]
        return tf.reshape(y, shape) if rank < 4 else y

    backend.nn.batch_normalization = batch_normalization
    try:
        yield
    finally:
        backend.nn.batch_normalization = arithmetic


@contextlib.contextmanager
def _traceable_grouped_conv():
    """Emit every convolution as TensorFlow's own op while tracing. Keras compiles a grouped one
    (groups > 1, ConvNeXt's) with XLA, a function call tf2onnx cannot convert; traced, never run
    on TensorFlow's CPU kernels, it needs no XLA, and tf2onnx writes a grouped ONNX Conv."""
    from keras.src.backend.tensorflow import nn

    compiled = nn.conv

    def conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
        import tensorflow as tf

        return tf.nn.convolution(inputs, kernel, strides, padding.upper(),
                                 data_format=nn._convert_data_format(data_format,
                                                                     len(inputs.shape)),
                                 dilations=dilation_rate)

    nn.conv = conv
    try:
        yield
    finally:
        nn.conv = compiled


@contextlib.contextmanager
def _without_conv_batchnorm_fusion():
    from tf2onnx.optimizer import back_to_back_optimizer

    rewrites = back_to_back_optimizer._func_map
    original = dict(rewrites)
    rewrites.pop(("Conv", "BatchNormalization"), None)
    try:
        yield
    finally:
        rewrites.clear()
        rewrites.update(original)



# Ops tf2onnx's optimizer folds when every input is a constant that would lose a weight: the
# arithmetic, and a concatenation, whose result holds two weights' values and is neither.
_FOLDED_ARITHMETIC = frozenset({"Add", "Sub", "Mul", "Concat"})


@contextlib.contextmanager
def _weight_arithmetic_kept():
    """tf2onnx's optimizer folds Add, Sub, Mul and Concat of constants, weights among them,
    after Grappler has kept them (`_weights_fed`): Gemma's RMSNorm computes `1 + scale` in every
    call, as HF's does, and that work was lost; SAM3's decoder concatenates its query and
    presence embeddings (128 + 64), and the folded (3, 64) table was taken for a new weight,
    the two read as unused. An op that reads a float tensor of more than one element is kept;
    scalars and integer shapes fold as before."""
    from tf2onnx.optimizer.const_fold_optimizer import ConstFoldOptimizer

    fold = ConstFoldOptimizer._fold_node

    def fold_all_but_weight_arithmetic(self, node, graph):
        if node.type in _FOLDED_ARITHMETIC and any(_is_weight_constant(i) for i in node.inputs):
            return False
        return fold(self, node, graph)

    ConstFoldOptimizer._fold_node = fold_all_but_weight_arithmetic
    try:
        yield
    finally:
        ConstFoldOptimizer._fold_node = fold


def _is_weight_constant(node) -> bool:
    """Whether a tf2onnx node is a float constant of more than one element (a weight)."""
    if node is None or not node.is_const():
        return False
    tensor = node.get_attr_value("value")  # its header: a filled weight is never expanded
    return is_float_dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).name) \
        and math.prod(tensor.dims) > 1

@contextlib.contextmanager
def _work_written_twice_kept():
    """tf2onnx merges nodes of one op on the same inputs: a layer applied twice to one tensor
    (PARSeq's decoder, whose two streams project the same keys) was counted once, where Keras
    computes it twice and torch's exporter keeps both. Only constants are merged."""
    from tf2onnx.optimizer.merge_duplicated_nodes_optimizer import MergeDuplicatedNodesOptimizer

    skip = MergeDuplicatedNodesOptimizer._skip_node_type
    MergeDuplicatedNodesOptimizer._skip_node_type = staticmethod(lambda node: not node.is_const())
    try:
        yield
    finally:
        MergeDuplicatedNodesOptimizer._skip_node_type = skip


def _erfc_as_erf(ctx, node, name, args):
    """tf2onnx handler: erfc(x) = 1 − erf(x) (TensorFlow's exact GELU is written with erfc)."""
    erf = ctx.insert_new_node_on_input(node, "Erf", node.input[0], name=node.name + "_erf")
    from tf2onnx import utils

    dtype = utils.map_onnx_to_numpy_type(ctx.get_dtype(node.input[0]))
    one = ctx.make_const(node.name + "_one", np.array(1, dtype=dtype))
    node.type = "Sub"
    ctx.replace_inputs(node, [one.output[0], erf.output[0]])
    return node


def _check_converted(proto: onnx.ModelProto, label: str) -> None:
    """Refuse a graph that still holds TensorFlow ops tf2onnx could not convert, naming the first."""
    for node in _all_nodes(proto.graph):
        unconverted = node.domain == _TF_NAMESPACE or (
            is_standard_domain(node.domain) and not onnx.defs.has(node.op_type))
        if unconverted:
            scope = node.name.rsplit("/", 1)[0] if "/" in node.name else node.name
            raise OnnxFlopsError(f"{label}: TensorFlow op {node.op_type} in '{scope}' has no ONNX "
                                 "conversion")


def _all_nodes(graph: onnx.GraphProto):
    for node in graph.node:
        yield node
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _all_nodes(a.g)
            for g in a.graphs:
                yield from _all_nodes(g)


# Complex tensors as ONNX's DFT holds them: a trailing dim of 2 (real, imaginary). keras.ops.fft2
# (FNet's token mixing) is Complex → FFT2D → Real in TensorFlow, none of which tf2onnx converts.

def _complex_as_pair(ctx, node, name, args):
    """tf2onnx handler: Complex(re, im) → Concat(re[..., None], im[..., None], axis=-1)."""
    shape = ctx.get_shape(node.input[0])
    dtype = ctx.get_dtype(node.input[0])
    axes = ctx.make_const(utils_name(node, "axes"), np.array([-1], dtype=np.int64)).output[0]
    pair = []
    for part in node.input:
        unsqueezed = ctx.make_node("Unsqueeze", [part, axes], op_name_scope=node.name)
        ctx.set_dtype(unsqueezed.output[0], dtype)
        pair.append(unsqueezed.output[0])
    ctx.replace_inputs(node, pair)
    node.type = "Concat"
    node.set_attr("axis", -1)
    ctx.set_dtype(node.output[0], dtype)
    ctx.set_shape(node.output[0], None if shape is None else [*shape, 2])


def _fft_as_dft(ctx, node, name, args):
    """tf2onnx handler: FFT / FFT2D / FFT3D over the innermost 1, 2 or 3 dims → one DFT per
    transformed dim, on the (real, imaginary) pairs `_complex_as_pair` makes."""
    dims = {"FFT": 1, "FFT2D": 2, "FFT3D": 3}[node.type]
    shape = ctx.get_shape(node.input[0])
    rank = len(shape) if shape is not None else None
    if rank is None:
        raise ValueError(f"{node.name}: {node.type} of unknown rank")
    dtype = ctx.get_dtype(node.input[0])
    signal = node.input[0]
    for axis in range(rank - 1 - dims, rank - 2):  # all transformed dims but the last
        dft = ctx.make_node("DFT", [signal], attr={"axis": axis}, op_name_scope=node.name)
        ctx.set_dtype(dft.output[0], dtype)
        ctx.set_shape(dft.output[0], shape)
        signal = dft.output[0]
    ctx.replace_inputs(node, [signal])
    node.type = "DFT"
    node.set_attr("axis", rank - 2)
    ctx.set_dtype(node.output[0], dtype)
    ctx.set_shape(node.output[0], shape)


def _part_of_pair(ctx, node, name, args):
    """tf2onnx handler: Real / Imag → the pair's element 0 / 1 (Gather on the last dim)."""
    shape = ctx.get_shape(node.input[0])
    dtype = ctx.get_dtype(node.input[0])
    index = ctx.make_const(utils_name(node, "index"),
                           np.array(0 if node.type == "Real" else 1, dtype=np.int64)).output[0]
    ctx.replace_inputs(node, [node.input[0], index])
    node.type = "Gather"
    for key in list(node.attr):
        del node.attr[key]
    node.set_attr("axis", -1)
    ctx.set_dtype(node.output[0], dtype)
    ctx.set_shape(node.output[0], None if shape is None else shape[:-1])


def utils_name(node, what: str) -> str:
    return f"{node.name}/{what}"


_COMPLEX_HANDLERS = {"Complex": (_complex_as_pair, []), "FFT": (_fft_as_dft, []),
                     "FFT2D": (_fft_as_dft, []), "FFT3D": (_fft_as_dft, []),
                     "Real": (_part_of_pair, []), "Imag": (_part_of_pair, [])}
