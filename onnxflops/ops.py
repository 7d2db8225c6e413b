"""What an ONNX op is, beyond its cost: the domains and op families every stage asks about.

Each family is written here once and imported by the stages that need it (validation, analysis,
canonical forms, counting, profiling, comparison, serving). An op's cost rule lives in costs/;
its value, where shape arithmetic needs one, in analysis/values.py. A leaf: imports nothing.
"""

from __future__ import annotations

# --- domains -------------------------------------------------------------------------------------

# The default ONNX domain, however a model spells it.
DEFAULT_DOMAIN = ("", "ai.onnx")
# Every domain ONNX itself defines, in either spelling of the default one: its shape inference
# types their nodes, and their float attributes are coefficients by ONNX's schemas.
ONNX_DOMAINS = frozenset(DEFAULT_DOMAIN + ("ai.onnx.ml", "ai.onnx.preview", "ai.onnx.training",
                                           "ai.onnx.preview.training"))
# The domains (as domain keys) whose nodes are checked as onnxruntime checks them.
CHECKED_DOMAINS = frozenset(("", "ai.onnx.ml", "ai.onnx.preview.training"))

# --- structure -----------------------------------------------------------------------------------

# The standard ops whose attributes hold graphs (Loop's body, If's branches, ...); a node of any
# other domain may hold one too, and is asked.
HOLDS_SUBGRAPHS = frozenset({"If", "Loop", "Scan", "SequenceMap"})
# Of those, the ops whose graph is a body run once per iteration, its inputs and outputs the node's.
ITERATES_A_BODY = frozenset({"Loop", "Scan"})
# Ops that build, read or change a sequence of tensors.
SEQUENCE_OPS = frozenset({"SplitToSequence", "SequenceConstruct", "SequenceEmpty",
                          "SequenceInsert", "SequenceErase", "SequenceAt", "SequenceLength",
                          "ConcatFromSequence"})
# Ops whose `axis` onnxruntime's schema checks against their first input's rank at load,
# within [-rank, rank - 1], where ONNX's own inference does not (LayerNormalization of axis 2
# over a rank-2 input: "Unexpected axis value (2)"; the fuzz run's mlp_legacy:192309).
AXIS_WITHIN_INPUT_RANK = frozenset({"LayerNormalization"})
# Ops that run a recurrence over time: the RNN cells and the loops exporters unroll them into.
RECURRENCES = frozenset({"LSTM", "GRU", "RNN", "Loop", "Scan"})

# --- what a node reads ---------------------------------------------------------------------------

# Inputs read only for their type or shape: they never make a node's result vary at run time.
TYPE_ONLY_INPUTS = {"CastLike": (1,), "RandomNormalLike": (0,), "RandomUniformLike": (0,),
                    "EyeLike": (0,)}
# (De)quantizing a weight carries the weight; its scale and zero point are not parameters.
WEIGHT_CARRYING_INPUTS = {"DequantizeLinear": (0,), "QuantizeLinear": (0,)}
# (De)quantizing a weight is its storage format, not work: fused kernels (MatMulNBits,
# QLinearConv) read the quantized weight as it is stored. In the standard and onnxruntime's
# domains alike.
STORAGE_FORMATS = frozenset(WEIGHT_CARRYING_INPUTS)
# Ops that draw a weight's initial values: never part of a forward pass.
INITIALISERS = frozenset({"RandomNormal", "RandomUniform", "RandomNormalLike",
                          "RandomUniformLike", "Multinomial", "Bernoulli"})
# Ops that make a table of varying values from scalars (positions, a window, a filter bank): what
# float work on literals starts from.
TABLE_MAKERS = frozenset({"Range", "HannWindow", "HammingWindow", "BlackmanWindow",
                          "MelWeightMatrix"})
# Ops whose output is a shape's numbers: its value follows from the input's shape alone.
SHAPE_READERS = frozenset({"Shape", "Size"})
# Ops whose output shape follows from the values of their inputs, any of them.
SHAPE_FROM_VALUES = frozenset({"Resize", "Upsample", "Range", "OneHot"})
# Ops that make a constant from attributes or from a shape alone: a value no input carries.
CONSTANT_SOURCES = frozenset({"Constant", "ConstantOfShape"})
# Ops whose inputs past the first say how, not what (a mean's axes, CastLike's target type).
LATER_INPUTS_NOT_DATA = frozenset({"ReduceMean", "CastLike"})

# --- shapes --------------------------------------------------------------------------------------

# Standard ops whose (first) output has their first input's shape.
SHAPE_KEEPING = frozenset((
    "Relu", "LeakyRelu", "Sigmoid", "Tanh", "Elu", "Selu", "HardSigmoid", "HardSwish", "Gelu",
    "Softplus", "Clip", "Neg", "Abs", "Exp", "Log", "Sqrt", "Erf", "Reciprocal", "Identity", "Cast",
    "CastLike", "Dropout", "Softmax", "LogSoftmax", "BatchNormalization", "InstanceNormalization",
    "LayerNormalization", "LRN", "GroupNormalization"))
# onnxruntime's contrib ops (com.microsoft) whose one output has their first input's shape.
CONTRIB_SHAPE_KEEPING = frozenset((
    "Gelu", "FastGelu", "BiasGelu", "QuickGelu", "BiasAdd", "BiasDropout", "BiasSoftmax",
    "SimplifiedLayerNormalization", "LayerNormalization", "RotaryEmbedding", "QLinearSigmoid",
    "QLinearLeakyRelu", "QLinearSoftmax", "ComplexMul", "ComplexMulConj", "Inverse", "Trilu",
    "GroupNormalization", "MeanVarianceNormalization"))
