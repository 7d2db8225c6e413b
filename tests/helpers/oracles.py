"""Independent oracles the counts are checked against."""

from __future__ import annotations

import sympy

import onnxflops
from onnxflops.results.tables import BACKWARD, SUMMED
from onnxflops.survey import oracle as survey_oracle


def flop_counter_flops(module, *inputs) -> int:
    """What torch.utils.flop_counter.FlopCounterMode counts for one forward pass (the survey's
    oracle: grad on, attention on the math backend)."""
    return survey_oracle.flop_counter_flops(module, inputs)


def substituted(report: onnxflops.Report, values: dict) -> dict:
    return {key: sympy.sympify(getattr(report.total, key)).subs(values)
            for key in (*SUMMED, *BACKWARD)}


def assert_agrees_with_bound_counts(path_or_proto, bind, values_list, **options):
    """The symbolic totals, at each set of values, equal the count with those values bound."""
    symbolic = onnxflops.count(path_or_proto, symbolic=True, training=True, **options)
    assert not symbolic.uncosted
    for values in values_list:
        bound = onnxflops.count(path_or_proto, inputs=bind(**values), training=True, **options)
        assert not bound.uncosted
        expected = {key: getattr(bound.total, key) for key in (*SUMMED, *BACKWARD)}
        at = {sympy.Symbol(k, integer=True, positive=True): v for k, v in values.items()}
        assert substituted(symbolic, at) == expected, values
    return symbolic


def keras_oracle(model, inputs=None):
    """What a Keras model computes by its layers (MACs, params, buffers, unused params), found
    without the ONNX path: `onnxflops.oracles.keras`, which the survey uses too."""
    from onnxflops.oracles.keras import keras_oracle as walk

    return walk(model, inputs)
