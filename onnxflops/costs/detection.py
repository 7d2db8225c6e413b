"""Detection heads: region pooling and non-maximum suppression.

A bilinear sample costs what Resize counts for linear interpolation in 2-D: 3 lerps of 3 operations.
"""

from __future__ import annotations

from onnxflops.costs.node import Node
from onnxflops.costs.registry import DETECTION, POOLING, Cost, rule

BILINEAR_SAMPLE_FLOPS = 3 * (2**2 - 1)
# Overlap corners (4 min/max), its width and height (2), clamped at 0 (2), its area (1),
# union = area_a + area_b − overlap (2), the ratio (1) and the threshold test (1).
IOU_FLOPS = 13
# sampling_ratio = 0 samples ⌈roi size / output size⌉ points per bin: data, counted as 2.
ADAPTIVE_SAMPLING_RATIO = 2


@rule("RoiAlign", category=POOLING)
def roi_align(n: Node) -> Cost:
    """numel(Y)·s²·(9 + 1): s² bilinear samples per bin, averaged or maxed (s = 2 when adaptive)"""
    s = n.attr("sampling_ratio", 0) or ADAPTIVE_SAMPLING_RATIO
    samples = s * s
    return Cost(flops=n.output().numel * samples * (BILINEAR_SAMPLE_FLOPS + 1))


@rule("MaxRoiPool", category=POOLING)
def max_roi_pool(n: Node) -> Cost:
    """numel(Y)·⌈H/ph⌉·⌈W/pw⌉ comparisons: bins of a whole-map ROI (ROI sizes are data)"""
    h, w = n.input(0).dims[2:]
    ph, pw = n.attr("pooled_shape")
    return Cost(flops=n.output().numel * -(-h // ph) * -(-w // pw))


@rule("NonMaxSuppression", category=DETECTION)
def non_max_suppression(n: Node) -> Cost:
    """batch·classes·(B·⌈log2 B⌉ + 13·K·B): sort B boxes, IoU of each of K kept boxes with all B"""
    batch, classes, boxes = n.input(1).dims
    kept = _kept_per_class(n, boxes)
    sort = boxes * (boxes - 1).bit_length()
    return Cost(flops=batch * classes * (sort + IOU_FLOPS * kept * boxes))


def _kept_per_class(n: Node, boxes):
    """max_output_boxes_per_class: absent means 0; a run-time value is bounded by the box count."""
    if not n.has_input(2):
        return 0
    limit = n.value(2)
    return boxes if limit is None else min(boxes, int(limit.reshape(-1)[0]))
