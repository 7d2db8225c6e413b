"""The pipeline, top to bottom: (convert) → load → bind → normalize → analyze → canonicalize → count."""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import onnx

from onnxflops.analysis import AnalyzedModel, analyze
from onnxflops.bind import bind_inputs, real_inputs
from onnxflops.bind.inputs import inputs_by_name, shape_of
from onnxflops.caches import collector_paused
from onnxflops.canonical import canonicalize
from onnxflops.costs import CONVENTIONS, PER_OP_CONVENTIONS, RuleOverrides, with_rules
from onnxflops.counting import count_model
from onnxflops.dims import SYMBOL_MARK, is_symbolic
from onnxflops.errors import OnnxFlopsError, Uncostable, UncostedWarning
from onnxflops.load import load_model
from onnxflops.normalize import normalize
from onnxflops.progress import step, steps
from onnxflops.results import Report
from onnxflops.sources import to_onnx

ModelSource = str | os.PathLike | onnx.ModelProto


@dataclass
class Counted:
    """A count with the model it was made on: what measuring joins its timings to."""

    report: Report
    bound: onnx.ModelProto | None  # the loaded model with its inputs bound: what onnxruntime runs
    analyzed: AnalyzedModel  # the analyzed, canonical model whose nodes the report lists


def count(model: ModelSource, inputs: Mapping[str, Any] | Sequence | None = None,
          batch: int | None = None, convention: str = "default", *, training: bool = False,
          symbolic: bool = False, exporter: str = "dynamo", unsafe: bool = False,
          rules: RuleOverrides | None = None, strict: bool = False) -> Report:
    """Count MACs, FLOPs, params and memory traffic of `model` with its inputs bound as given.

    `model` is an .onnx path or an onnx.ModelProto, or a framework model converted first (a
    keras.Model, a torch nn.Module, a .keras/.h5/.pt2 file, a SavedModel directory or a
    `package.module:factory` spec). `inputs` are shapes, TypedShapes or arrays/tensors (each
    keeping its dtype where the model is converted), by input name or in order
    (bind.inputs_by_name); `exporter` / `unsafe` are passed on (see onnxflops.sources.to_onnx).
    An ONNX sequence input takes an onnxflops.SequenceShape, an optional one None for no value.

    `training`: also count the backward pass of a training step (`total.backward_flops`, ...).
    `symbolic`: dims left unbound stay symbols, and the counts are sympy formulas in them.
    `rules`: cost rules for this count only, by (domain, op type): a function of the node, or a
    (forward, backward) pair (see onnxflops.register_rule); the table itself is left as it is.

    A count that left nodes uncosted (its totals short of the model's work) warns with an
    UncostedWarning naming them, and `report.complete` is False; `strict=True` raises instead.
    """
    report = count_with_model(model, inputs, batch, convention, training=training,
                              symbolic=symbolic, exporter=exporter, unsafe=unsafe,
                              keep_bound=False, rules=rules).report
    if not report.complete:
        if strict:
            raise OnnxFlopsError(report.uncosted_summary())
        warnings.warn(report.uncosted_summary(), UncostedWarning, stacklevel=2)
    return report


def count_with_model(model: ModelSource, inputs: Mapping[str, Any] | Sequence | None = None,
                     batch: int | None = None, convention: str = "default", *,
                     training: bool = False, symbolic: bool = False, exporter: str = "dynamo",
                     unsafe: bool = False, keep_bound: bool = True,
                     rules: RuleOverrides | None = None) -> Counted:
    """`count`, keeping the bound and the analyzed model beside the report.

    `keep_bound=False`: the bound model is analyzed in place rather than copied, and
    `Counted.bound` is None.
    """
    if convention not in CONVENTIONS:
        raise OnnxFlopsError(f"unknown convention '{convention}': choose one of "
                             f"{', '.join(CONVENTIONS)}")
    if training and convention in PER_OP_CONVENTIONS:
        raise OnnxFlopsError(f"the {convention} convention prices the forward pass only, as "
                             f"{convention} does: count --training under another convention")
    table = with_rules(rules)
    with steps("counting"):
        prepared = to_onnx(model, inputs, batch=batch, exporter=exporter, unsafe=unsafe)
        model = prepared.counted
        if prepared.converted:
            inputs, batch = None, None
        with collector_paused():
            with step("loading"):
                proto = load_model(model)
                if inputs is not None:  # by name or in order; an array binds its shape
                    given = inputs_by_name(inputs, [i.name for i in real_inputs(proto)])
                    inputs = {name: shape_of(value) for name, value in given.items()}
                # `proto` is our own copy (load_model never returns the caller's): bound in place.
                bound = bind_inputs(proto, inputs, batch, allow_unbound=symbolic, in_place=True)
            shapes = {i.name: _declared(i) for i in real_inputs(bound)}
            name = prepared.name
            try:
                with step("analyzing"):
                    analyzed = canonicalize(analyze(normalize(bound), owned=not keep_bound))
                with step("costing"):
                    report = count_model(analyzed, convention, name, shapes, training, table)
            except Uncostable as e:  # a rule's complaint met outside a rule: the model's
                raise OnnxFlopsError(f"{name}: cannot be counted: {e}") from None
    return Counted(report, bound if keep_bound else None, analyzed)


def _declared(vi: onnx.ValueInfoProto) -> list[int | str]:
    return [d.dim_param.lstrip(SYMBOL_MARK) if is_symbolic(d.dim_param) else d.dim_value
            for d in vi.type.tensor_type.shape.dim]
