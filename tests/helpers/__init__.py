"""What the tests share: hand-built models (builders), framework conversions made once per session
and a memory-capped child process for them (conversions), and independent oracles (oracles)."""

from helpers.builders import FLOAT, INT64, costed, model, node, typed_model, weight
from helpers.conversions import SIDES, converted, counted, run_capped
from helpers.oracles import (assert_agrees_with_bound_counts, flop_counter_flops, keras_oracle,
                             substituted)

__all__ = ["FLOAT", "INT64", "SIDES", "assert_agrees_with_bound_counts", "converted", "costed", "counted", "flop_counter_flops",
           "keras_oracle", "model", "node", "run_capped", "substituted", "typed_model", "weight"]
