"""PyTorch → ONNX through torch.onnx.export, with a graph that depends on structure only.

Both exporters are told not to fold BatchNorm into the preceding conv (the dynamo exporter's
optimizer is off; the legacy one keeps BatchNorm with TrainingMode.PRESERVE), so BatchNorm's
scale/bias stay params and its running statistics buffers. Neither folds constants, so
initializers keep the names of the parameters and buffers they hold; the ONNX records which is which
(see `onnxflops.load.weight_roles`). Library custom ops and MoE experts export as
`onnxflops.converters.torch_ops` says. A module called with a dict of inputs is called by keyword,
the arguments left out at their defaults; an argument may be a list or dict of tensors. When one
exporter fails, the other is tried, with a warning. Where torch.export refuses a size read from
the data (a scatter sized by int(index.max()) + 1), it traces again reading the example inputs'
real values for it, and a DataPathWarning says the count holds for inputs of those values.

Counting needs no weight bytes. Unless `keep_weights=True`, the dynamo exporter's weights are
written as headers only (name, dtype, shape, marked external with no data), never serialized; its
graph does not depend on their values. Parameters on the meta device (`with torch.device("meta")`,
accelerate's init_empty_weights) have no bytes at all: they are headers whatever `keep_weights`
says, so a model too large for memory converts in the memory of its graph. The legacy exporter runs
the model and merges initializers that merely happen to be equal: it converts with stand-in weights
(see `onnxflops.converters.structure`) unless `keep_weights=True`, and cannot take meta weights.
torch is imported only when a module is converted.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import inspect
import io
import os
import re
import sys
import types
import warnings
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import onnx

from onnxflops.caches import collector_paused
from onnxflops.converters import single_trace
from onnxflops.converters.common import (ABSENT_WEIGHTS, check_container, conversion_failed,
                                         framework_logging_silenced, is_single_input,
                                         native_output_silenced, root_cause, triton_kept_out)
from onnxflops.converters.complex_ops import complex_translations
from onnxflops.converters.int64_inputs import cast_to_int64_where_only_int64
from onnxflops.converters.structure import StandInValues, is_float_dtype
from onnxflops.converters.torch_ops import (attention_as_4d, custom_translations,
                                            emitted_domains, experts_exported_as,
                                            record_custom_shapes, register_legacy_resizes,
                                            registry_export_patches)
from onnxflops.errors import (DataPathWarning, OnnxFlopsError, did_you_mean, first_line,
                              input_hint)
from onnxflops.graph import MAX_VALUE_ELEMENTS
from onnxflops.load import record_weight_roles

OPSET = 18
EXPORTERS = ("dynamo", "legacy")
# The dynamo exporter under transformers' ONNX export patches (registry_export_patches): a
# fallback only, so that a model either exporter converts is converted as written.
PATCHED_DYNAMO = "patched dynamo"
# The dynamo exporter again where torch.export refused a size read from data (a scatter sized by
# int(index.max()) + 1): the trace reads the example inputs' real values for it.
AT_EXAMPLE_VALUES = "dynamo at the example's values"
_WEIGHTS_ONLY = "TORCH_FORCE_WEIGHTS_ONLY_LOAD"


def torch_to_onnx(module, inputs=None, *, exporter: str = "dynamo", keep_weights: bool = False,
                  opset: int = OPSET) -> onnx.ModelProto:
    """Convert an nn.Module (or a torch.export.ExportedProgram) in eval mode.

    `inputs`: a tensor or a shape, a sequence of tensors/shapes (float32 random tensors are made from
    shapes), or a mapping forward-argument name → tensor/shape. An ExportedProgram defaults to its
    example inputs. A module whose weights are on the meta device gets its inputs there too.
    """
    is_program, label, names, target, weights, on_meta, args = _export_call(module, inputs,
                                                                            exporter)
    with contextlib.ExitStack() as stack:
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")  # exporter advice about the graph, not the user's problem
        stack.enter_context(contextlib.redirect_stdout(io.StringIO()))  # progress, graph dumps
        stack.enter_context(contextlib.redirect_stderr(io.StringIO()))  # a failed trace's graph
        stack.enter_context(framework_logging_silenced())
        if not is_program:
            stack.enter_context(eval_mode(module))
            stack.enter_context(experts_exported_as(module))
        stack.enter_context(triton_kept_out())
        # The legacy exporter cannot take meta weights; a program converts with dynamo only.
        fallbacks = () if is_program or on_meta else tuple(e for e in EXPORTERS if e != exporter)
        # Last, where both fail: dynamo with the registry's decompositions of torch ops.
        patched = () if is_program else (PATCHED_DYNAMO,)
        failures = []
        data_path = None  # where a legacy trace follows the model's data
        attempts = [exporter, *fallbacks, *patched]
        for attempt in attempts:
            try:
                with contextlib.ExitStack() as weights_swapped:
                    if attempt == "legacy" and not keep_weights:
                        weights_swapped.enter_context(_stand_in_weights(weights))
                    if attempt == PATCHED_DYNAMO \
                            and not weights_swapped.enter_context(registry_export_patches()):
                        continue  # this transformers has no patches
                    proto = _export(attempt, target, args, names, opset, keep_weights)
                if attempt == "legacy" and not keep_weights:
                    data_path = _traced_on_data(proto, target, args, names, opset)
                break
            except OnnxFlopsError:
                raise
            except Exception as e:  # the exporters raise anything; the user gets one line
                failures.append(_Failure.of(attempt, e, module))
                if attempt == "dynamo" and _is_data_dependent(failures[-1].said):
                    attempts.insert(attempts.index(attempt) + 1, AT_EXAMPLE_VALUES)
        else:
            raise conversion_failed(label, _root_cause(failures),
                                    _dtype_hint([f.said for f in failures], inputs),
                                    "\n".join(f.details for f in failures))
    if attempt == AT_EXAMPLE_VALUES:
        warnings.warn(DataPathWarning(
            f"{label}: a size or a branch it reads from its inputs' values (torch.export: "
            f"{failures[-1].said}) is taken at the example inputs' values: the count holds for "
            "inputs of those values"), stacklevel=2)
        failures = failures[:-1]  # said here: the retry of the same exporter converted it
    if failures:
        warnings.warn(f"{label}: {_root_cause(failures)}; converted with the {attempt} "
                      "exporter instead", stacklevel=2)
    if data_path:
        warnings.warn(DataPathWarning(
            f"{label}: the legacy exporter's trace depends on the model's data: traced with "
            f"stand-in weights and with its own, the graphs differ, first at {data_path}: the "
            "model branches or loops on tensor values, so the count holds for one path, not "
            "for every input"), stacklevel=2)
    proto.graph.name = _model_name(module, is_program)
    record_torch_weight_roles(proto, target, is_program)
    return proto


class _ExportCall(collections.namedtuple(
        "_ExportCall", "is_program label names target weights on_meta args")):
    """What either exporter is called with: the module (wrapped to take its inputs by name where
    they are given so), the example arguments and the input names."""


def _export_call(module, inputs, exporter: str) -> _ExportCall:
    import torch

    if exporter not in EXPORTERS:
        raise OnnxFlopsError(f"unknown exporter '{exporter}' (choose from {', '.join(EXPORTERS)})")
    is_program = isinstance(module, torch.export.ExportedProgram)
    if is_program and isinstance(inputs, Mapping) and not inputs:
        inputs = None  # the command line's "no --input": the program's own example inputs
    label = f"PyTorch model '{_model_name(module, is_program)}'"
    if is_program and exporter == "legacy":
        raise OnnxFlopsError(f"{label}: an ExportedProgram converts with the dynamo exporter only")
    names = argument_names(module)
    target = module
    if isinstance(inputs, Mapping) and not is_program:
        names = _keyword_names(module, inputs, label)
        target = _keyword_call(module, names)
    weights = list(module.state_dict.values()) if is_program else _unique_tensors(module)
    on_meta = any(t.is_meta for t in weights)
    if on_meta and exporter == "legacy":
        raise OnnxFlopsError(f"{label}: its weights are on the meta device, which only the dynamo "
                             "exporter converts")
    args = _example_args(module, inputs, names, is_program, label, on_meta)
    return _ExportCall(is_program, label, names, target, weights, on_meta, args)


def torch_to_deployed_onnx(module, inputs=None, *, exporter: str = "dynamo") -> onnx.ModelProto:
    """The graph torch's own export gives a user, with the module's weights, in eval mode:
    `torch.onnx.export(..., dynamo=True)` with its default optimization (constants folded,
    BatchNorm folded into its conv, a conv's zero bias dropped), or for exporter="legacy" the
    TorchScript exporter's defaults (constant folding; BatchNorm folded in eval mode). Inputs as
    `torch_to_onnx` takes them; the graph inputs are named alike."""
    import torch

    call = _export_call(module, inputs, exporter)
    if call.on_meta:
        raise OnnxFlopsError(f"{call.label}: its weights are on the meta device: there is "
                             "nothing to run")
    with contextlib.ExitStack() as stack:
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")
        stack.enter_context(contextlib.redirect_stdout(io.StringIO()))  # the exporter's progress
        stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
        stack.enter_context(framework_logging_silenced())
        if not call.is_program:
            stack.enter_context(eval_mode(module))
        stack.enter_context(triton_kept_out())
        stack.enter_context(torchlib_registry_reused())  # with the complex translations
        input_names = _input_names(call.names, call.args)
        try:
            if exporter == "legacy":
                buffer = io.BytesIO()
                with native_output_silenced():
                    torch.onnx.export(call.target, _positional(call.args), buffer, dynamo=False,
                                      input_names=input_names)
                proto = onnx.load_from_string(buffer.getvalue())
            else:
                program = torch.onnx.export(call.target, _positional(call.args), dynamo=True,
                                            input_names=input_names)
                cast_to_int64_where_only_int64(program.model)
                proto = program.model_proto
        except Exception as e:  # the exporters raise anything; the user gets one line
            raise OnnxFlopsError(f"{call.label}: the {exporter} exporter cannot convert it "
                                 f"({first_line(root_cause(e))})") from None
    proto.graph.name = _model_name(module, call.is_program)
    return proto


def _traced_on_data(proto: onnx.ModelProto, module, args: tuple, names: list[str],
                    opset: int) -> str | None:
    """Where a trace again with the model's own weights first differs from `proto`, traced with
    stand-ins (other ops, or other integer constants: the experts a batch is routed to); None
    where they are alike, or the second trace fails. A difference is a path the model's data
    chose, by Python control flow on tensor values that a trace records as one path: the count
    holds for that path only (a DataPathWarning says so)."""
    try:
        own = _export_legacy(module, args, names, opset)
    except Exception:  # noqa: BLE001 - the exporters raise anything; the first trace stands
        return None
    return _first_difference(proto.graph, own.graph)


def _first_difference(a: onnx.GraphProto, b: onnx.GraphProto) -> str | None:
    """Where two traces differ, named as in `a`: the first node of another op, else the first
    integer constant the other lacks (the experts a batch was routed to); None where they are
    alike. Float constants may differ (the weights do), and so may where constants stand."""
    a_nodes, b_nodes = _traced_nodes(a), _traced_nodes(b)
    a_ops = [n for n in a_nodes if n.op_type != "Constant"]
    b_ops = [n for n in b_nodes if n.op_type != "Constant"]
    for x, y in zip(a_ops, b_ops):
        if (x.op_type, x.domain) != (y.op_type, y.domain):
            return f"node '{x.name or x.op_type}' ({x.op_type})"
    if len(a_ops) != len(b_ops):
        return f"op {min(len(a_ops), len(b_ops))} (one trace has {len(a_ops)} ops, the other " \
               f"{len(b_ops)})"
    others = collections.Counter(filter(None, map(_integer_value, b_nodes)))
    for node in a_nodes:
        value = _integer_value(node)
        if value is not None:
            if not others[value]:
                return f"node '{node.name or node.op_type}' (an integer Constant)"
            others[value] -= 1
    return None


def _traced_nodes(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
    """The graph's nodes but the Identity of an initializer: the legacy exporter stores weights
    of equal values once, each other name an Identity of it (fresh norms' ones and zeros), so
    those depend on the weights' values, not on the path."""
    stored = {t.name for t in graph.initializer}
    return [n for n in graph.node if not (n.op_type == "Identity" and n.input[0] in stored)]


def _integer_value(node: onnx.NodeProto) -> tuple | None:
    """A Constant node's integer value (dtype, shape, bytes); None for any other node."""
    if node.op_type != "Constant" or not node.attribute or \
            node.attribute[0].type != onnx.AttributeProto.TENSOR:
        return None
    value = onnx.numpy_helper.to_array(node.attribute[0].t)
    if not np.issubdtype(value.dtype, np.integer):
        return None
    return str(value.dtype), value.shape, value.tobytes()


def record_torch_weight_roles(proto: onnx.ModelProto, module, is_program: bool = False) -> None:
    """Record in `proto` which of its initializers hold `module`'s parameters and which its
    buffers (the exporters name initializers after them); every other constant is neither. The
    parameters no node reads are recorded apart, with their sizes (`unused`)."""
    parameters, buffers = _weight_names(module, is_program)
    record_weight_roles(proto, parameters, buffers, exhaustive=True,
                        unused=_unused_parameters(proto, module, is_program))


def _unused_parameters(proto: onnx.ModelProto, module, is_program: bool) -> dict[str, int]:
    """Parameter → element count, for each parameter (a tied one once, by its first name) that no
    node of `proto` reads under any of its names: the exporters leave such parameters out, or
    keep them as initializers nothing reads. A wrapper's own prefix is left off the names."""
    read = _names_read(proto.graph)
    if is_program:
        named = [(n, module.state_dict[n]) for n in module.graph_signature.parameters
                 if n in module.state_dict]
    else:
        named = list(module.named_parameters(remove_duplicate=False))
    names_of: dict[int, list[str]] = {}
    tensors: dict[int, object] = {}
    for name, tensor in named:
        names_of.setdefault(id(tensor), []).append(name)
        tensors[id(tensor)] = tensor
    wrapped = isinstance(module, _keyword_call_class())
    return {(names[0].removeprefix("module.") if wrapped else names[0]): tensors[key].numel()
            for key, names in names_of.items() if not any(n in read for n in names)}


def _names_read(graph: onnx.GraphProto) -> set[str]:
    """Every name a node of `graph` or of its subgraphs reads."""
    read = set()
    for node in graph.node:
        read.update(node.input)
        for attribute in node.attribute:
            for body in (attribute.g, *attribute.graphs) if attribute.type in (
                    onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS) else ():
                read |= _names_read(body)
    return read


def is_graph_only(proto: onnx.ModelProto) -> bool:
    """Whether a converted model's weights are headers whose data was never written."""
    return any(entry.key == "location" and entry.value == ABSENT_WEIGHTS
               for t in proto.graph.initializer for entry in t.external_data)


def _weight_names(module, is_program: bool) -> tuple[list[str], list[str]]:
    """The names torch gives the parameters and the buffers: the exporters name initializers so.
    A tied weight has several names, any one of which its one initializer may take."""
    if is_program:
        return list(module.graph_signature.parameters), list(module.graph_signature.buffers)
    return ([n for n, _ in module.named_parameters(remove_duplicate=False)],
            [n for n, _ in module.named_buffers(remove_duplicate=False)])


def load_exported_program(path, *, unsafe: bool = False):
    """Load a .pt2 file saved with torch.export.save.

    torch.export.load may unpickle parts of the archive in full (running code they name); unless
    `unsafe`, every unpickling it does is restricted to weights (TORCH_FORCE_WEIGHTS_ONLY_LOAD).
    """
    if Path(path).is_file() and zipfile.is_zipfile(path):
        _check_exported_program_archive(Path(path))  # said before torch takes seconds to import
    import torch

    check_container(Path(path))
    previous = os.environ.get(_WEIGHTS_ONLY)
    if not unsafe:
        os.environ[_WEIGHTS_ONLY] = "1"
    try:
        with framework_logging_silenced():  # it logs the error it raises: said here once, in one line
            return torch.export.load(str(path))
    except Exception as e:  # a corrupt or unsafe archive raises zipfile, pickle or runtime errors
        # --unsafe helps only where the weights-only unpickler refused something.
        refused = "weights only" in str(e).lower() or "weights_only" in str(e).lower()
        hint = "; if it holds pickled objects and you trust it, use --unsafe" \
            if refused and not unsafe else ""
        raise OnnxFlopsError(f"{path}: not a loadable torch.export program ({first_line(e)}"
                             f"{hint})") from None
    finally:
        if previous is None:
            os.environ.pop(_WEIGHTS_ONLY, None)
        else:
            os.environ[_WEIGHTS_ONLY] = previous


def _check_exported_program_archive(path: Path) -> None:
    """torch.export.save writes one folder holding `archive_format`; a torch.save checkpoint or
    any other zip is said so in one line, before torch reads it."""
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
        raise OnnxFlopsError(f"{path}: not a readable zip archive ({first_line(e)})") from None
    if not any(name.count("/") == 1 and name.endswith("/archive_format") for name in names):
        kind = "a torch.save checkpoint" if any(n.endswith("/data.pkl") for n in names) \
            else "a zip archive"
        raise OnnxFlopsError(f"{path}: {kind}, not a torch.export program (torch.export.save "
                             "writes one; no archive_format entry found)")


def export_dynamo(module, args: tuple, names: list[str], opset: int, dynamic_shapes=None,
                  keep_weights: bool = True) -> onnx.ModelProto:
    """torch.onnx.export with torch.export, its optimizer off; `dynamic_shapes` as torch.export
    takes them (the dims left symbolic in the graph). Weights on the meta device are written as
    headers, and unless `keep_weights` every large one too (see `_drop_weight_bytes`)."""
    import torch

    translations = custom_translations()
    with _trace_modes(), torchlib_registry_reused(), single_trace.op_signatures_reused():
        traced = _traced_once(module, args, opset, translations) if dynamic_shapes is None \
            else None
        # the one trace puts attention on 4-D views by its own rule; the exporter's trace needs
        # the mode (the legacy exporter translates attention of any rank)
        with single_trace.decomposition_skipped(traced) if traced is not None \
                else attention_as_4d(), single_trace.types_promoted_as_torch_does():
            program = torch.onnx.export(traced if traced is not None else module,
                                        _positional(args), dynamo=True, optimize=False,
                                        opset_version=opset,
                                        input_names=_input_names(names, args), verbose=False,
                                        dynamic_shapes=dynamic_shapes,
                                        custom_translation_table=translations or None)
    cast_to_int64_where_only_int64(program.model)
    record_custom_shapes(program.model.graph, emitted_domains(translations))
    _drop_weight_bytes(program.model.graph, keep_weights)
    return program.model_proto


def captured_program(module, args: tuple, dynamic_shapes):
    """torch.export's program of `module` on `args`, `dynamic_shapes` left symbolic, traced
    once as torch.onnx.export's first capture strategy traces it (non-strict, its flags) and in
    the modes `export_dynamo` runs the exporter in; torch's error raised as it is.
    `export_dynamo` of the program translates it without tracing again, so a caller that stops
    on the trace's suggested fixes traces only as often as it needs. Where torch lays its
    exporter out otherwise, NotImplementedError: the exporter then captures the module itself,
    never with other flags than its own."""
    import torch

    try:
        from torch.fx.experimental import _config as fx_config
        from torch.onnx._internal.exporter import _capture_strategies as strategies
        rnn_decompositions = strategies._patch_dynamic_shape_rnn_decompositions  # noqa: SLF001
        deferred = strategies._flags.PREFER_DEFERRED_RUNTIME_ASSERTS_OVER_GUARDS  # noqa: SLF001
        exporters = (rnn_decompositions(dynamic_shapes),
                     fx_config.patch(backed_size_oblivious=True))
        flags = {"prefer_deferred_runtime_asserts_over_guards": deferred}
    except (ImportError, AttributeError):
        raise NotImplementedError("torch.onnx.export's capture strategy is laid out otherwise") \
            from None
    with contextlib.ExitStack() as modes:
        for mode in (_trace_modes(), attention_as_4d(), *exporters):
            modes.enter_context(mode)
        return torch.export.export(module, tuple(args), dynamic_shapes=dynamic_shapes,
                                   strict=False, **flags)


@contextlib.contextmanager
def _trace_modes():
    """What every trace for the exporter runs under: the garbage collector paused (a trace makes
    long-lived objects, no cycles), no Python stack recorded per node, graph code made lazily."""
    with collector_paused(), single_trace.stack_traces_skipped(), \
            single_trace.graph_code_deferred():
        yield


def _traced_once(module, args: tuple, opset: int, translations: dict):
    """`module` traced once to the ops the exporter translates (see
    `onnxflops.converters.single_trace`), or None where the exporter should trace it itself: an
    ExportedProgram, a torch without the internals, or a trace that fails (the exporter then tries
    its own strategies, and says why it failed)."""
    import torch

    if isinstance(module, torch.export.ExportedProgram) or not single_trace.available() \
            or _has_tied_weights(module):
        return None
    registry = _trace_registry(opset, translations)
    try:  # every argument positional, as `_positional` hands them to torch.onnx.export
        return single_trace.traced_once(module, tuple(args), None, registry)
    except Exception:  # noqa: BLE001 - torch.onnx.export traces it again and reports its failure
        return None


def _trace_registry(opset: int, translations: dict):
    """The registry of translations the one trace decomposes for, as torch.onnx.export builds
    it: torchlib's at `opset`, and `translations` (the custom ones) added."""
    from torch.onnx._internal.exporter._registration import ONNXRegistry

    registry = ONNXRegistry.from_torchlib(max(opset, OPSET))
    for op, translation in translations.items():
        registry.register_op(op, translation, is_complex=False)
    return registry


def _has_tied_weights(module) -> bool:
    """Whether a parameter or buffer is reachable under two names. The one trace gives each name
    an initializer of its own; the exporter's retrace gives the tensor one (`params` counts it
    once), so such modules go the exporter's way."""
    named = [*module.named_parameters(remove_duplicate=False),
             *module.named_buffers(remove_duplicate=False)]
    return len({id(t) for _, t in named}) < len(named)


@contextlib.contextmanager
def torchlib_registry_reused():
    """torch.onnx.export's registry of torchlib translations, built once per process and copied
    for each export, for the duration.

    The exporter builds it anew on every call, inferring each of ~2,000 functions' signatures
    (about a second, more than tracing a ResNet-50); the copy is what it would build, since only
    the exporter's own call adds to it (the custom translations). Where torch lays its registry
    out otherwise, the exporter builds its own as before."""
    try:
        from torch.onnx._internal.exporter._registration import ONNXRegistry
    except ImportError:
        ONNXRegistry = None  # noqa: N806 - a class, under its own name
    built = getattr(ONNXRegistry, "__dict__", {}).get("from_torchlib")
    if not isinstance(built, classmethod):
        yield
        return

    def from_torchlib(cls, opset_version=None):
        pristine = _torchlib_registry(cls, built.__func__, opset_version, _torchvision_ops_loaded())
        registry = cls.__new__(cls)
        registry.__dict__.update(pristine.__dict__)
        registry.functions = {target: list(metas) for target, metas in pristine.functions.items()}
        for target, translation in complex_translations().items():
            registry.register_op(target, translation, is_complex=True)
        return registry

    ONNXRegistry.from_torchlib = classmethod(from_torchlib)
    try:
        yield
    finally:
        ONNXRegistry.from_torchlib = built


def warm_torchlib_registry(opset: int = OPSET) -> None:
    """Build the registry that `torchlib_registry_reused` hands out, and the one trace's
    decomposition tables for it, now: a process whose children fork from it (the survey's)
    builds them once for all of them (a child that has registered more ops since builds its
    tables anew)."""
    with torchlib_registry_reused():
        registry = _trace_registry(opset, custom_translations())
        if single_trace.available():
            single_trace.decomposition_tables(registry)


@functools.cache
def _torchlib_registry(cls, build, opset_version: int | None, torchvision_ops: bool):
    """The registry `build` makes, once per opset; torchvision's ops enter it only once
    torchvision has loaded them, so whether it has is part of the key. Each translation's
    signature is inferred when an export first dispatches to it (`_signatures_inferred_on_use`)."""
    with _signatures_inferred_on_use(), _traced_domains_from_opset():
        return build(cls) if opset_version is None else build(cls, opset_version)


@contextlib.contextmanager
def _traced_domains_from_opset():
    """While the registry is built, a traced torchlib function's `function_ir`, which the build
    reads only for its domain, is that domain alone, read off the function's opset.

    onnxscript makes it by parsing the function's source and translating its signature (~500
    functions, about 0.7 s a process), and the translator writes the opset's domain there (a test
    compares the two for every function)."""
    try:
        from onnxscript._internal.values import TracedOnnxFunction
    except ImportError:
        TracedOnnxFunction = None  # noqa: N806 - a class, under its own name
    parsed = getattr(TracedOnnxFunction, "__dict__", {}).get("function_ir")
    if not isinstance(parsed, property):
        yield  # laid out otherwise: the build parses as before
        return
    TracedOnnxFunction.function_ir = property(
        lambda function: types.SimpleNamespace(domain=function.opset.domain))
    try:
        yield
    finally:
        TracedOnnxFunction.function_ir = parsed


@contextlib.contextmanager
def _signatures_inferred_on_use():
    """The registry's entries, made for the duration, infer their translation's signature when
    it is first read instead of when made: an export reads the few dozen of the ops its graph
    holds, not the ~2,000 (inferring one parses the function; all of them, half a second).

    A torchlib function whose signature cannot be inferred would be left out of the registry
    when made; read later, it raises instead (tests check that every one infers)."""
    from torch.onnx._internal.exporter import _registration

    eager = getattr(_registration, "OnnxDecompMeta", None)
    if not (isinstance(eager, type) and callable(getattr(eager, "__post_init__", None))):
        yield  # laid out otherwise: the entries infer as they are made
        return
    _registration.OnnxDecompMeta = _inferred_on_use(eager)
    try:
        yield
    finally:
        _registration.OnnxDecompMeta = eager


@functools.cache
def _inferred_on_use(eager: type) -> type:
    """A subclass of the registry's entry class whose `signature`, left None when made (to be
    inferred), is inferred by the entry's own __post_init__ when first read."""

    class InferredOnUse(eager):
        def __post_init__(self) -> None:
            pass  # inferred on first read

        @property
        def signature(self):
            if self.__dict__.get("_pending") and not self.skip_signature_inference:
                self._pending = False
                eager.__post_init__(self)  # reads None, infers, sets it (or raises)
            return self.__dict__.get("_signature")

        @signature.setter
        def signature(self, value) -> None:
            self._signature = value
            self._pending = value is None

    InferredOnUse.__name__ = InferredOnUse.__qualname__ = eager.__name__
    return InferredOnUse


def _torchvision_ops_loaded() -> bool:
    import torch

    return hasattr(torch.ops.torchvision, "nms") if "torchvision" in sys.modules else False


def _drop_weight_bytes(graph, keep_weights: bool) -> None:
    """Turn the exported graph's initializers into headers before it is serialized: those on the
    meta device, and unless `keep_weights` every one larger than the loader keeps (small ones are
    shape arithmetic, axes, scalars: the loader reads their values)."""
    import onnx_ir as ir

    for value in graph.initializers.values():
        tensor = value.const_value
        if tensor is None:
            continue
        raw = getattr(tensor, "raw", None)
        on_meta = getattr(raw, "is_meta", False)
        if not on_meta and (keep_weights or tensor.size <= MAX_VALUE_ELEMENTS):
            continue
        value.const_value = ir.ExternalTensor(ABSENT_WEIGHTS, None, None, tensor.dtype,
                                              shape=tensor.shape, name=value.name)


def _export_legacy(module, args: tuple, names: list[str], opset: int) -> onnx.ModelProto:
    import torch

    buffer = io.BytesIO()
    register_legacy_resizes(opset)
    with native_output_silenced():
        torch.onnx.export(module, _positional(args), buffer, dynamo=False, opset_version=opset,
                          input_names=_input_names(names, args), do_constant_folding=False,
                          training=torch.onnx.TrainingMode.PRESERVE)
    return onnx.load_from_string(buffer.getvalue())


def _positional(args: tuple) -> tuple:
    """`args` as torch.onnx.export takes them all positionally: it reads a trailing dict as
    keyword arguments, unless an empty dict follows it."""
    return (*args, {}) if args and isinstance(args[-1], Mapping) else args


def _input_names(names: list[str], args: tuple) -> list[str] | None:
    """The graph inputs' names: each named argument's own, or for a list or dict of tensors
    its name with each item's index or key ('images.0', 'extra.scale')."""
    import torch

    def leaves(name: str, value) -> list[str]:
        if isinstance(value, torch.Tensor):
            return [name]
        items = value.items() if isinstance(value, Mapping) else \
            enumerate(value) if isinstance(value, (list, tuple)) else ()
        return [leaf for key, item in items for leaf in leaves(f"{name}.{key}", item)]

    return [leaf for name, arg in zip(names, args) for leaf in leaves(name, arg)] or None


def _export(exporter: str, module, args: tuple, names: list[str], opset: int,
            keep_weights: bool) -> onnx.ModelProto:
    if exporter == AT_EXAMPLE_VALUES:
        with _real_values_propagated():
            return export_dynamo(module, args, names, opset, keep_weights=keep_weights)
    if exporter in ("dynamo", PATCHED_DYNAMO):
        return export_dynamo(module, args, names, opset, keep_weights=keep_weights)
    return _export_legacy(module, args, names, opset)


@dataclasses.dataclass(frozen=True)
class _Failure:
    """What one exporter's failure says, read as it is caught (its frames are not kept): its
    innermost error's first line, where in the model's code it was raised, and all of it."""

    said: str
    where: str  # "at file.py:12 in layer 'fc'"; '' where no frame of the model's code raised it
    details: str  # the exporter's whole chain with its traceback, for --debug

    @classmethod
    def of(cls, attempt: str, e: BaseException, module) -> "_Failure":
        import traceback

        cause = root_cause(e)
        return cls(first_line(cause), _raised_in_model(cause, module),
                   f"the {attempt} exporter:\n{''.join(traceback.format_exception(e)).rstrip()}")


# How the exporters name an op they have no translation for: dynamo's
# "<OpOverload(op='aten.linalg_eig', ...)>", the legacy one's "operator 'aten::linalg_eig'".
_UNTRANSLATED_OP = re.compile(r"No ONNX function found for <OpOverload\(op='([\w.]+)'"
                              r"|Exporting the operator '([\w:.]+)' to ONNX")


def _root_cause(failures: list[_Failure]) -> str:
    """The one line a failed conversion says: the exporter asked for's innermost error, where in
    the model's code it was raised; the op, where it is one with no translation. The fallbacks'
    are in the details: an exporter's own words about an op it has (torchlib's "histc with min
    == max") say more than another's "not supported"."""
    first = failures[0]
    found = _UNTRANSLATED_OP.search(first.said)
    if found:
        op = (found.group(1) or found.group(2)).replace("::", ".")
        return f"no ONNX translation of {op}{first.where and ' ' + first.where}"
    return f"{first.where}: {first.said}" if first.where else first.said


def _raised_in_model(e: BaseException, module) -> str:
    """`at model.py:12 in layer 'block.fc'`: where in the model `e` was raised, read off the
    frames of its traceback that are methods of the model's modules. The layer: the innermost
    such module (a torch Linear's own forward included); the place: the innermost such frame in
    the model's own code, not torch's or onnxflops'. Frames of other code (sympy under torch's
    shape checks) are not the model's. '' where no frame is the model's."""
    import torch

    if not isinstance(module, torch.nn.Module):
        return ""
    names = {id(m): name for name, m in module.named_modules()}
    ours = (os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(__file__)))
    layer = place = None
    tb = e.__traceback__
    while tb is not None:  # outermost first: the innermost frame that qualifies wins
        frame, tb = tb.tb_frame, tb.tb_next
        owner = frame.f_locals.get("self")
        if owner is None or id(owner) not in names:
            continue
        layer = names[id(owner)]
        file = frame.f_code.co_filename
        if not file.startswith("<") and not file.startswith(ours):
            place = f"at {os.path.basename(file)}:{frame.f_lineno}"
    where = [place] if place else []
    if layer:
        where.append(f"in layer '{layer}'")
    return " ".join(where)


# What torch.export says of a size or branch it cannot decide without the data.
_DATA_DEPENDENT = ("data-dependent expression", "data dependent expression")


def _is_data_dependent(message: str) -> bool:
    return any(said in message for said in _DATA_DEPENDENT)


@contextlib.contextmanager
def _real_values_propagated():
    """torch.export tracing with the example tensors' real values beside their fake ones (as its
    draft export does): a size or a test read from data takes the example's value."""
    import torch._functorch.config as functorch_config

    with functorch_config.patch(fake_tensor_propagate_real_tensors=True):
        yield


# What torch says when an embedding gets float indices: token ids made from a bare shape.
_FLOAT_INDICES = ("'indices'", "Long, Int")


def _dtype_hint(said: list[str], inputs) -> str:
    """The usual cause of an embedding refusing its indices: token ids given as a shape, made
    float32; say how to make them integers."""
    if not any(all(k in msg for k in _FLOAT_INDICES) for msg in said):
        return ""
    # The inputs made float32 from a bare shape; a name that reads as token ids first.
    made = [(n, v) for n, v in inputs.items()
            if is_single_input(v) and not hasattr(v, "shape") and not hasattr(v, "dtype")] \
        if isinstance(inputs, Mapping) else []
    made.sort(key=lambda item: not any(k in item[0] for k in ("id", "token")))
    name, shape = made[0] if made else ("input_ids", (1, 128))
    dims = tuple(shape) if is_single_input(shape) and shape else (1, 128)
    return f"; token ids are integers: give their dtype, e.g. {input_hint(name, dims, 'int64')}"


def _model_name(module, is_program: bool) -> str:
    if is_program:
        return "ExportedProgram"
    return type(module).__name__


def argument_names(module) -> list[str]:
    """The forward() arguments of a module, or the user inputs of an ExportedProgram."""
    import torch

    if isinstance(module, torch.export.ExportedProgram):
        return [spec.arg.name for spec in module.graph_signature.input_specs
                if spec.kind.name == "USER_INPUT"]
    try:
        parameters = inspect.signature(module.forward).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in parameters
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _keyword_names(module, given: Mapping, label: str) -> list[str]:
    """The forward() arguments `given` names, in forward()'s order; the others keep their defaults.

    Refuses a name forward() does not take, and leaves out none that it needs."""
    try:
        parameters = list(inspect.signature(module.forward).parameters.values())
    except (TypeError, ValueError):
        return list(given)
    takes_any = any(p.kind == p.VAR_KEYWORD for p in parameters)
    named = [p.name for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    listing = ", ".join(named)
    unknown = [n for n in given if n not in named]
    # Through **kwargs forward() takes any name, but one close to an argument left out is a
    # misspelling of it (`input_id` for a transformers model's `input_ids`), not a keyword the
    # model reads: told now, not as the failed export its missing argument causes.
    left_out = [n for n in named if n not in given]
    misspelled = [n for n in unknown if not takes_any or did_you_mean(n, left_out)]
    if misspelled:
        raise OnnxFlopsError(f"{label}: forward() has no argument '{misspelled[0]}'"
                             f"{did_you_mean(misspelled[0], left_out if takes_any else named)} "
                             f"(arguments: {listing})")
    required = [p.name for p in parameters if p.default is p.empty
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    missing = [n for n in required if n not in given]
    if missing:
        raise OnnxFlopsError(f"{label}: forward() needs {', '.join(repr(n) for n in missing)}, "
                             f"not given: give it, e.g. {input_hint(missing[0])} (arguments: "
                             f"{listing}; given: {', '.join(given)})")
    return [n for n in named if n in given] + unknown


@functools.cache
def _keyword_call_class():
    import torch

    class KeywordCall(torch.nn.Module):
        """Calls the module with its inputs by name; returns the tensors of what it returns
        (model outputs, dicts, tuples), and of a transformers cache only its recurrent states
        (_tensors)."""

        def __init__(self, module, names: list[str]):
            super().__init__()
            self.module = module
            self.names = names

        def forward(self, *args):
            return tuple(_tensors(self.module(**dict(zip(self.names, args)))))

    return KeywordCall


def _keyword_call(module, names: list[str]):
    return _keyword_call_class()(module, names)


def _tensors(value):
    """The tensors of a forward's result. Of a transformers cache, what its layers keep for the
    next call besides keys and values (cache_state_tensors): keys and values are read by the
    attention that made them, but a linear-attention layer's last state update, or the
    projections a compressing layer buffers until a window fills, are read by nothing else, and
    a graph without them leaves out work the forward runs (and returns, for the next call)."""
    import torch

    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _tensors(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)
    elif type(value).__module__.startswith("transformers.") and hasattr(value, "layers"):
        yield from cache_state_tensors(value)  # a cache's own (MiniMax's linear_cache)
        for layer in value.layers or ():
            yield from cache_state_tensors(layer)


# What a transformers LinearAttentionLayer keeps its states in: dicts of tensors.
RECURRENT_STATES = ("conv_states", "recurrent_states")


def recurrent_state_tensors(layer) -> dict:
    """A linear-attention cache layer's state tensors by name ("conv_states.0"), as they are
    (no copy); {} for any other layer."""
    import torch
    from transformers.cache_utils import LinearAttentionCacheLayerMixin

    if not isinstance(layer, LinearAttentionCacheLayerMixin):
        return {}
    return {f"{key}.{index}": t
            for key in RECURRENT_STATES
            for index, t in (getattr(layer, key, None) or {}).items()
            if isinstance(t, torch.Tensor)}


def cache_state_tensors(layer) -> list:
    """The floating tensors a transformers cache layer (or a cache) holds besides its keys and
    values, in its own attributes or in dicts and lists there: a linear-attention layer's
    recurrent states (recurrent_state_tensors), DeepSeek-V4's compressor buffers and compressed
    entries, a cache class's own per-layer states (MiniMax's linear_cache). Integer ones are
    bookkeeping (lengths, positions, window sizes), not work."""
    import torch

    def held(value):
        if isinstance(value, Mapping):
            value = list(value.values())
        items = value if isinstance(value, (list, tuple)) else [value]
        return [t for t in items if isinstance(t, torch.Tensor) and t.is_floating_point()]

    return [t for key, value in vars(layer).items() if key not in ("keys", "values")
            for t in held(value)]


def _example_args(module, inputs, names: list[str], is_program: bool, label: str,
                  on_meta: bool) -> tuple:
    import torch

    if inputs is None:
        if is_program and module.example_inputs is not None:
            return tuple(module.example_inputs[0])
        raise OnnxFlopsError(f"{label}: give its inputs (shapes or tensors), e.g. "
                             f"{input_hint(names[0] if names else 'x', (1, 3, 224, 224))}")
    if isinstance(inputs, Mapping):
        if is_program:
            unknown = [n for n in inputs if n not in names]
            missing = [n for n in names if n not in inputs]
            if unknown or missing:
                hint = did_you_mean(unknown[0], names) if unknown else ""
                raise OnnxFlopsError(f"{label}: its inputs are {', '.join(names)} "
                                     f"(given: {', '.join(inputs)}){hint}")
        items = [inputs[n] for n in names]
    elif is_single_input(inputs):
        items = [inputs]
    else:
        items = list(inputs)
    generator = torch.Generator().manual_seed(0)
    args = tuple(_as_tensor(item, generator, label, f"input {name!r}" if name else "input")
                 for item, name in zip(items, [*names[:len(items)],
                                               *[""] * (len(items) - len(names))]))
    if on_meta:  # weights without data meet inputs without data: nothing is computed
        from torch.utils._pytree import tree_map_only

        args = tree_map_only(torch.Tensor, lambda a: a.to("meta"), args)
    return args


def _as_tensor(item, generator, label: str, where: str = "input"):
    """A tensor from a tensor, an array or a shape; a list, tuple or dict of them (a detector's
    list of images) as the same container of tensors, as the forward takes it."""
    import torch

    if isinstance(item, torch.Tensor):
        return item
    if isinstance(item, np.ndarray):
        return torch.from_numpy(item)
    if isinstance(item, Sequence) and not isinstance(item, (str, bytes)) and item \
            and all(isinstance(d, (int, np.integer)) for d in item):
        if not all(d > 0 for d in item):
            raise OnnxFlopsError(f"{label}: {where} has shape {list(map(int, item))}: "
                                 "dims must be positive")
        shape, dtype = tuple(int(d) for d in item), getattr(torch, getattr(item, "dtype", "float32"))
        if dtype.is_floating_point:
            return torch.randn(shape, generator=generator, dtype=dtype)
        return torch.ones(shape, dtype=dtype)  # a valid token id, an attention mask letting all in
    if isinstance(item, (list, tuple)) and item:
        return type(item)(_as_tensor(x, generator, label, f"{where}[{i}]")
                          for i, x in enumerate(item))
    if isinstance(item, Mapping) and item:
        return {k: _as_tensor(x, generator, label, f"{where}[{k!r}]") for k, x in item.items()}
    raise OnnxFlopsError(f"{label}: {where} is {_described(item)}, neither a tensor, a shape of "
                         "positive ints, nor a list or dict of them")


def _described(item) -> str:
    """What a value is, in a few words: never its contents (a tensor prints whole)."""
    if isinstance(item, (list, tuple, dict)) and not item:
        return f"an empty {type(item).__name__}"
    if isinstance(item, (bool, int, float)) or item is None:
        return repr(item)
    if isinstance(item, str):
        return f"the text {item[:40]!r}"
    return f"a {type(item).__name__}"


def _unique_tensors(module) -> list:
    """Parameters and buffers, each shared tensor once, in registration order."""
    return list(module.parameters()) + list(module.buffers())


@contextlib.contextmanager
def _stand_in_weights(tensors):
    import torch

    floats = [t for t in {id(t): t for t in tensors}.values() if is_float_dtype(t.dtype)]
    saved = [t.detach().clone() for t in floats]
    values = StandInValues()
    try:
        with torch.no_grad():
            for t in floats:
                t.copy_(torch.from_numpy(values.like(tuple(t.shape), np.float32)))
        yield
    finally:
        with torch.no_grad():
            for t, real in zip(floats, saved):
                t.copy_(real)


@contextlib.contextmanager
def eval_mode(module):
    was_training = module.training
    module.eval()
    try:
        yield
    finally:
        module.train(was_training)
