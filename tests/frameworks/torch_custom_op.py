"""A library custom op for the export tests (`triple(x) = 3·x`, with its fake kernel): what a
library registers with torch.library and the ONNX exporter must translate as a custom node.
The module's name starts with "torch" on purpose: a library so named (torch_scatter) is still
not torch, and its ops export as custom nodes."""

import torch

NAMESPACE = "onnxflops_test"


@torch.library.custom_op(f"{NAMESPACE}::triple", mutates_args=())
def triple(x: torch.Tensor) -> torch.Tensor:
    return 3 * x


@triple.register_fake
def _(x):
    return torch.empty_like(x)
