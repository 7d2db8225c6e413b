"""Stage 4, analysis: every tensor's shape and dtype, which tensors are constant, small known values;
which constant work is the network's (constant_work.py), sequences typed by element
(sequences.py), sizes that depend on data at their upper bound (bounds.py), from the ranges of
the values they are computed from where they are read from data (ranges.py).

The one entry point of this stage for the stages after it; its modules are its own business.
"""

from onnxflops.analysis.analyze import (
                                        AnalyzedModel,
                                        analyze,
                                        analyzed_function_body,
                                        has_unknown_outputs,
                                        mark_constants,
                                        refine_subgraph,
)
from onnxflops.analysis.constant_work import ConstantWork, is_foldable_cost
from onnxflops.analysis.evaluate import evaluate, reference_evaluate
from onnxflops.analysis.expand import (
    body_input_names,
    coefficients_shape_body,
    expansion_model,
    local_function_model,
)
from onnxflops.analysis.kinds import attribute_key, coefficient_values
from onnxflops.analysis.sequences import sequence_bytes
from onnxflops.analysis.values import (
    PROBE,
    VALUES,
    Operands,
    Probe,
    erf,
    followed_by,
    interpret,
    mean_axes,
)

__all__ = ["PROBE", "VALUES", "AnalyzedModel", "Operands", "Probe", "erf", "followed_by",
           "interpret", "mean_axes", "ConstantWork", "analyze", "analyzed_function_body",
           "attribute_key", "body_input_names", "coefficient_values", "coefficients_shape_body", "evaluate",
           "expansion_model", "has_unknown_outputs", "is_foldable_cost", "local_function_model",
           "mark_constants", "reference_evaluate", "refine_subgraph", "sequence_bytes"]
