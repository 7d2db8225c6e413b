"""The report's answer in words, and the plain categories it speaks of.

Categories are decided from the counted ops behind each executed row (their cost rule's category
and, for a convolution, its shapes); the sentences are computed from hand-built profiles whose
times, FLOPs, bytes and ceilings are chosen so that every number in them follows by hand.
"""

from __future__ import annotations

import json

import pytest

from onnxflops.costs import registry
from onnxflops.profiling import categories
from onnxflops.profiling.ceilings import Ceilings
from onnxflops.profiling.measure import MeasuredNode, Profile
from onnxflops.profiling.runtime import Latency
from onnxflops.profiling.sentences import model_sentences, pair_sentence, sentences
from onnxflops.results import NodeReport, Report, Totals


def counted(op_type: str, inputs: list, outputs: list, flops: float = 0,
            category: str = registry.CONTRACTION) -> NodeReport:
    return NodeReport(op_type.lower(), op_type, "", "", category, flops=flops,
                      input_shapes=inputs, output_shapes=outputs)


# --- categories ------------------------------------------------------------------------------

@pytest.mark.parametrize("op_type, x, w, y, expected", [
    # group = C_in / W[1]: 32 / 1 = 32 = C_in: depthwise, whatever its kernel.
    ("Conv", [1, 32, 56, 56], [32, 1, 3, 3], [1, 32, 56, 56], "depthwise conv"),
    ("Conv", [1, 32, 56, 56], [32, 1, 1, 1], [1, 32, 56, 56], "depthwise conv"),
    # A channel multiplier (C_out = 2·C_in) is still one input channel per group.
    ("Conv", [1, 32, 28, 28], [64, 1, 5, 5], [1, 64, 28, 28], "depthwise conv"),
    ("Conv", [1, 64, 56, 56], [256, 64, 1, 1], [1, 256, 56, 56], "pointwise conv"),
    ("Conv", [1, 64, 56, 56], [64, 64, 3, 3], [1, 64, 56, 56], "dense conv"),
    # Grouped but not depthwise (ResNeXt's 32 groups of 4 channels): dense.
    ("Conv", [1, 128, 56, 56], [128, 4, 3, 3], [1, 128, 56, 56], "dense conv"),
    # One input channel, one group (a grayscale stem): dense, not depthwise.
    ("Conv", [1, 1, 28, 28], [8, 1, 3, 3], [1, 8, 26, 26], "dense conv"),
    ("Conv", [1, 16, 100], [16, 1, 3], [1, 16, 98], "depthwise conv"),
    # Transposed: W is [C_in, C_out/group, k...]; group = C_out / W[1].
    ("ConvTranspose", [1, 16, 8, 8], [16, 1, 2, 2], [1, 16, 16, 16], "depthwise conv"),
    ("ConvTranspose", [1, 16, 8, 8], [16, 8, 2, 2], [1, 8, 16, 16], "dense conv"),
    # Channels last: C_in is the last dim.
    ("NhwcConv", [1, 56, 56, 32], [32, 1, 3, 3], [1, 56, 56, 32], "depthwise conv"),
    # Unknown channels: not shown depthwise; the kernel still says pointwise.
    ("Conv", [1, "c", 7, 7], [8, 1, 1, 1], [1, 8, 7, 7], "pointwise conv"),
    ("Conv", [1, "c", 7, 7], [8, 1, 3, 3], [1, 8, 7, 7], "dense conv"),
])
def test_a_convolution_is_told_by_its_shapes(op_type, x, w, y, expected):
    assert categories.conv_kind(op_type, [x, w], [y]) == expected


def test_a_quantized_convolution_reads_its_weight_from_its_own_slot():
    x, scale, zero, w = [1, 32, 14, 14], [], [], [32, 1, 3, 3]
    node = counted("QLinearConv", [x, scale, zero, w], [[1, 32, 14, 14]], flops=1)
    assert categories.of_row([node]) == "depthwise conv"


def test_a_row_is_the_category_of_its_heaviest_counted_op():
    conv = counted("Conv", [[1, 16, 8, 8], [16, 1, 3, 3]], [[1, 16, 8, 8]], flops=2 * 9 * 1024)
    norm = counted("BatchNormalization", [[1, 16, 8, 8]], [[1, 16, 8, 8]], flops=2 * 1024,
                   category=registry.NORMALIZATION)
    act = counted("HardSwish", [[1, 16, 8, 8]], [[1, 16, 8, 8]], flops=5 * 1024,
                  category=registry.ACTIVATION)
    assert categories.of_row([norm, conv, act]) == "depthwise conv"
    assert categories.of_row([norm, act]) == "elementwise"
    assert categories.of_row([norm]) == "normalization"


