"""One trace from an nn.Module to the ATen ops that torch's ONNX translation takes.

torch.onnx.export traces a module twice: torch.export.export to the training IR, then
`ExportedProgram.run_decompositions` traces the whole program again to decompose the ops that the
ONNX registry does not translate (the second trace is the larger half of an export). Here the
module is traced once, straight to that op set: torch.export's ATen-dispatch trace runs with the
exporter's own decomposition table (its CompositeImplicitAutograd part overridden as
`run_decompositions` overrides it, the rest given to the trace), and the exporter is handed the
program with its decomposition step skipped for that program only. The graph is the one the two
traces give (the tests compare the protos). Where torch's internals are laid out otherwise, the
caller exports as before.

The trace also records no Python stack per node (`torch.fx.config.do_not_emit_stack_traces`): the
count reads no stack traces, and extracting them costs a tenth of the trace.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Iterator

from onnxflops.converters.torch_ops import attention_on_4d_views, batch_norm_in_inference


def available() -> bool:
    """Whether this torch lays out the internals the one trace uses."""
    try:
        _internals()
    except (ImportError, AttributeError):
        return False
    return True


def traced_once(module, args: tuple, kwargs: dict | None, registry):
    """`module` as an ExportedProgram of the ops `registry` translates (those it does not,
    decomposed), from one non-strict trace."""
    import torch

    trace, _, _, override, _ = _internals()
    composite, rest = decomposition_tables(registry)
    attention = torch.ops.aten.scaled_dot_product_attention.default
    if attention in composite:  # the ONNX translation takes 4-D inputs only
        composite[attention] = attention_on_4d_views(composite[attention])
    batch_norm = torch.ops.aten.batch_norm.default
    if batch_norm not in composite and batch_norm not in rest:  # else the exporter's own rule
        composite[batch_norm] = batch_norm_in_inference
    with contextlib.ExitStack() as stack:
        # as the exporter's decomposition step runs (dims of size 0/1 stay symbolic)
        stack.enter_context(torch.fx.experimental._config.patch(backed_size_oblivious=True))
        stack.enter_context(override(composite))
        stack.enter_context(_aten_trace_decomposing(trace, rest))
        stack.enter_context(_torch_function_records_skipped(trace))
        stack.enter_context(_tensor_reads_passed_through())
        return trace._export(module, args, kwargs, strict=False, pre_dispatch=False)


def decomposition_tables(registry) -> tuple[dict, dict]:
    """The exporter's decomposition table for `registry`, split as run_decompositions splits it:
    (CompositeImplicitAutograd ops → their override during the trace (those ONNX translates kept
    whole), the rest → the decompositions the trace itself applies); fresh copies of tables made
    once per process for each registry and set of registered ops.

    Building and splitting them (every CIA op of the dispatcher materialized and checked) costs
    more than a tenth of a ResNet-50 count and depends on no model. torch rebuilds them on every
    export because an op may be registered meanwhile: the ops registered with a CIA kernel and
    the size of torch's decomposition table are part of the key, so a newly registered op
    builds them anew."""
    import torch

    decompositions = _internals()[1]
    implemented = frozenset(decompositions.get_onnx_implemented_overloads(registry))
    registered = frozenset(torch._C._dispatch_get_registrations_for_dispatch_key(
        "CompositeImplicitAutograd"))
    composite, rest = _split_tables(implemented, registered, len(torch._decomp.decomposition_table))
    return dict(composite), dict(rest)


@functools.lru_cache(maxsize=8)
def _split_tables(implemented: frozenset, registered: frozenset, decompositions: int) -> tuple:
    """(composite, rest) for the ops `implemented` (see `decomposition_tables`; the other two
    arguments are the cache's key only)."""
    _, tables, split, _, _ = _internals()
    with _cia_ops_materialized_once():
        return split(tables.create_onnx_friendly_decomposition_table(set(implemented)))


@contextlib.contextmanager
def _cia_ops_materialized_once() -> Iterator[None]:
    """torch's CompositeImplicitAutograd ops made attributes of `torch.ops` once, not again for
    each op namespace, for the duration.

    Building the tables collects the CIA ops of each of ~60 namespaces, and each collection first
    materializes every CIA op of the dispatcher (~4,000, each looked up by name): two thirds of the
    build, a twentieth of a whole ResNet-50 count. torch repeats it because an op may be
    registered between two collections; none is while the tables are built. Where torch lays this
    out otherwise, it runs as before."""
    try:
        from torch._export import utils
    except ImportError:
        utils = None
    materialize = getattr(utils, "_materialize_cpp_cia_ops", None)
    if materialize is None:
        yield
        return
    materialize()
    with _replaced(utils, "_materialize_cpp_cia_ops", lambda: None):
        yield


@contextlib.contextmanager
def op_signatures_reused() -> Iterator[None]:
    """The ONNX op signatures the exporter reads from each op's schema, made once per schema for
    the duration.

    The exporter's graph builder converts an op's ONNX schema into a signature every time it
    emits the op (onnx_ir's `OpSignature.from_op_schema`, each type string parsed anew: a tenth
    of translating a ResNet-50), while for a traced function it keeps the first (its
    `_pt_onnx_signature`); here a schema's are kept alike. onnxscript fetches a standard op's
    schema anew for each call (`onnx.defs.get_schema`, a fresh object each time), so those are
    kept by (name, version), which name one schema of ONNX's registry; any other schema (a custom
    translation's, which may share a name and version with another) by the object itself, held
    so that its id is not reused. A signature is only read (a default attribute is copied before
    a node takes it)."""
    import onnx_ir

    signature_class = onnx_ir.schemas.OpSignature
    made = signature_class.__dict__.get("from_op_schema")
    if not isinstance(made, classmethod):
        yield  # laid out otherwise: made anew each time, as before
        return
    signatures: dict[tuple, tuple] = {}

    def from_op_schema(cls, op_schema):
        if cls is not signature_class:  # a subclass's own
            return made.__func__(cls, op_schema)
        key = ("", op_schema.name, op_schema.since_version) \
            if op_schema.domain in _STANDARD_DOMAIN else (id(op_schema),)
        if key not in signatures:
            signatures[key] = (op_schema, made.__func__(cls, op_schema))
        return signatures[key][1]

    signature_class.from_op_schema = classmethod(from_op_schema)
    try:
        yield
    finally:
        signature_class.from_op_schema = made


# ONNX's own domain, under its two names
_STANDARD_DOMAIN = ("", "ai.onnx")


@contextlib.contextmanager
def decomposition_skipped(program) -> Iterator[None]:
    """The exporter's decomposition step passes `program` through as it is, for the duration
    (it was traced decomposed); any other program it decomposes as usual."""
    passes = _internals()[4]
    decompose = passes.decompose_with_registry

    def decomposed(exported_program, registry):
        if exported_program is program:
            return exported_program
        return decompose(exported_program, registry)

    with _replaced(passes, "decompose_with_registry", decomposed):
        yield


@contextlib.contextmanager
def types_promoted_as_torch_does() -> Iterator[None]:
    """The exporter's type-promotion pass sees a graph's views as reshapes and torch's alias ops
    as the ops they alias, for the duration; the graph it hands on keeps its own ops (the ONNX is
    the same op either way). A graph whose tensors are all of one dtype skips the pass
    (`_one_tensor_dtype`).

    That pass runs the graph again on fake tensors, where an op kept whole
    (scaled_dot_product_attention) may give its output other strides than the trace saw, and a
    view the trace recorded on a then-contiguous transpose fails ("Cannot view a tensor with
    shape ..."; BEiT, MaxViT). A reshape copies where a view cannot, and the graph is
    functional, so no alias is lost. And its table has rules for `div`, `mul`, `gt`, ... but none
    for their aliases (`divide`, `multiply`, `greater`, ...), which the ONNX translation keeps
    whole: their inputs were left of two dtypes, an ONNX Div of a float and an int64 that
    onnxruntime refuses (PE Audio-Video's masked group norm, `torch.divide` of a sum by a count)."""
    import torch

    passes = _internals()[4]
    promote = passes.insert_type_promotion_nodes
    retargets = _promoted_as()

    def promoted(graph_module):
        if _one_tensor_dtype(graph_module):
            return None  # nothing to promote: the pass would run the graph again to cast nothing
        moved = [(n, n.target) for module in graph_module.modules()
                 if isinstance(module, torch.fx.GraphModule) for n in module.graph.nodes
                 if n.op == "call_function" and n.target in retargets]
        for node, target in moved:
            node.target = retargets[target]
        try:
            return promote(graph_module)
        finally:
            for node, target in moved:
                node.target = target

    with _replaced(passes, "insert_type_promotion_nodes", promoted):
        yield


@functools.cache
def _promoted_as() -> dict:
    """What the type-promotion pass sees each of these ops as: a view as a reshape, and each alias
    of an elementwise op that the pass has no rule for as that op, overload by overload."""
    import torch

    aten = torch.ops.aten
    seen_as = {aten.view.default: aten.reshape.default}
    for alias, op in _ALIASES.items():
        aliases, ops = getattr(aten, alias, None), getattr(aten, op, None)
        if aliases is None or ops is None:
            continue  # a torch without the alias: nothing to see otherwise
        for overload in set(aliases.overloads()) & set(ops.overloads()):
            seen_as[getattr(aliases, overload)] = getattr(ops, overload)
    return seen_as


# torch's aliases of elementwise ops that the pass's table has no rule for, to the op each
# aliases (its rule's)
_ALIASES = {"divide": "div", "multiply": "mul", "subtract": "sub", "greater": "gt",
            "greater_equal": "ge", "less": "lt", "less_equal": "le", "not_equal": "ne"}


def _one_tensor_dtype(graph_module) -> bool:
    """Every tensor the graph (and each graph it nests) computes or reads is of one dtype, so the
    type-promotion pass would insert no cast: a Python scalar beside a tensor takes the tensor's
    dtype, and an op whose result is of another dtype shows it in its output. A node whose value
    the trace did not record counts as another dtype."""
    import torch

    dtypes = set()
    for module in graph_module.modules():
        if not isinstance(module, torch.fx.GraphModule):
            return False
        for node in module.graph.nodes:
            if node.op == "output" or (node.op == "placeholder" and not node.users):
                continue
            value = node.meta.get("val")
            if node.op == "get_attr":  # a constant (its tensor) or a nested graph (walked above)
                value = functools.reduce(getattr, node.target.split("."), module)
                if isinstance(value, torch.fx.GraphModule):
                    continue
            if value is None:
                return False
            values = value if isinstance(value, (list, tuple)) else [value]
            dtypes.update(v.dtype for v in values if isinstance(v, torch.Tensor))
    return len(dtypes) <= 1


@contextlib.contextmanager
def stack_traces_skipped() -> Iterator[None]:
    """FX tracing records no Python stack per node, for the duration."""
    import torch.fx.config

    with _replaced(torch.fx.config, "do_not_emit_stack_traces", True):
        yield


@contextlib.contextmanager
def graph_code_deferred() -> Iterator[None]:
    """FX graph modules made for the duration generate their Python code when first called,
    not each time their graph changes (torch.fx's lazy graph modules, as torch.compile uses them).

    The trace and the exporter's passes recompile the graph six times for a ResNet-50 (code made
    and compiled each time); the exporter reads the graph's nodes, so two remain. Where torch has
    no lazy graph modules, each recompiles as before."""
    try:
        from torch.fx._lazy_graph_module import _use_lazy_graph_module
    except ImportError:
        yield
        return
    with _use_lazy_graph_module(True):
        yield


@contextlib.contextmanager
def _aten_trace_decomposing(trace, table: dict) -> Iterator[None]:
    """torch.export's ATen-dispatch trace applies `table` (it takes no table of its own)."""
    with _replaced(trace, "_export_to_aten_ir",
                   functools.partial(trace._export_to_aten_ir, decomp_table=table)):
        yield


@contextlib.contextmanager
def _torch_function_records_skipped(trace) -> Iterator[None]:
    """torch.export's ATen trace records no torch function per node (its `torch_fn` metadata),
    for the duration.

    make_fx records them with a TorchFunctionMode that intercepts every torch call of the trace,
    most of them fake and functional tensors asking their own sizes, strides and layout for each
    parameter: ~12,000 calls in a ResNet-50 count, a twelfth of its trace. Neither the ONNX
    translation nor the count reads that record (the graph and the proto are the same without
    it). Where aot_autograd takes no such switch, the trace records them as before."""
    export = getattr(trace, "aot_export_joint_with_descriptors", None)
    if export is None or "_disable_torch_fn_metadata_mode" not in \
            inspect.signature(export).parameters:
        yield
        return
    with _replaced(trace, "aot_export_joint_with_descriptors",
                   functools.partial(export, _disable_torch_fn_metadata_mode=True)):
        yield


@contextlib.contextmanager
def _tensor_reads_passed_through() -> Iterator[None]:
    """torch.export's non-strict torch-function handler calls a tensor's own attribute reads and
    methods (`Tensor.__getitem__` aside) straight away, for the duration.

    The handler intercepts every torch call of the trace, ~25,000 in a ResNet-50 count, nearly all
    of them fake and functional tensors reading their own layout, sizes and strides, to rewrite
    the few it must (collectives, `torch.tensor` of symbolic ints, indexing by symbolic ints) and
    add fixes to the message of a data-dependent error. It rewrites no tensor method but
    `__getitem__`, and a trace that fails is traced again by the exporter (its messages come from
    there). Where torch lays the handler out otherwise, it handles every call as before."""
    try:
        from torch._export.non_strict_utils import _NonStrictTorchFunctionHandler as handler
    except ImportError:
        handler = None
    handles = getattr(handler, "__dict__", {}).get("__torch_function__")
    if handles is None:
        yield
        return
    import torch

    tensor = torch._C.TensorBase

    def torch_function(self, func, types, args=(), kwargs=None):
        owner = getattr(getattr(func, "__self__", None), "__objclass__", None) \
            if type(func) is _METHOD_WRAPPER else getattr(func, "__objclass__", None)
        if owner is tensor and func.__name__ != "__getitem__":
            return func(*args, **(kwargs or {}))
        return handles(self, func, types, args, kwargs)

    with _replaced(handler, "__torch_function__", torch_function):
        yield


# a descriptor's bound `__get__`/`__set__`, as torch functions hand a tensor's attribute reads
_METHOD_WRAPPER = type(object().__str__)


@contextlib.contextmanager
def _replaced(owner, name: str, value) -> Iterator[None]:
    """`owner.name` is `value` for the duration, then what it was."""
    before = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, before)


@functools.cache
def _internals():
    """torch's modules and functions the one trace uses; ImportError or AttributeError where
    this torch has them elsewhere."""
    import torch.export._trace as trace
    from torch.export.exported_program import (_override_composite_implicit_decomp,
                                               _split_decomp_table_to_cia_and_python_decomp)
    from torch.onnx._internal.exporter import _decomp, _fx_passes

    for module, name in ((trace, "_export"), (trace, "_export_to_aten_ir"),
                         (_decomp, "get_onnx_implemented_overloads"),
                         (_decomp, "create_onnx_friendly_decomposition_table"),
                         (_fx_passes, "decompose_with_registry"),
                         (_fx_passes, "insert_type_promotion_nodes")):
        getattr(module, name)
    return (trace, _decomp, _split_decomp_table_to_cia_and_python_decomp,
            _override_composite_implicit_decomp, _fx_passes)
