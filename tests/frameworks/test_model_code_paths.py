"""What a transformers model runs differently when exported, and what it returns in a cache:
the survey's oracle and the count must see the same program.

- A model module's `is_torchdynamo_exporting` switch (Qwen3.5's gated delta rule solves its
  triangular system with solve_triangular when run, which FlopCounterMode counts as 0, and by
  forward substitution and products when exported): the oracle runs the exported path.
- A forward that returns a cache: what its layers keep besides keys and values (linear-attention
  states, a compressor's buffered projections) are outputs of the graph, so the last state
  update or the buffered projection (read by no other output) is counted, as the forward runs it.
"""

import sys
import types

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import onnxflops  # noqa: E402
from onnxflops.survey.oracle import flop_counter_flops  # noqa: E402

pytestmark = pytest.mark.slow


def _solver_in_a_modeling_module(monkeypatch, name: str):
    """A module class defined in a modeling module of its own (`name`) that holds transformers'
    `is_torchdynamo_exporting` switch, and that module."""
    code = types.ModuleType(name)
    code.is_torchdynamo_exporting = torch.compiler.is_exporting
    monkeypatch.setitem(sys.modules, code.__name__, code)

    class Solver(torch.nn.Module):
        def forward(self, a, b):
            if sys.modules[type(self).__module__].is_torchdynamo_exporting():
                return a @ b  # 4×4 @ 4×2: 32 MACs
            return torch.linalg.solve_triangular(a, b, upper=False)  # no formula: 0

    Solver.__module__ = code.__name__
    return Solver, code


def test_the_oracle_runs_the_path_the_model_takes_when_exported(monkeypatch):
    Solver, code = _solver_in_a_modeling_module(monkeypatch, "model_with_export_path")
    a, b = torch.eye(4), torch.ones(4, 2)
    assert flop_counter_flops(Solver(), (a, b)) // 2 == 32
    assert onnxflops.count(Solver(), inputs=(a, b)).total.macs == 32
    assert code.is_torchdynamo_exporting is torch.compiler.is_exporting  # put back


def test_a_returned_caches_recurrent_states_are_outputs():
    from transformers.cache_utils import DynamicCache, LinearAttentionLayer

    class StateUpdate(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(4, 3, bias=False)

        def forward(self, x):
            cache = DynamicCache()
            cache.layers = [LinearAttentionLayer()]
            cache.layers[0].recurrent_states[0] = x.transpose(-1, -2) @ x  # read by no output
            return {"out": self.proj(x), "past_key_values": cache}

    x = torch.ones(1, 2, 4)
    # proj 2·4·3 = 24, the state 4·2·4 = 32; left out before: 24
    assert onnxflops.count(StateUpdate(), inputs={"x": x}).total.macs == 24 + 32
    assert flop_counter_flops(StateUpdate(), (x,)) // 2 == 24 + 32


def test_what_a_returned_cache_buffers_for_the_next_call_is_an_output():
    from transformers.cache_utils import DynamicCache, DynamicLayer

    class Buffering(torch.nn.Module):
        # DeepSeek-V4's compressor: the gate of tokens short of a full window is projected and
        # kept in the cache layer until the next call, read by no output of this one.
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(4, 3, bias=False)
            self.gate = torch.nn.Linear(4, 2, bias=False)

        def forward(self, x):
            cache = DynamicCache()
            cache.layers = [DynamicLayer()]
            cache.layers[0].buffer_gate = {"compressor": self.gate(x)}
            cache.layers[0].entry_count = {"compressor": torch.tensor(0)}  # bookkeeping
            return {"out": self.proj(x), "past_key_values": cache}

    x = torch.ones(1, 2, 4)
    # proj 2·4·3 = 24, the buffered gate 2·4·2 = 16; left out before: 24
    assert onnxflops.count(Buffering(), inputs={"x": x}).total.macs == 24 + 16
    assert flop_counter_flops(Buffering(), (x,)) // 2 == 24 + 16


def test_what_a_cache_class_keeps_in_its_own_attributes_is_an_output():
    from transformers.cache_utils import DynamicCache

    class LinearCache(DynamicCache):  # MiniMax's: a per-layer linear-attention state list
        def __init__(self):
            super().__init__()
            self.linear_cache = []

    class Lightning(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(4, 3, bias=False)

        def forward(self, x):
            cache = LinearCache()
            cache.linear_cache.append(x.transpose(-1, -2) @ x)  # the state, read by no output
            return {"out": self.proj(x), "past_key_values": cache}

    LinearCache.__module__ = "transformers.models.minimax.modeling_minimax"  # as a library's
    x = torch.ones(1, 2, 4)
    # proj 2·4·3 = 24, the state 4·2·4 = 32; left out before: 24
    assert onnxflops.count(Lightning(), inputs={"x": x}).total.macs == 24 + 32


def test_a_scalar_parameter_folded_onto_a_product_is_still_a_parameter():
    # CLIP-like logit scale: (exp(clamp(s)) · a) @ b, the factor moved onto the product as its
    # value by the canonical forms; AIMv2 was one param short of parameters().
    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = torch.nn.Parameter(torch.tensor(2.0))
            self.proj = torch.nn.Linear(4, 3, bias=False)

        def forward(self, a, b):
            return (self.scale.clamp(0.0, 4.0).exp() * self.proj(a)) @ b.t()

    report = onnxflops.count(Logits(), inputs={"a": torch.ones(2, 4), "b": torch.ones(5, 3)})
    assert report.total.params == 4 * 3 + 1  # parameters(): proj's 12 and the scale
    assert report.total.macs == 2 * 4 * 3 + 2 * 3 * 5  # proj, then the logits


def test_the_export_path_of_a_part_from_another_modeling_module(monkeypatch):
    # A VLM whose language model is another family's (MiniCPM-V 4.6 holds Qwen3.5's text model):
    # the part's own module holds the switch; only the outer model's was made true, and the
    # oracle counted solve_triangular as 0 where the graph holds the products (+786,432 MACs).
    Solver, code = _solver_in_a_modeling_module(monkeypatch, "part_with_export_path")

    class Outer(torch.nn.Module):  # this test module's class: no switch of its own
        def __init__(self):
            super().__init__()
            self.part = Solver()

        def forward(self, a, b):
            return self.part(a, b)

    a, b = torch.eye(4), torch.ones(4, 2)
    assert flop_counter_flops(Outer(), (a, b)) // 2 == 32
    assert onnxflops.count(Outer(), inputs=(a, b)).total.macs == 32
    assert code.is_torchdynamo_exporting is torch.compiler.is_exporting
