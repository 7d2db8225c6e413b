"""Keras (and TensorFlow SavedModel) → ONNX through tf2onnx, with a graph that depends on structure only.

Three things would otherwise make the ONNX graph depend on weight values:
- Grappler folds constants: a zero bias add disappears, fresh BatchNorm statistics vanish into the
  preceding conv. The model is traced with stand-in weights (see
  `onnxflops.converters.structure`) unless `keep_weights=True`.
- Keras 3 writes BatchNormalization as arithmetic that Grappler pushes into a bias-free conv. While
  tracing, 4-D/5-D BatchNorm is emitted as TensorFlow's FusedBatchNormV3, which tf2onnx turns into
  an ONNX BatchNormalization (scale and bias are params, mean and variance buffers, as in torch).
- tf2onnx's own optimizer fuses Conv + BatchNormalization; that one rewrite is switched off.
TensorFlow is imported only when a Keras model is converted.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from onnxflops.converters.common import check_container, is_single_input, native_output_silenced
from onnxflops.converters.structure import StandInValues, is_float_dtype
from onnxflops.dims import format_shape
from onnxflops.converters.weight_match import Weight, weight_roles_by_value
from onnxflops.load import record_weight_roles
from onnxflops.errors import OnnxFlopsError, first_line, last_line
from onnxflops.graph import is_standard_domain

OPSET = 18
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

    label = f"Keras model '{model.name}'"
    specs = _input_specs(_model_inputs(model, label), inputs, batch, label)

    structure = _input_structure(model)

    def call(*xs):
        return model(keras.tree.pack_sequence_as(structure, list(xs)), training=False)

    with _traceable_batch_norm():
        proto = _convert(tf.function(call), specs, model.variables, keep_weights, opset, label)
    proto.graph.name = model.name
    return proto


def saved_model_to_onnx(path: str | os.PathLike, inputs=None, *, batch: int = 1,
                        keep_weights: bool = False, opset: int = OPSET) -> onnx.ModelProto:
    """Convert the serving signature of a TensorFlow SavedModel directory (no Python code runs)."""
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

    proto = _convert(tf.function(call), specs, signature.variables, keep_weights, opset, label)
    proto.graph.name = Path(path).name
    return proto


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
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    logging.getLogger("tf2onnx").setLevel(logging.CRITICAL)  # unconverted ops are raised, not logged
    with native_output_silenced():  # what TensorFlow logs from C++ as Keras imports it
        import keras  # noqa: F401


def _model_inputs(model, label: str) -> list[tuple[str, tuple, str]]:
    try:
        declared = model.inputs
    except (AttributeError, ValueError):
        declared = None
    if not declared:
        raise OnnxFlopsError(f"{label} has no defined inputs (not built); call it once or give "
                             "inputs=")
    return [(t.name, tuple(t.shape), str(t.dtype)) for t in declared]


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


def _input_specs(declared: list[tuple[str, tuple, str]], given, batch: int, label: str) -> list:
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
            raise OnnxFlopsError(f"{label}: input '{name}' has unknown dim {unknown[0]} "
                                 f"(shape {format_shape(shape)}); give its shape with inputs=")
        specs.append(tf.TensorSpec(shape, tf.as_dtype(dtype), name=_tf_name(name, position)))
    return specs


def _overrides(given, names: list[str], label: str) -> dict[str, Any]:
    if given is None:
        return {}
    if isinstance(given, Mapping):
        unknown = [n for n in given if n not in names]
        if unknown:
            raise OnnxFlopsError(f"{label} has no input '{unknown[0]}' (inputs: {', '.join(names)})")
        return dict(given)
    items = [given] if is_single_input(given) else list(given)
    if len(items) != len(names):
        raise OnnxFlopsError(f"{label} takes {len(names)} input(s) ({', '.join(names)}), "
                             f"{len(items)} given")
    return dict(zip(names, items))



def _shape_and_dtype(value, declared_dtype: str) -> tuple[tuple[int, ...], str]:
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return tuple(int(d) for d in value.shape), _dtype_name(value.dtype)
    return tuple(int(d) for d in value), getattr(value, "dtype", declared_dtype)  # TypedShape


def _dtype_name(dtype) -> str:
    return getattr(dtype, "name", None) or str(dtype).rsplit(".", 1)[-1]


def _tf_name(name: str, position: int) -> str:
    cleaned = "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)
    return cleaned if cleaned[:1].isalnum() else f"input_{position}"


def _convert(fn, specs: list, variables, keep_weights: bool, opset: int, label: str) -> onnx.ModelProto:
    import tensorflow as tf
    from tf2onnx import convert, tf_loader

    stand_ins: list[Weight] = []
    with contextlib.ExitStack() as stack:
        stack.enter_context(native_output_silenced())  # TensorFlow's C++ logging
        stack.enter_context(_without_conv_batchnorm_fusion())
        try:
            with contextlib.ExitStack() as weights:
                if not keep_weights:
                    stand_ins = weights.enter_context(_stand_in_weights(variables))
                concrete = fn.get_concrete_function(*specs)
                # The arguments only: tensors the model captured (a Normalization layer's mean
                # and variance given to its constructor) are frozen into constants with the rest.
                input_names = [t.name for t in concrete.inputs[:len(specs)]]
                output_names = [t.name for t in concrete.outputs if t.dtype != tf.resource]
                frozen = _frozen(concrete, input_names)  # the real weights are back after this
            with tf.Graph().as_default():  # Grappler runs on the GraphDef, in graph mode
                frozen = tf_loader.tf_optimize(input_names, output_names, frozen)

            def convert_frozen():
                with tf.device("/cpu:0"):
                    return convert._convert_common(
                        frozen, name=label, continue_on_error=True, opset=opset,
                        custom_op_handlers={"Erfc": (_erfc_as_erf, [])},
                        input_names=input_names, output_names=output_names,
                        tensors_to_rename=convert.tensor_names_from_structed(
                            concrete, input_names, output_names))[0]

            try:
                with _optimizer_without_weight_copies():
                    proto = convert_frozen()
            except Exception:  # a failing optimizer pass: convert again, where it is skipped
                proto = convert_frozen()
        except OnnxFlopsError:
            raise
        except Exception as e:  # tf2onnx and TF raise anything; the user gets one line
            raise OnnxFlopsError(f"{label}: cannot convert ({last_line(e)})") from None
    _check_converted(proto, label)
    if stand_ins:
        record_weight_roles(proto, **weight_roles_by_value(proto, stand_ins))
    elif keep_weights:
        record_weight_roles(proto, **weight_roles_by_value(proto, _real_weights(variables),
                                                           distinct=False))
    return proto


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


@contextlib.contextmanager
def _stand_in_weights(variables):
    """Give every float variable a stand-in value for the duration; restore the real ones after.
    Yields the stand-ins, by which the converted graph's initializers are told apart."""
    unique = list({id(v): v for v in variables}.values())
    floats = [v for v in unique if is_float_dtype(_dtype_name(v.dtype))]
    saved = [v.numpy() for v in floats]
    values = StandInValues()
    stand_ins = []
    try:
        for position, (v, real) in enumerate(zip(floats, saved)):
            stand_in = values.like(real.shape, real.dtype)
            v.assign(stand_in)
            stand_ins.append(_weight(v, stand_in, position))
        yield stand_ins
    finally:
        for v, real in zip(floats, saved):
            v.assign(real)


def _real_weights(variables) -> list[Weight]:
    """Every float variable with its own values, by which a graph converted with them is read."""
    unique = list({id(v): v for v in variables}.values())
    floats = [v for v in unique if is_float_dtype(_dtype_name(v.dtype))]
    return [_weight(v, v.numpy(), position) for position, v in enumerate(floats)]


def _weight(variable, values: np.ndarray, position: int) -> Weight:
    key = getattr(variable, "path", None) or f"{variable.name}#{position}"
    return Weight(key, values, bool(getattr(variable, "trainable", True)))


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
    dims inserted around the call, free reshapes in the count.
    """
    from keras.src import backend

    arithmetic = backend.nn.batch_normalization

    def batch_normalization(x, mean, variance, axis, offset=None, scale=None, epsilon=1e-3):
        rank = len(x.shape)
        channels_last = axis in (-1, rank - 1)
        if rank > 5 or not (channels_last or axis == 1) or offset is None or scale is None:
            return arithmetic(x, mean, variance, axis, offset, scale, epsilon)
        import tensorflow as tf

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