def test_rows_without_flops_and_rows_without_counted_ops():
    reshape = counted("Reshape", [[4, 8]], [[32]], category=registry.DATA_MOVEMENT)
    relu = counted("Relu", [[0]], [[0]], category=registry.ACTIVATION)  # empty: no FLOPs
    # A tie at zero FLOPs goes to the work before data movement in CATEGORIES' order.
    assert categories.of_row([reshape, relu]) == "elementwise"
    assert categories.of_row([reshape]) == "data movement"
    # onnxruntime's own reorders and copies stand for no counted op.
    assert categories.of_row([]) == "data movement"
    assert categories.of_row([counted("Loop", [], [], 10, registry.CONTROL_FLOW)]) == "other"


@pytest.mark.parametrize("rule_category, expected", [
    (registry.ATTENTION, "matmul/attention"), (registry.RECURRENT, "matmul/attention"),
    (registry.POOLING, "pooling/reduction"), (registry.REDUCTION, "pooling/reduction"),
    (registry.ACTIVATION, "elementwise"), (registry.QUANTIZATION, "elementwise"),
    (registry.NORMALIZATION, "normalization"), (registry.DATA_MOVEMENT, "data movement")])
def test_cost_rule_categories_in_plain_words(rule_category, expected):
    assert categories.of_row([counted("Op", [[2]], [[2]], 1, rule_category)]) == expected
    assert categories.of_row([counted("MatMul", [[2, 2], [2, 2]], [[2, 2]], 8)]) == \
        "matmul/attention"


# --- sentences -------------------------------------------------------------------------------

# Peak 1 TFLOP/s, bandwidth 100 GB/s: the ridge at 10 FLOP/B.
ROOFS = Ceilings(1e12, 100e9, "float32", False, "")


def measured(category: str, flops: float, moved: int, time_ms: float) -> MeasuredNode:
    return MeasuredNode(category, "Op", [category], "", flops, moved, time_ms,
                        ROOFS.bound(flops, moved), category)


def profile_of(name: str, latency_ms: float, rows: list[MeasuredNode],
               ceilings: Ceilings | None = ROOFS) -> Profile:
    flops = sum(n.flops for n in rows)
    count = Report(name, "default", {}, Totals(flops=flops), [], Totals(), 0, [], [])
    return Profile(name, "cpu", 1, "all", Latency([latency_ms]), count, rows, [], ceilings,
                   "profiled", [])


@pytest.fixture
def big():
    """8 GFLOPs in 20 ms: 400 GFLOP/s, 40% of the peak; convs compute-bound, 1 ms of elementwise
    work memory-bound (0.1 FLOP/B)."""
    return profile_of("big", 20.0, [measured("dense conv", 6e9, 100_000_000, 12.0),
                                    measured("pointwise conv", 1.99e9, 20_000_000, 7.0),
                                    measured("elementwise", 1e7, 100_000_000, 1.0)])


@pytest.fixture
def small():
    """0.4 GFLOPs in 5 ms: 80 GFLOP/s. Depthwise: 40 MFLOPs over 20 MB (2 FLOP/B, its roof 200
    GFLOP/s) in 2 ms, 20 GFLOP/s; pointwise: 350 MFLOPs over 5 MB (70 FLOP/B) in 2.5 ms, 140
    GFLOP/s, 14% of the peak."""
    return profile_of("small", 5.0, [measured("depthwise conv", 4e7, 20_000_000, 2.0),
                                     measured("pointwise conv", 3.5e8, 5_000_000, 2.5),
                                     measured("elementwise", 1e7, 50_000_000, 0.3),
                                     measured("data movement", 0, 10_000_000, 0.2)])


def test_a_models_sentences(big, small):
    assert model_sentences(big) == [
        "big runs in 20.00 ms (median) for 8.00 GFLOPs: 400.00 GFLOP/s, 40% of the 1.00 TFLOP/s "
        "peak.",
        "Its time goes to dense conv 60%, pointwise conv 35% and elementwise 5%; 5% of it in "
        "memory-bound work."]
    # Data movement's 4% is under SHOWN_SHARE: summed as the rest. Memory-bound: depthwise,
    # elementwise and data movement, 2 + 0.3 + 0.2 of 5 ms.
    assert model_sentences(small) == [
        "small runs in 5.00 ms (median) for 400.00 MFLOPs: 80.00 GFLOP/s, 8% of the 1.00 TFLOP/s "
        "peak.",
        "Its time goes to pointwise conv 50%, depthwise conv 40%, elementwise 6% and the rest 4%; "
        "50% of it in memory-bound work."]


