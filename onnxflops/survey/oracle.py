"""What a framework itself says a model costs: the independent check every survey row is held to.

torch: FlopCounterMode's total / 2 as MACs, with attention on the math backend (FlopCounterMode has
no formula for the CPU flash-attention kernel) and transformers' experts run eagerly (its grouped
kernel is one op the counter does not see into); params are `parameters()`. Nothing here touches
onnxflops' own pipeline. torch is imported only when a torch model is checked.
"""

from __future__ import annotations

import contextlib
import math


def flop_counter_flops(module, args: tuple = (), kwargs: dict | None = None) -> int:
    """What torch.utils.flop_counter.FlopCounterMode counts for one forward pass.

    Grad is enabled so torch's fused inference fast paths do not hide matmuls; meta tensors are
    counted as real ones are (the counter reads shapes only).
    """
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.utils.flop_counter import FlopCounterMode

    with torch.enable_grad(), sdpa_kernel(SDPBackend.MATH), eager_experts(module), \
            FlopCounterMode(display=False) as counter:
        module(*args, **(kwargs or {}))
    return counter.get_total_flops()


def torch_oracle(module, args: tuple = (), kwargs: dict | None = None,
                 unread: tuple[str, ...] = ()) -> tuple[int, int]:
    """(MACs, params) of a torch module in eval mode, as torch counts them.

    `unread`: parts of parameter names the forward pass never reads, left out of params.
    """
    module.eval()
    macs = flop_counter_flops(module, args, kwargs) // 2
    return macs, sum(p.numel() for name, p in module.named_parameters()
                     if not any(part in name for part in unread))


def keras_params(model, unread: tuple[str, ...] = ()) -> int:
    """A Keras model's trainable weights: its non-trainable ones are what torch calls buffers."""
    return sum(math.prod(w.shape) for w in model.trainable_weights
               if not any(part in w.path for part in unread))


@contextlib.contextmanager
def eager_experts(module):
    """transformers' mixture-of-experts layers run as plain per-expert matmuls for the duration."""
    config = getattr(module, "config", None)
    setter = getattr(module, "set_experts_implementation", None)
    previous = getattr(config, "_experts_implementation", None)
    switched = False
    if setter is not None and previous not in (None, "eager"):
        try:
            setter("eager")
            switched = True
        except (ValueError, AttributeError, KeyError):  # a model without experts
            pass
    try:
        yield
    finally:
        if switched:
            setter(previous)
