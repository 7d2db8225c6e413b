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
from collections.abc import Iterator


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

    trace, decompositions, split, override, _ = _internals()
    # run_decompositions splits a copy of the table so: CIA ops overridden during the trace
    # (those ONNX translates kept whole), the rest decomposed by the trace itself.
    implemented = set(decompositions.get_onnx_implemented_overloads(registry))
    table = decompositions.create_onnx_friendly_decomposition_table(implemented)
    composite, rest = split(table)
    with contextlib.ExitStack() as stack:
        # as the exporter's decomposition step runs (dims of size 0/1 stay symbolic)
        stack.enter_context(torch.fx.experimental._config.patch(backed_size_oblivious=True))
        stack.enter_context(override(composite))
        stack.enter_context(_aten_trace_decomposing(trace, rest))
        return trace._export(module, args, kwargs, strict=False, pre_dispatch=False)


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

    passes.decompose_with_registry = decomposed
    try:
        yield
    finally:
        passes.decompose_with_registry = decompose


@contextlib.contextmanager
def views_promoted_as_reshapes() -> Iterator[None]:
    """The exporter's type-promotion pass sees a graph's views as reshapes, for the duration;
    the graph it hands on keeps them views (ONNX Reshape either way).

    That pass runs the graph again on fake tensors, where an op kept whole
    (scaled_dot_product_attention) may give its output other strides than the trace saw, and a
    view the trace recorded on a then-contiguous transpose fails ("Cannot view a tensor with
    shape ..."; BEiT, MaxViT). A reshape copies where a view cannot, and the graph is
    functional, so no alias is lost."""
    import torch

    passes = _internals()[4]
    promote = passes.insert_type_promotion_nodes
    view, reshape = torch.ops.aten.view.default, torch.ops.aten.reshape.default

    def promoted(graph_module):
        views = [n for n in graph_module.graph.nodes
                 if n.op == "call_function" and n.target is view]
        for node in views:
            node.target = reshape
        try:
            return promote(graph_module)
        finally:
            for node in views:
                node.target = view

    passes.insert_type_promotion_nodes = promoted
    try:
        yield
    finally:
        passes.insert_type_promotion_nodes = promote


@contextlib.contextmanager
def stack_traces_skipped() -> Iterator[None]:
    """FX tracing records no Python stack per node, for the duration."""
    import torch.fx.config

    previous = torch.fx.config.do_not_emit_stack_traces
    torch.fx.config.do_not_emit_stack_traces = True
    try:
        yield
    finally:
        torch.fx.config.do_not_emit_stack_traces = previous


@contextlib.contextmanager
def _aten_trace_decomposing(trace, table: dict) -> Iterator[None]:
    """torch.export's ATen-dispatch trace applies `table` (it takes no table of its own)."""
    to_aten = trace._export_to_aten_ir
    trace._export_to_aten_ir = functools.partial(to_aten, decomp_table=table)
    try:
        yield
    finally:
        trace._export_to_aten_ir = to_aten


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