def test_a_pair_says_why_the_latency_ratio_is_not_the_flops_ratio(big, small):
    # 20x fewer FLOPs, 4x faster: the rate is 4/20 = 20% of big's. Depthwise grew by 40 points
    # and pointwise by 15; elementwise by 1 and data movement by 4 (under GROWN_SHARE).
    expected = (
        "small has 20.0× fewer FLOPs than big and runs 4.0× faster, because it runs at 20% of "
        "big's FLOP/s (80.00 GFLOP/s against 400.00 GFLOP/s): depthwise conv takes 40% of its "
        "time against 0% in big, memory-bound at 20.00 GFLOP/s, 10% of the bandwidth roof; "
        "pointwise conv takes 50% of its time against 35% in big, compute-bound at 140.00 "
        "GFLOP/s, 14% of the peak.")
    assert pair_sentence(big, small) == expected
    assert pair_sentence(small, big) == expected  # the one with fewer FLOPs is B either way
    assert sentences([big, small]) == [" ".join(model_sentences(big)),
                                       " ".join(model_sentences(small)), expected]


def test_a_pair_at_a_higher_rate_and_at_the_same_rate(big):
    # 1 GFLOP of matmul in 1 ms (1 TFLOP/s over 8 MB: compute-bound at the peak): 8x fewer FLOPs,
    # 20x faster, at 2.5x big's rate.
    fast = profile_of("fast", 1.0, [measured("matmul/attention", 1e9, 8_000_000, 1.0)])
    assert pair_sentence(big, fast) == (
        "fast has 8.0× fewer FLOPs than big and runs 20.0× faster, because it runs at 2.5× big's "
        "FLOP/s (1.00 TFLOP/s against 400.00 GFLOP/s): matmul/attention takes 100% of its time "
        "against 0% in big, compute-bound at 1.00 TFLOP/s, 100% of the peak.")
    # Half the FLOPs in half the time: the latency ratio is the FLOPs ratio.
    half = profile_of("half", 10.0, [measured("dense conv", 4e9, 50_000_000, 10.0)])
    assert pair_sentence(big, half) == (
        "half has 2.0× fewer FLOPs than big and runs 2.0× faster, as its FLOPs predict: both run "
        "at about the same rate (400.00 GFLOP/s against 400.00 GFLOP/s).")


def test_without_ceilings_the_sentences_give_rates_alone(big):
    bare = profile_of("bare", 10.0, [measured("depthwise conv", 2e8, 1_000_000, 10.0)], None)
    assert model_sentences(bare) == [
        "bare runs in 10.00 ms (median) for 200.00 MFLOPs: 20.00 GFLOP/s.",
        "Its time goes to depthwise conv 100%."]
    tiny = profile_of("tiny", 0.0381, [measured("elementwise", 3.81e3, 8_000, 0.0381)], None)
    assert model_sentences(tiny)[0] == "tiny runs in 0.0381 ms (median) for 3.81 KFLOPs: " \
                                       "100.00 MFLOP/s."
    assert pair_sentence(big, bare).endswith(
        "depthwise conv takes 100% of its time against 0% in big, at 20.00 GFLOP/s.")


def test_the_same_sentences_in_text_json_and_the_report(big, small):
    from onnxflops.html import page

    text = small.to_text()
    assert text.splitlines()[:2] == model_sentences(small)
    assert small.to_dict()["summary"] == model_sentences(small)
    assert json.loads(small.to_json())["by_category"]["depthwise conv"]["time_ms"] == 2.0
    report = page.Profiles([big, small])
    assert report.to_dict()["summary"] == sentences([big, small])
    markdown = page.to_markdown([big, small])
    html = page.to_html([big, small])
    for said in sentences([big, small]):
        assert said in markdown
        assert f"<p>{said}</p>" in html.replace("&#x27;", "'")


def test_a_rate_against_its_roof():
    from onnxflops.profiling.measure import Rollup
    from onnxflops.profiling.sentences import against_roof

    # 60 MFLOPs over 30 MB (2 FLOP/B: roof 200 GFLOP/s) in 100 ms: 0.6 GFLOP/s, 0.3% of it.
    slow = Rollup(nodes=1, flops=6e7, bytes=30_000_000, time_ms=100.0)
    assert against_roof(slow, ROOFS) == "memory-bound at 600.00 MFLOP/s, 0.3% of the bandwidth roof"
    # No FLOPs: its bytes per second against the bandwidth, 10 MB in 1 ms.
    moves = Rollup(nodes=1, flops=0, bytes=10_000_000, time_ms=1.0)
    assert against_roof(moves, ROOFS) == "moving 10.00 GB/s, 10% of the bandwidth roof"
    assert against_roof(moves, None) == "moving 10.00 GB/s"
    assert against_roof(Rollup(nodes=1, time_ms=1.0), ROOFS) == "with no counted work"