# Ops whose output has the broadcast shape of their inputs (ONNX's multidirectional broadcast).
BROADCASTING = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "PRelu",
                          "Where"})
# Reductions over axes (attribute `axes`, or from opset 18 an input), keepdims by default.
REDUCTIONS = frozenset({"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd",
                        "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
                        "ReduceSumSquare"})

# --- data movement -------------------------------------------------------------------------------

# The same elements in another shape or order: no arithmetic, and in most runtimes no copy.
VIEWS = frozenset({"Transpose", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity"})
# Views whose output is their input's buffer at run time (onnxruntime's kernels alias it): a
# roofline moves no bytes for them, though the count charges a read and a write.
ALIASES = VIEWS - {"Transpose"}
# A tensor's values moved, copied or repeated, none computed (a weight's values stay its own).
MOVES = VIEWS | {"Cast", "Expand", "Concat", "Slice", "Tile"}
# A constant's value carried unchanged up to its broadcast (a bias spelled Expand(0)).
BROADCASTS = frozenset({"Expand", "Cast", "CastLike", "Reshape", "Unsqueeze", "Identity", "Tile"})
# Lookups of elements by index: a table's rows (embeddings) are read, not multiplied.
GATHERS = frozenset({"Gather", "GatherND", "GatherElements"})
# Ops that cut a tensor into parts along an axis.
CUTS = frozenset({"Slice", "Split"})

# --- arithmetic ----------------------------------------------------------------------------------

# Elementwise ops: one output element from the same position of each (broadcast) input.
ELEMENTWISE = frozenset((
    "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Sum", "Mean", "Neg", "Abs", "Reciprocal",
    "Sqrt", "Exp", "Log", "Erf", "Tanh", "Sigmoid", "Less", "Greater", "Equal", "LessOrEqual",
    "GreaterOrEqual", "Not", "And", "Or", "Where", "Cast", "CastLike", "Floor", "Ceil", "Round",
    "Sign", "Sin", "Cos", "Relu", "LeakyRelu", "Elu", "Selu", "Celu", "HardSigmoid", "HardSwish",
    "ThresholdedRelu", "Shrink", "Softplus", "Softsign", "Gelu", "Mish", "Swish"))
# Comparisons: a boolean per element, no gradient.
COMPARISONS = frozenset({"Less", "Greater", "LessOrEqual", "GreaterOrEqual", "Equal"})
# The periodic functions a sinusoidal position table is computed with.
SINUSOIDS = frozenset({"Sin", "Cos"})
# Normalised exponentials along an axis.
SOFTMAXES = frozenset({"Softmax", "LogSoftmax"})
# Means over axes: a global average pool is a ReduceMean over the spatial axes.
MEANS = frozenset({"GlobalAveragePool", "ReduceMean"})
# Products of two tensors summed over shared indices.
TENSOR_PRODUCTS = frozenset({"MatMul", "Einsum"})
# Convolutions, standard and onnxruntime's, each with the input that holds its weight: laid out
# [C_out, C_in/group, kernel...], or for a transposed convolution [C_in, C_out/group, kernel...].
CONVOLUTION_WEIGHTS = {"Conv": 1, "ConvInteger": 1, "QLinearConv": 3, "DeformConv": 1,
                       "FusedConv": 1, "NhwcConv": 1, "NhwcFusedConv": 1, "ConvTranspose": 1}
TRANSPOSED_CONVOLUTIONS = frozenset({"ConvTranspose"})
# Convolutions whose data input holds its channels last (N, spatial..., C).
CHANNELS_LAST_CONVOLUTIONS = frozenset({"NhwcConv", "NhwcFusedConv"})
# A tensor scaled: multiplied or divided by another (by a scalar, where a rule asks).
SCALINGS = frozenset({"Mul", "Div"})
# A tensor shifted: another added or subtracted.
SHIFTS = frozenset({"Add", "Sub"})
# A square written out: x·x, or x to the power 2.
SQUARINGS = frozenset({"Mul", "Pow"})
# Steps between attention's query·key scores and their Softmax: a scale, a bias, a mask.
SCORE_STEPS = SCALINGS | SHIFTS | {"Where"}
# Products that turn positions into rotary angles (inverse frequencies times positions).
ANGLE_PRODUCTS = frozenset({"Mul", "MatMul"})
# The functions a GELU is written around: erf (exact) or tanh (its approximation).
GELU_CORES = frozenset({"Erf", "Tanh"})

# --- values through ops (value ranges, traced copies) ---------------------------------------------

# Ops whose outputs hold only values of their first input: moved or selected, never computed.
VALUE_SELECTIONS = frozenset({"Identity", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Expand",
                              "Transpose", "Slice", "Gather", "GatherElements", "GatherND",
                              "Tile", "Split", "TopK", "Sort"})
# The four arithmetic ops of two operands.
ARITHMETIC = SHIFTS | SCALINGS
# Elementwise extremes of their operands.
EXTREMA = frozenset({"Max", "Min"})
# Reductions to an extreme, whose result lies within their input's range.
EXTREME_REDUCTIONS = frozenset({"ReduceMax", "ReduceMin"})
# What a trace puts between a value and its reader without changing it (up to its type).
TRACE_COPIES = frozenset({"Cast", "Identity"})
# Ops that join parts back into one tensor.
CONCATENATIONS = frozenset({"Concat", "ConcatFromSequence"})
