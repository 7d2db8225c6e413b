"""Standard twins: com.microsoft ops that compute what a standard op computes, in another layout
or under an older name, and cost what it costs.
"""

from __future__ import annotations

from onnxflops.costs.contrib.common import attributes, ms_rule
from onnxflops.costs.node import Node
from onnxflops.costs.pooling import max_pool
from onnxflops.costs.registry import DATA_MOVEMENT, POOLING, Cost


@ms_rule("NhwcMaxPool", category=POOLING)
def nhwc_max_pool(n: Node) -> Cost:
    """MaxPool's cost: the layout does not change the arithmetic"""
    return max_pool(n)


@ms_rule(["ExpandDims", "Trilu", "Pad", "GatherND", "Range", "Unique"], category=DATA_MOVEMENT)
def ms_standard_twin(n: Node) -> Cost:
    """the standard op's cost (ExpandDims is Unsqueeze)"""
    return n.cost_of(n.op_type if n.op_type != "ExpandDims" else "Unsqueeze",
                     [n.input_or_none(i) for i in range(n.num_inputs)], n.outputs(),
                     **attributes(n))
