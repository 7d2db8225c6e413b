"""Stage 2, bind: give the model's inputs the shapes the user asked for."""

from onnxflops.bind.inputs import SequenceShape, TypedShape, bind_inputs, parse_input_spec, real_inputs

__all__ = ["SequenceShape", "TypedShape", "bind_inputs", "parse_input_spec", "real_inputs"]
