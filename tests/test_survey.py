"""`onnxflops survey`: verdicts, the row store (formats, resuming), sources, the config shrink
rule, and the per-row process with its caps. Rows here are made by hand or from .onnx files and
factories that import no framework; tests/frameworks/test_survey_models.py runs real registries."""

from __future__ import annotations

import json
import sys
import textwrap
import types

import onnx
import pytest

from helpers import model, node, weight
from onnxflops.cli import main
from onnxflops.errors import OnnxFlopsError
from onnxflops.survey import RowStore, judge, read_any, survey, tasks, top_reasons, totals
from onnxflops.survey.rows import COLUMNS, blank_row, reason_class
from onnxflops.survey.shrink import shrink
from onnxflops.survey.registries import parse


def counted_row(name="timm:a", macs=100, params=10, unused=0, oracle_macs=100,
                oracle_params=10) -> dict:
    return {**blank_row(name), "input": "1x3x8x8", "macs": macs, "flops": 2 * macs,
            "params": params, "unused_params": unused, "foldable_macs": 0, "buffers": 0,
            "bytes": 40, "oracle_macs": oracle_macs, "oracle_params": oracle_params,
            "seconds": 1.5, "peak_mb": 300.0}


# verdicts ----------------------------------------------------------------------------------------

def test_equal_macs_and_params_are_exact():
    row = judge(counted_row())
    assert (row["verdict"], row["reason"]) == ("exact", "")


def test_params_the_forward_never_reads_make_up_the_difference():
    # 10 read + 2 unread = the 12 parameters() holds
    assert judge(counted_row(params=10, unused=2, oracle_params=12))["verdict"] == "exact"


def test_macs_short_of_the_oracle_differ_by_the_amount_and_share():
    row = judge(counted_row(macs=90, oracle_macs=120))
    # 90 - 120 = -30, -30 / 120 = -25%
    assert (row["verdict"], row["reason"]) == ("differs", "MACs -30 (-25.00%)")


def test_uncosted_nodes_keep_a_row_from_being_exact_even_where_the_totals_agree():
    row = judge(counted_row(), uncosted="2 nodes uncosted (Tanh): Tanh: shape unknown")
    assert (row["verdict"], row["reason"]) == ("differs", "2 nodes uncosted (Tanh): Tanh: shape unknown")


def test_a_row_counted_at_an_upper_bound_says_so_where_it_differs():
    bound = "95 nodes counted at a data-dependent upper bound"
    assert judge(counted_row(macs=130), bound=bound)["reason"] == f"MACs +30 (+30.00%); {bound}"
    assert judge(counted_row(), bound=bound)["reason"] == ""


def test_an_oracle_that_missed_work_found_by_hand_is_wrong_where_the_count_equals_it_with_it():
    # FlopCounterMode counted 100 MACs, and missed 30 of an LSTM: a count of 130 is exact
    missed = {"LSTM": 30}
    row = judge(counted_row(macs=130), missed=missed)
    assert row["verdict"] == "oracle failed"
    assert row["reason"].startswith("oracle wrong: FlopCounterMode missed 30 of LSTM MACs")
    # a count of 120 is neither the oracle's 100 nor 100 + 30: it differs, and the row says both
    row = judge(counted_row(macs=120), missed=missed)
    assert row["verdict"] == "differs"
    assert row["reason"].startswith("MACs +20 (+20.00%); FlopCounterMode missed 30 of LSTM MACs")
    # a count of 100 missed the LSTM as the oracle did: not exact either
    row = judge(counted_row(macs=100), missed=missed)
    assert row["verdict"] == "differs"
    assert row["reason"].startswith("MACs equal the oracle's, but FlopCounterMode missed 30")


def test_an_oracle_that_counts_work_the_forward_discards_is_wrong_where_the_count_equals_it_without():
    # FlopCounterMode counted 120 MACs, 20 of them in a pooling head whose output the forward
    # overwrites (the exported graph drops it): a count of 100 is exact
    discarded = {"vision.head": 20}
    row = judge(counted_row(macs=100, oracle_macs=120), discarded=discarded)
    assert (row["verdict"], row["reason"]) == (
        "oracle failed", "oracle wrong: FlopCounterMode counts 20 MACs in vision.head, work whose "
        "output the forward's result never reads (no output depends on it; the exported graph "
        "drops it); without it the count is exact")
    # a count of 90 is neither: it differs by its shortfall from the oracle
    row = judge(counted_row(macs=90, oracle_macs=120), discarded=discarded)
    assert (row["verdict"], row["reason"]) == ("differs", "MACs -30 (-25.00%)")


def test_recurrent_work_by_hand():
    from onnxflops.survey.oracle import recurrent_macs

    # LSTM 8 → 16, 2 layers, 5 steps: 4·16·(8+16)·5 + 4·16·(16+16)·5 = 7,680 + 10,240
    assert recurrent_macs("LSTM", 8, 16, 2, 1, 5) == 17_920
    # GRU 8 → 16, 5 steps: 3·16·24·5; RNN: 16·24·5
    assert recurrent_macs("GRU", 8, 16, 1, 1, 5) == 5_760
    assert recurrent_macs("RNN", 8, 16, 1, 1, 5) == 1_920
    # bidirectional LSTM projected to 4, 2 layers, 10 steps: each layer 2·10·(4·16·(I+4) + 4·16),
    # I = 8 then 2·4 = 8: 2 · 16,640
    assert recurrent_macs("LSTM", 8, 16, 2, 2, 10, proj_size=4) == 33_280


def test_distance_work_by_hand():
    from onnxflops.survey.oracle import cdist_macs

    # Mimi's codebook search: 9 frames against 2,048 codes of width 256, as ATen's matrix product
    # of [−2·x, ‖x‖², 1] by [c, 1, ‖c‖²]ᵀ: 9·2,048·258
    assert cdist_macs((1, 9, 256), (2048, 256)) == 4_755_456
    # 25 points a side or fewer: the direct kernel, no product; unless compute_mode asks for one
    assert cdist_macs((3, 25, 4), (3, 25, 4)) == 0
    assert cdist_macs((3, 25, 4), (3, 25, 4), compute_mode="use_mm_for_euclid_dist") == 3 * 25 * 25 * 6
    # batches broadcast; p other than 2 and a refused product run the direct kernel
    assert cdist_macs((2, 1, 30, 4), (5, 7, 4)) == 2 * 5 * 30 * 7 * 6
    assert cdist_macs((30, 4), (30, 4), p=1.0) == 0
    assert cdist_macs((30, 4), (30, 4), compute_mode="donot_use_mm_for_euclid_dist") == 0


def test_a_row_short_by_missed_distance_work_names_its_formula():
    row = judge(counted_row(macs=130, oracle_macs=100), missed={"cdist": 30})
    assert row["verdict"] == "oracle failed"
    assert "FlopCounterMode missed 30 of cdist MACs (by hand: B·P·R·(M+2), ATen's " \
        "matrix-product form)" in row["reason"]


def test_each_failed_stage_gives_its_verdict():
    assert judge(blank_row("m"), failures={"build": "URLError: no network"})["verdict"] == "not built"
    row = judge(blank_row("m"), failures={"count": "OnnxFlopsError: no export"})
    assert (row["verdict"], row["reason"]) == ("not counted", "OnnxFlopsError: no export")
    # the framework's own forward fails too: the model does not run on its inputs
    row = judge(blank_row("m"), failures={"count": "OnnxFlopsError: no export",
                                          "oracle": "ValueError: bad input"})
    assert (row["verdict"], row["reason"]) == (
        "not built", "its forward fails: ValueError: bad input; count: OnnxFlopsError: no export")
    row = judge(counted_row(oracle_macs=None, oracle_params=None),
                failures={"oracle": "LookupError: none"})
    assert (row["verdict"], row["reason"]) == ("oracle failed", "oracle: LookupError: none")


def test_totals_list_every_verdict_and_reasons_group_alike_failures():
    rows = [judge(counted_row()), judge(counted_row(macs=90)), judge(counted_row(macs=7)),
            judge(counted_row(macs=101))]
    assert totals(rows) == {"exact": 1, "differs": 3, "not counted": 0, "oracle failed": 0,
                            "not built": 0}
    # the two rows short of their MACs are one class, the one over another
    assert top_reasons(rows) == [("differs", "MACs -N (-N%)", 2), ("differs", "MACs +N (+N%)", 1)]


def test_a_reason_class_keeps_the_op_and_drops_the_model_and_node_names():
    assert reason_class("MACs -6,324 (-0.22%); 2 nodes uncosted (Tanh): Tanh: shape of 'tanh_3' "
                        "is unknown (1x?x16x16)") == \
        "N nodes uncosted (Tanh): Tanh: shape of '…' is unknown (Nx?x16x16)"
    assert reason_class("OnnxFlopsError: PyTorch model 'Mixtral': no ONNX function for "
                        "'transformers.grouped_mm'") == \
        "OnnxFlopsError: PyTorch model '…': no ONNX function for 'transformers.grouped_mm'"


# the store: formats and resuming -----------------------------------------------------------------

def test_csv_rows_read_back_as_written_and_a_rerun_skips_them(tmp_path):
    out = tmp_path / "s.csv"
    store = RowStore(out)
    store.append(judge(counted_row("timm:a")))
    store.append(judge(blank_row("timm:b"), failures={"build": "URLError: x, y"}))
    again = RowStore(out)
    assert again.done == {"timm:a", "timm:b"}
    assert again.rows[0] == judge(counted_row("timm:a"))
    assert again.rows[1]["verdict"] == "not built" and again.rows[1]["macs"] is None
    assert out.read_text().splitlines()[0] == ",".join(COLUMNS)


def test_where_the_oracle_has_buffers_and_unused_params_they_must_equal_ours_too():
    row = {**counted_row(params=10, unused=2, oracle_params=12), "buffers": 5,
           "oracle_buffers": 7, "oracle_unused_params": 0}
    # 5 - 7 = -2, -2 / 7 = -28.57%; unused 2 where the oracle reads every weight: 2 - 0 = +2
    assert judge(row)["reason"] == "unused params +2 (oracle 0); buffers -2 (-28.57%)"
    row.update(buffers=7, oracle_unused_params=2)
    assert judge(row)["verdict"] == "exact"


def test_a_table_of_fewer_columns_is_rewritten_in_these_before_rows_append(tmp_path):
    out = tmp_path / "s.csv"
    old = [c for c in COLUMNS if not c.startswith(("oracle_unused", "oracle_buffers", "twin"))]
    out.write_text(",".join(old) + "\n" + ",".join(
        {"model": "timm:a", "macs": "100", "verdict": "exact"}.get(c, "") for c in old) + "\n")
    store = RowStore(out)
    store.append(judge(counted_row("timm:b")))
    lines = out.read_text().splitlines()
    assert lines[0] == ",".join(COLUMNS) and len(lines) == 3
    assert [r["macs"] for r in RowStore(out).rows] == [100, 100]


@pytest.mark.parametrize("line_end", [b"\r\n", b"\n"])
def test_rows_appended_or_rewritten_keep_the_tables_line_ending(tmp_path, line_end):
    out = tmp_path / "s.csv"
    out.write_bytes(",".join(COLUMNS).encode() + line_end)
    RowStore(out).append(judge(counted_row("timm:a")))
    assert out.read_bytes().count(line_end) == 2 and out.read_bytes().count(b"\r") == \
        (2 if line_end == b"\r\n" else 0)
    fewer = [c for c in COLUMNS if c != "twin"]
    row = ",".join({"model": "timm:a", "verdict": "exact"}.get(c, "") for c in fewer)
    out.write_bytes(",".join(fewer).encode() + line_end + row.encode() + line_end)
    RowStore(out).append(judge(counted_row("timm:b")))  # rewritten in COLUMNS, then appended
    assert out.read_bytes().count(line_end) == 3 and out.read_bytes().count(b"\r") == \
        (3 if line_end == b"\r\n" else 0)


@pytest.mark.parametrize("suffix", [".json", ".md", ".html"])
def test_rendered_formats_are_rewritten_from_json_lines_beside_them(tmp_path, suffix):
    out = tmp_path / f"s{suffix}"
    store = RowStore(out)
    store.append(judge(counted_row("timm:a")))
    store.append(judge(counted_row("timm:<b>", macs=1)))
    assert [r["model"] for r in read_any(out)] == ["timm:a", "timm:<b>"]
    assert RowStore(out).done == {"timm:a", "timm:<b>"}
    text = out.read_text()
    if suffix == ".json":
        document = json.loads(text)
        assert document["totals"]["exact"] == 1 and len(document["rows"]) == 2
    elif suffix == ".md":
        assert "2 models: exact 1, differs 1" in text and "| timm:a | 1x3x8x8 | 100 |" in text
    else:
        assert "&lt;b&gt;" in text and "<b>" not in text and "<th>oracle_macs</th>" in text


def test_an_unknown_output_suffix_is_refused(tmp_path):
    with pytest.raises(OnnxFlopsError, match="write .csv"):
        RowStore(tmp_path / "s.xlsx")


def test_summary_prints_the_totals_of_a_file(tmp_path, capsys):
    out = tmp_path / "s.csv"
    RowStore(out).append(judge(counted_row()))
    RowStore(out).append(judge(counted_row("timm:b", macs=1)))
    assert main(["survey", "--summary", str(out)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "| table | models | exact | differs | not counted | oracle failed | not built |",
        "|---|---:|---:|---:|---:|---:|---:|",
        f"| {out} | 2 | 1 | 1 | 0 | 0 | 0 |",
        "", f"{out}, most common reasons:", "- 1 differs: MACs -N (-N%)"]


# sources -----------------------------------------------------------------------------------------

def _matmul_file(path, k: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model([node("MatMul", ["x", "w"], ["y"])], {"x": [1, k]}, [weight("w", [k, 4])]),
              path)


def test_a_folder_source_lists_its_onnx_files_and_a_pattern_filters_them(tmp_path):
    _matmul_file(tmp_path / "a.onnx", 3)
    _matmul_file(tmp_path / "sub" / "b.onnx", 3)
    assert [t.name for t in tasks([str(tmp_path)])] == ["a.onnx", "sub/b.onnx"]
    assert [t.name for t in tasks([f"{tmp_path}:sub/*"])] == ["sub/b.onnx"]


def test_sources_are_registries_folders_or_factories():
    assert parse("timm:resnet*") == ("timm", "", "resnet*")
    assert parse("torchvision") == ("torchvision", "", None)
    assert parse("mypackage.models:build") == ("factory", "mypackage.models:build", None)
    with pytest.raises(OnnxFlopsError, match="name a registry"):
        parse("no-such-thing")


# the generic config shrink rule ------------------------------------------------------------------

class Config(types.SimpleNamespace):
    model_type = "fake"

    def to_dict(self):
        return dict(vars(self))


def test_one_rule_shrinks_widths_depths_heads_and_vocabulary_of_any_config():
    vision = Config(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, image_size=224,
                    hidden_sizes=[256, 512, 1024, 2048], rotary_dim=64)
    config = Config(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
                    num_key_value_heads=8, intermediate_size=14336, vocab_size=128256,
                    layer_types=["full"] * 32, pad_token_id=128004, num_local_experts=8,
                    num_experts_per_tok=2, rope_theta=500000.0, vision_config=vision)
    shrink(config)
    # heads 32 → 4, key/value heads in proportion: 8 · 4 / 32 = 1; the per-layer list is cut with
    # the depth; token id 128004 wraps into the 1000 tokens left: 128004 % 1000 = 4
    assert vars(config) | {"vision_config": None} == {
        "hidden_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 1, "intermediate_size": 192, "vocab_size": 1000,
        "layer_types": ["full", "full"], "pad_token_id": 4, "num_local_experts": 4,
        "num_experts_per_tok": 2, "rope_theta": 500000.0, "vision_config": None}
    # stage widths in proportion, the first 96: 512 · 96 / 256 = 192, ...; rotary dims are head dims
    assert vars(vision) == {"hidden_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
                            "image_size": 224, "hidden_sizes": [96, 192, 384, 768],
                            "rotary_dim": 24}


def test_a_size_equal_to_a_width_that_was_cut_follows_it():
    # MobileBERT's bottleneck is as wide as its embedding (128): both become 96; a patch of 16
    # and a position table of 512 (the old hidden width) are not widths and stay
    config = shrink(Config(hidden_size=512, embedding_size=128, intra_bottleneck_size=128,
                           patch_size=16, max_position_embeddings=512, classifier_proj_size=77))
    assert vars(config) == {"hidden_size": 96, "embedding_size": 96, "intra_bottleneck_size": 96,
                            "patch_size": 16, "max_position_embeddings": 512,
                            "classifier_proj_size": 77}


def test_a_size_no_rule_names_that_was_a_multiple_of_the_width_keeps_the_multiple():
    # XCodec2's quantizer reads its semantic and acoustic states side by side: 2 · 1024; left
    # at 2048 it met 192 features. Mllama's vision_output_dim, 5 · 1536, likewise; a size no
    # multiple of the width (a 48-wide encoder) and a position table are left to the others
    config = shrink(Config(hidden_size=1024, quantization_dim=2048, codebook_dim=48,
                           max_position_embeddings=4096))
    assert vars(config) == {"hidden_size": 96, "quantization_dim": 192, "codebook_dim": 48,
                            "max_position_embeddings": 4096}
    assert shrink(Config(hidden_size=1536, vision_output_dim=7680)).vision_output_dim == 480


def test_lists_of_stage_widths_that_share_widths_are_cut_by_one_factor():
    # HGNetV2: stage i takes stage i-1's output (stage_in [48, 128, …] = stem [.., 48] and
    # stage_out [128, …]); cut each by its own first, 128 became 96 in stage_out_channels and 48
    # in stage_in_channels, and its depthwise conv (groups = 128) met 96 channels. One factor,
    # 96 / 256 (the widest first, hidden_sizes'): 128 → 48 in both, 48 → 18, 32 → 12; the image's
    # 3 channels stay
    config = shrink(Config(num_channels=3, hidden_sizes=[256, 512, 1024, 2048],
                           stem_channels=(3, 32, 48), stage_in_channels=(48, 128, 512, 1024),
                           stage_mid_channels=(48, 96, 192, 384),
                           stage_out_channels=(128, 512, 1024, 2048)))
    assert (config.hidden_sizes, config.stem_channels, config.stage_in_channels,
            config.stage_mid_channels, config.stage_out_channels) == (
        [96, 192, 384, 768], [3, 12, 18], [18, 48, 192, 384], [18, 36, 72, 144],
        [48, 192, 384, 768])
    # lists that share no width keep their own first: RT-DETR's encoder_in_channels [512, …]
    # beside decoder_in_channels [256, …] (as wide as its d_model, 96 after the cut)
    config = shrink(Config(d_model=256, encoder_in_channels=[512, 1024, 2048],
                           decoder_in_channels=[256, 256, 256]))
    assert (config.encoder_in_channels, config.decoder_in_channels) == ([96, 192, 384],
                                                                         [96, 96, 96])


def test_a_depthwise_groups_count_follows_its_width_and_a_codebook_size_stays():
    # Mimi: upsample_groups = hidden_size = 512, a group a channel; left at 512 over the 96
    # channels left, its conv refused to build. Its codebook_size 2048, equal to its
    # intermediate_size, is a count of codes, not a width: cut to 192 with it, DAC's (1024 = its
    # hidden_size) refused to build ("must be a power of 2"); its codebook_dim is a width
    config = shrink(Config(hidden_size=512, upsample_groups=512, num_groups=32,
                           intermediate_size=2048, codebook_size=2048, codebook_dim=512))
    assert vars(config) == {"hidden_size": 96, "upsample_groups": 96, "num_groups": 4,
                            "intermediate_size": 192, "codebook_size": 2048, "codebook_dim": 96}


def test_a_depth_that_counts_the_stages_keeps_them():
    # Swin: num_layers = len(depths) = 4 stages; cut to 2, the per-stage lists went with it and
    # Grounding DINO's backbone, whose out_features name stage 4, failed. The 4 stages stay,
    # one layer each; a depth that counts layers (num_hidden_layers) is cut as before
    config = shrink(Config(depths=[2, 2, 6, 2], num_layers=4, num_heads=[3, 6, 12, 24],
                           num_hidden_layers=24))
    assert vars(config) == {"depths": [1, 1, 1, 1], "num_layers": 4, "num_heads": [3, 4, 4, 4],
                            "num_hidden_layers": 2}


def test_experts_per_token_spelled_out_are_cut_with_the_experts():
    # Kimi-Linear's num_experts_per_token = 8 of 64 experts: 8 of the 4 left made its top-k fail
    config = shrink(Config(num_experts=64, num_experts_per_token=8))
    assert vars(config) == {"num_experts": 4, "num_experts_per_token": 2}
    # ERNIE-4.5-MoE calls it moe_k: 6 of 64, cut to 2 of 4 (6 of 4 failed its top-k)
    config = shrink(Config(moe_num_experts=64, moe_k=6))
    assert vars(config) == {"moe_num_experts": 4, "moe_k": 2}


def test_state_space_head_groups_are_at_most_the_heads_left():
    # Nemotron-H's Mamba layers: 128 heads in 8 groups; the heads cut to 4 in 8 groups left 0
    # heads a group (its repeat_interleave failed): the groups are cut to 4, a head each
    config = shrink(Config(mamba_num_heads=128, n_groups=8))
    assert vars(config) == {"mamba_num_heads": 4, "n_groups": 4}


def test_a_group_norms_groups_divide_the_widths_left():
    # BiT's GroupNorm of 32 groups over a bottleneck cut to 24 channels failed ("num_channels
    # (24) must be divisible by num_groups (32)"): the groups are cut to 4, which divides 24 and 96
    config = shrink(Config(hidden_sizes=[256, 512, 1024, 2048], num_groups=32))
    assert config.num_groups == 4 and all(width % 4 == 0 for width in config.hidden_sizes)
    assert shrink(Config(num_groups=1)).num_groups == 1  # ConvBERT's one group stays


def test_state_space_heads_fill_the_inner_width_expand_times_width():
    # Mamba2: 128 heads × 64 = 2 × 4096; cut to 4 heads of the generic 24 they filled 96 of the
    # inner 2 · 96 = 192 (its reshape failed): the head dim is 192 / 4 = 48. Zamba2 names them
    # n_mamba_heads and mamba_headdim (8 × 640 = 2 × 2560); its attention reads 2 · hidden_size
    # (attention_hidden_size 5120 → 2 · 96 = 192, 32 heads × 160 → 4 × 48)
    config = shrink(Config(hidden_size=4096, expand=2, num_heads=128, head_dim=64))
    assert vars(config) == {"hidden_size": 96, "expand": 2, "num_heads": 4, "head_dim": 48}
    config = shrink(Config(hidden_size=2560, mamba_expand=2, n_mamba_heads=8, mamba_headdim=640,
                           attention_hidden_size=5120, num_attention_heads=32,
                           attention_head_dim=160, num_key_value_heads=32))
    assert vars(config) == {"hidden_size": 96, "mamba_expand": 2, "n_mamba_heads": 4,
                            "mamba_headdim": 48, "attention_hidden_size": 192,
                            "num_attention_heads": 4, "attention_head_dim": 48,
                            "num_key_value_heads": 4}
    # heads and a head dim of different parts are not paired: Llama-like attention beside a
    # state space keeps its 24
    config = shrink(Config(hidden_size=4096, expand=2, num_attention_heads=128, head_dim=64))
    assert config.head_dim == 24


def test_a_d_head_is_a_head_dim_and_a_size_of_heads_times_it_follows():
    # Falcon-H1's state-space heads: mamba_n_heads 128 × mamba_d_head 8 = mamba_d_ssm 1024.
    # d_head was cut as a count of heads (to 4) and d_ssm left at 1024: after, 4 × 24 = 96.
    # XLNet's d_head is a head dim too: 24, not 4
    config = shrink(Config(hidden_size=4096, mamba_n_heads=128, mamba_d_head=8,
                           mamba_d_ssm=1024, mamba_d_state=256, mamba_expand=2))
    assert vars(config) == {"hidden_size": 96, "mamba_n_heads": 4, "mamba_d_head": 24,
                            "mamba_d_ssm": 96, "mamba_d_state": 256, "mamba_expand": 2}
    assert shrink(Config(d_model=1024, n_head=16, d_head=64)).d_head == 24


def test_a_head_dim_that_was_the_sum_of_its_parts_stays_their_sum():
    # LongCat-Flash: qk_head_dim 192 = qk_nope_head_dim 128 + qk_rope_head_dim 64; each cut to
    # 24, the sum is 48 (at 24 its split into [24, 24] failed). v_head_dim 128 = 64 + 64 of two
    # dims not named as its parts stays the generic 24
    config = shrink(Config(qk_head_dim=192, qk_nope_head_dim=128, qk_rope_head_dim=64,
                           v_head_dim=128, head_dim=64))
    assert vars(config) == {"qk_head_dim": 48, "qk_nope_head_dim": 24, "qk_rope_head_dim": 24,
                            "v_head_dim": 24, "head_dim": 24}


def test_expert_groups_are_cut_with_the_experts():
    # Bailing-hybrid routes within 8 groups of 512 experts; the experts cut to 4 in 8 groups left
    # 4 // 8 = 0 a group (its view [-1, 8, 0] failed): groups at most 2, as n_group is
    config = shrink(Config(num_experts=512, num_expert_group=8, topk_group=4))
    assert vars(config) == {"num_experts": 4, "num_expert_group": 2, "topk_group": 2}


def test_a_list_of_layer_indices_keeps_the_kept_layers_renumbered():
    # Zamba2's 54 layers: mamba, with a hybrid one at 6, 12, ..., 51 (hybrid_layer_ids). The cut
    # keeps layer 0 (mamba) and 6 (hybrid): the ids become [1] (left [6, ...], its lookup of
    # layer 1 failed)
    kinds = ["mamba"] * 54
    for i in (6, 12, 51):
        kinds[i] = "hybrid"
    config = shrink(Config(num_hidden_layers=54, layers_block_type=kinds,
                           hybrid_layer_ids=[6, 12, 51]))
    assert vars(config) == {"num_hidden_layers": 2, "layers_block_type": ["mamba", "hybrid"],
                            "hybrid_layer_ids": [1]}


def test_layers_sharing_caches_keep_their_share_of_the_depth():
    # Gemma 3n: the last 15 of 35 layers reuse earlier layers' keys. Cut to 2 at 2 of 2, no
    # layer made keys for them (it refused to build); their share 15 · 2 / 35 rounds down to 0
    config = shrink(Config(num_hidden_layers=35, num_kv_shared_layers=15))
    assert vars(config) == {"num_hidden_layers": 2, "num_kv_shared_layers": 0}
    config = shrink(Config(num_hidden_layers=4, num_kv_shared_layers=2))  # 2 · 2 / 4 = 1
    assert vars(config) == {"num_hidden_layers": 2, "num_kv_shared_layers": 1}


def test_sizes_that_sum_to_the_width_keep_their_proportions():
    # Reformer's axial position embeddings: (64, 192) summing to its width 256 become
    # (64 · 96 / 256, 192 · 96 / 256) = (24, 72), summing to 96; a pair that does not sum to the
    # width (strides) is left alone
    config = shrink(Config(hidden_size=256, axial_pos_embds_dim=(64, 192), strides=[5, 2]))
    assert vars(config) == {"hidden_size": 96, "axial_pos_embds_dim": (24, 72),
                            "strides": [5, 2]}


def test_every_vocabulary_is_cut_not_only_the_one_named_vocab_size():
    # Gemma 3n's per-layer input table has 262,144 rows of its own: at 2 layers × 256 wide it
    # asked for 262144 · 512 · 4 B = 512 MiB; BLT hashes byte groups into 500,002 rows
    config = shrink(Config(vocab_size=262400, vocab_size_per_layer_input=262144,
                           encoder_hash_byte_group_vocab=500002))
    assert vars(config) == {"vocab_size": 1000, "vocab_size_per_layer_input": 1000,
                            "encoder_hash_byte_group_vocab": 1000}


def test_multimodal_rotary_sections_split_the_cut_head_dim():
    # GLM-4V's text model defaults its sections to [8, 12, 12] (half of 64); the head dim cut to
    # 96 / 4 = 24 has a half of 12: sections 4 + 4 + 4 (its split failed on 12 before)
    class DeclaresSections(Config):
        ignore_keys_at_rope_validation = {"mrope_section"}

    config = shrink(DeclaresSections(hidden_size=4096, num_attention_heads=32,
                                     rope_parameters={"rope_type": "default"}))
    assert config.rope_parameters == {"rope_type": "default", "mrope_section": [4, 4, 4]}
    given = {"mrope_section": [16, 24, 24]}  # a config's own sections stay as they are
    assert shrink(DeclaresSections(hidden_size=64, rope_parameters=given)).rope_parameters == given


def test_rotary_sections_split_the_half_of_the_heads_rotary_share():
    # GLM-4V-MoE rotates half of each head (partial_rotary_factor 0.5): of the cut 24, 12
    # channels, a half of 6: sections 2 + 2 + 2 ([4, 4, 4] summed to 12 and its split failed)
    class DeclaresSections(Config):
        ignore_keys_at_rope_validation = {"mrope_section"}

    config = shrink(DeclaresSections(hidden_size=4096, num_attention_heads=96, rope_parameters={
        "rope_type": "default", "partial_rotary_factor": 0.5}))
    assert config.rope_parameters["mrope_section"] == [2, 2, 2]


def test_a_rotary_head_dim_keeps_its_share_of_the_head_dim():
    # DOTS3: qk_rope_head_dim 64 = head_dim 256 · 0.25; cut, 24 · 0.25 = 6 (at 24 it met the 6
    # channels the head dim's share rotates). Mistral 4: head_dim 128 = qk_head_dim = 64 + 64,
    # its rotary half the 24 of qk_rope_head_dim: head_dim is the sum, 48; v_head_dim its own
    dots = shrink(Config(head_dim=256, qk_rope_head_dim=64, qk_nope_head_dim=128,
                         rope_parameters={"rope_type": "default", "partial_rotary_factor": 0.25}))
    assert (dots.head_dim, dots.qk_rope_head_dim, dots.qk_nope_head_dim) == (24, 6, 24)
    mistral = shrink(Config(head_dim=128, qk_head_dim=128, qk_nope_head_dim=64,
                            qk_rope_head_dim=64, v_head_dim=128,
                            rope_parameters={"rope_type": "yarn", "partial_rotary_factor": 0.5}))
    assert {k: v for k, v in vars(mistral).items() if k.endswith("dim")} == {
        "head_dim": 48, "qk_head_dim": 48, "qk_nope_head_dim": 24, "qk_rope_head_dim": 24,
        "v_head_dim": 24}
    whole = shrink(Config(head_dim=128, qk_rope_head_dim=64))  # no share named: left alone
    assert (whole.head_dim, whole.qk_rope_head_dim) == (24, 24)


def test_a_size_tied_to_another_sub_configs_width_follows_its_cut():
    # SAM: its vision tower's output_channels (256) are its prompt encoder's and mask decoder's
    # hidden_size (256 → 96): 96 too; its num_pos_feats (128, the sine and cosine halves of 256)
    # 48; the prompt encoder's image_embedding_size (64 = 1024 / 16 patches along the side) is
    # that grid, no width: kept. X-CLIP: projection_dim 512 = its text hidden_size → 96.
    vision = Config(hidden_size=768, output_channels=256, num_pos_feats=128, image_size=1024,
                    patch_size=16)
    prompt = Config(hidden_size=256, image_embedding_size=64, image_size=1024, patch_size=16)
    decoder = Config(hidden_size=256, iou_head_hidden_dim=256)
    shrink(Config(vision_config=vision, prompt_encoder_config=prompt, mask_decoder_config=decoder))
    assert (vision.hidden_size, vision.output_channels, vision.num_pos_feats) == (96, 96, 48)
    assert (prompt.hidden_size, prompt.image_embedding_size) == (96, 64)
    xclip = shrink(Config(projection_dim=512, text_config=Config(hidden_size=512),
                          vision_config=Config(hidden_size=768)))
    assert xclip.projection_dim == 96
    # a size equal to widths cut to two values (96 here, 192 as a multiple there) is left alone
    two = shrink(Config(projection_dim=512, text_config=Config(hidden_size=512),
                        vision_config=Config(hidden_size=256, inner_size=512)))
    assert two.projection_dim == 512


def test_widths_a_backbones_stages_had_follow_their_cut():
    # PP-DocLayout-V3: its encoder reads its backbone's last three stages, [512, 1024, 2048],
    # which the backbone's lists cut to [192, 384, 768] (512 · 96 / 256, …): the encoder's list
    # is so too, not cut by its own first ([96, 192, 384]); x4_feat_dim, 128, the backbone's
    # first stage out (128 · 96 / 256 = 48), is 48. A backbone does not follow its parent.
    backbone = Config(hidden_sizes=[256, 512, 1024, 2048], stage_out_channels=[128, 512, 1024, 2048])
    config = shrink(Config(d_model=256, encoder_in_channels=[512, 1024, 2048], x4_feat_dim=128,
                           backbone_config=backbone))
    assert config.encoder_in_channels == [192, 384, 768]
    assert config.x4_feat_dim == 48
    assert backbone.hidden_sizes == [96, 192, 384, 768]


def test_a_width_coefficient_follows_the_width_it_scaled():
    # EfficientNet: hidden_dim 2560 = 1280 · width_coefficient 2.0; hidden_dim cut to 96, the
    # coefficient is 96 / 1280 = 0.075; a coefficient no cut width was a multiple of stays
    config = shrink(Config(hidden_dim=2560, width_coefficient=2.0, depth_coefficient=3.1))
    assert (config.hidden_dim, config.width_coefficient, config.depth_coefficient) \
        == (96, 0.075, 3.1)
    assert shrink(Config(hidden_dim=2561, width_coefficient=2.0)).width_coefficient == 2.0
    # ALIGN's projection_dim, 640, is its EfficientNet tower's last stage (320 · 2.0): a tower
    # another config holds keeps its coefficient
    vision = Config(hidden_dim=2560, width_coefficient=2.0)
    shrink(Config(projection_dim=640, vision_config=vision, text_config=Config(hidden_size=768)))
    assert vision.width_coefficient == 2.0


def test_equal_sizes_that_divide_the_width_keep_their_share():
    # LayoutLMv3: 4 coordinate and 2 shape embeddings of 128 side by side are its width, 768;
    # cut to 96, each is 96 · 128 / 768 = 16 (4 · 16 + 2 · 16 = 96). One such size alone stays
    config = shrink(Config(hidden_size=768, coordinate_size=128, shape_size=128))
    assert (config.hidden_size, config.coordinate_size, config.shape_size) == (96, 16, 16)
    assert shrink(Config(hidden_size=768, coordinate_size=128)).coordinate_size == 128


def test_key_value_heads_per_layer_keep_their_proportion():
    # Sapiens2: 16 query heads → 4; its key/value heads per layer, 16 or 8, are 4 or 2 (the
    # per-layer list then cut with the depth); a list of them left at 16 met 4 query heads
    config = shrink(Config(num_attention_heads=16, num_key_value_heads_per_layer=[16, 8, 8, 16]))
    assert config.num_key_value_heads_per_layer == [4, 2, 2, 4]


def test_a_width_keeps_whole_multiples_its_factors_round_to_and_blocks_follow_the_depth():
    # xLSTM rounds sizes up to 64 and its query/key width is 0.5 of the width: 4096 · 0.5 = 2048
    # was whole 64s; 96 · 0.5 = 48 is not (its cache rounded it to 64, its projections not), so
    # the width is the least above 96 with 0.5 · w and 1.0 · w whole 64s, over 4 heads: 128, and
    # embedding_dim, which was the width, with it. num_blocks (32 = num_hidden_layers) → 2;
    # c2f_num_blocks, a count of another part equal to decoder_layers, stays
    config = shrink(Config(hidden_size=4096, embedding_dim=4096, num_heads=8, qk_dim_factor=0.5,
                           v_dim_factor=1.0, ffn_round_up_to_multiple_of=64,
                           num_hidden_layers=32, num_blocks=32))
    assert (config.hidden_size, config.embedding_dim, config.num_blocks) == (128, 128, 2)
    other = shrink(Config(d_model=256, decoder_layers=3, c2f_num_blocks=3))
    assert (other.decoder_layers, other.c2f_num_blocks) == (2, 3)
    plain = shrink(Config(hidden_size=4096, qk_dim_factor=0.5))  # no multiple named: 96
    assert plain.hidden_size == 96


def test_a_rotary_factor_over_one_head_keeps_its_share_of_the_width():
    # EfficientLoFTR rotates 4 heads' worth of each head (256 / 8 · 4 = 128, half its width);
    # over 4 heads of 24 that share is 2 (96 / 4 · 2 = 48), not 4. A factor of a head (0.5) stays
    config = shrink(Config(hidden_size=256, num_attention_heads=8, rope_parameters={
        "rope_type": "default", "partial_rotary_factor": 4.0}))
    assert config.rope_parameters["partial_rotary_factor"] == 2.0
    config = shrink(Config(hidden_size=256, num_attention_heads=8, rope_parameters={
        "rope_type": "default", "partial_rotary_factor": 0.5}))
    assert config.rope_parameters["partial_rotary_factor"] == 0.5


def test_rotary_sections_only_where_the_config_reads_them():
    # Llama's text-only config gets none; PaddleOCR-VL's text config declares none but is the
    # text config of a vision-language one: head dim 128 cut to 24, half 12, sections 4 + 4 + 4
    llama = shrink(Config(hidden_size=4096, num_attention_heads=32, rope_parameters={}))
    assert llama.rope_parameters == {}
    text = Config(hidden_size=1024, num_attention_heads=16, head_dim=128, rope_parameters={})
    vision = Config(hidden_size=1152, num_attention_heads=16)
    shrink(Config(text_config=text, vision_config=vision))
    assert text.rope_parameters == {"mrope_section": [4, 4, 4]}
    assert not hasattr(vision, "rope_parameters")


def test_key_value_heads_follow_the_heads_of_their_own_part():
    # Moonshine: encoder and decoder each name their heads; 8 kv heads of 8 heads, cut to 4
    # heads, are 8 · 4 / 8 = 4 (against the default key they stayed 8 > 4, and its forward failed)
    config = shrink(Config(encoder_num_attention_heads=8, encoder_num_key_value_heads=8,
                           decoder_num_attention_heads=16, decoder_num_key_value_heads=4))
    assert vars(config) == {"encoder_num_attention_heads": 4, "encoder_num_key_value_heads": 4,
                            "decoder_num_attention_heads": 4, "decoder_num_key_value_heads": 1}


def test_a_cut_keeps_one_layer_of_each_kind_and_the_lists_beside_them_alike():
    # Qwen3.5's [linear, linear, linear, full] × 2: the first two layers were both linear (its
    # forward then failed on a cache without attention); kept are layers 0 and 3, in every
    # per-layer list of that depth
    kinds = ["linear", "linear", "linear", "full"] * 2
    config = shrink(Config(num_hidden_layers=8, layer_types=kinds, window=[1, 2, 3, 4, 5, 6, 7, 8]))
    assert vars(config) == {"num_hidden_layers": 2, "layer_types": ["linear", "full"],
                            "window": [1, 4]}


def test_a_cut_shows_every_kind_of_two_per_layer_lists_where_two_layers_can():
    # Kimi-Linear: attention [linear ×4, full] × 2 beside MLPs [dense, sparse ×9]. Layer 0 shows
    # linear and dense; of the rest, layer 4 shows two new kinds (full, sparse), layer 1 only one
    attention = (["linear"] * 4 + ["full"]) * 2
    config = shrink(Config(num_hidden_layers=10, layer_types=attention,
                           mlp_layer_types=["dense"] + ["sparse"] * 9))
    assert (config.layer_types, config.mlp_layer_types) == (["linear", "full"], ["dense", "sparse"])


def test_a_head_dim_left_unset_is_width_over_heads():
    # Ministral's config leaves head_dim None and its attention reads head_dim ** -0.5: 96 / 4
    config = shrink(Config(hidden_size=4096, num_attention_heads=32, head_dim=None))
    assert vars(config) == {"hidden_size": 96, "num_attention_heads": 4, "head_dim": 24}
    assert vars(shrink(Config(head_dim=None))) == {"head_dim": None}  # nothing to derive it from


def test_a_per_layer_tuple_is_cut_with_its_depth_as_a_list_is():
    # SEW's 13 feature-extractor layers, each with a width, stride and kernel in a tuple: cut to 2
    config = shrink(Config(num_feat_extract_layers=13, conv_dim=(64,) + (128,) * 12,
                           conv_stride=(5,) + (2,) * 12, conv_kernel=(10,) + (3,) * 12))
    assert vars(config) == {"num_feat_extract_layers": 2, "conv_dim": (64, 128),
                            "conv_stride": (5, 2), "conv_kernel": (10, 3)}


@pytest.mark.slow  # imports torch
def test_a_vlm_prompt_holds_one_image_token_per_feature_its_vision_tower_gives():
    torch = pytest.importorskip("torch")
    from onnxflops.survey.sources import _with_image_tokens

    class Vlm:  # a LLaVA-like model: 2 images of 3 and 2 feature vectors of width 8
        def get_image_features(self, pixel_values):
            return types.SimpleNamespace(pooler_output=[torch.zeros(3, 8), torch.zeros(2, 8)])

    text = torch.tensor([[7, 5, 9]])
    inputs = {"input_ids": text, "pixel_values": torch.zeros(1, 3, 4, 4)}
    ids = _with_image_tokens(Vlm(), Config(image_token_index=5), inputs, vocab=10)
    # 3 + 2 = 5 image tokens first; the text's own 5 moves to 6 so that it is no image token
    assert ids.tolist() == [[5, 5, 5, 5, 5, 7, 6, 9]]
    assert _with_image_tokens(Vlm(), Config(), inputs, vocab=10) is text  # no token id: as it was


class _Forwards:
    """Counts the forward calls of the torch module class it decorates (the oracle's included)."""

    def __init__(self, module_class):
        self.calls = 0
        forward = module_class.forward

        def counted(module, *args, **kwargs):
            self.calls += 1
            return forward(module, *args, **kwargs)

        module_class.forward = counted
        self.module_class = module_class


def _needs_grids():
    torch = pytest.importorskip("torch")

    class NeedsGrids(torch.nn.Module):  # a Qwen-VL-like model: pixels alone are not enough
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(1))

        def forward(self, input_ids, pixel_values=None):
            if pixel_values is not None:
                raise ValueError("image_grid_thw is needed")
            return input_ids * self.w

    return _Forwards(NeedsGrids)


@pytest.mark.slow  # imports torch
def test_a_vlm_whose_forward_fails_with_pixels_is_surveyed_on_its_text():
    torch = pytest.importorskip("torch")

    from onnxflops.survey.measure import oracle_on_inputs_that_run
    from onnxflops.survey.sources import TOKENS, Subject, input_variants

    forwards = _needs_grids()
    ids, pixels = torch.zeros(1, 5 + TOKENS, dtype=torch.long), torch.zeros(1, 3, 4, 4)
    inputs = {"input_ids": ids, "pixel_values": pixels}
    subject = Subject(forwards.module_class(), kwargs=inputs, variants=input_variants(inputs))
    ran, (columns, _) = oracle_on_inputs_that_run(subject, on_meta=False)
    assert list(ran.kwargs) == ["input_ids"] and ran.kwargs["input_ids"].shape == (1, TOKENS)
    assert columns["oracle_params"] == 1 and forwards.calls == 2  # pixels, then the text
    assert input_variants({"input_ids": ids}) == ()  # no pixels: nothing to drop


@pytest.mark.slow  # imports torch
def test_a_model_that_runs_on_its_inputs_runs_once_before_its_count(monkeypatch):
    """A transformers row with a variant (a VLM's text alone) built and run by measure: its
    inputs run, so the oracle's is the only forward before the count (a trial forward of the
    inputs ran before it)."""
    torch = pytest.importorskip("torch")

    from onnxflops.survey import measure, shrink, sources

    class Llava(torch.nn.Module):  # runs on its text and pixels
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(1))

        def forward(self, input_ids, pixel_values=None):
            return input_ids * self.w + pixel_values.sum()

    forwards = _Forwards(Llava)
    model = Llava()
    inputs = {"input_ids": torch.zeros(1, sources.TOKENS, dtype=torch.long),
              "pixel_values": torch.zeros(1, 3, 4, 4)}
    transformers = types.SimpleNamespace(
        AutoConfig=types.SimpleNamespace(for_model=lambda name: Config()),
        AutoModel=types.SimpleNamespace(from_config=lambda config: model))
    monkeypatch.setattr(sources, "_transformers", lambda: transformers)
    monkeypatch.setattr(shrink, "shrink", lambda config: config)
    monkeypatch.setattr(sources, "_transformers_inputs", lambda model, config: inputs)

    class Counting(Exception):
        pass

    def stop_at_the_count(stage):
        if stage == "count":
            raise Counting

    with pytest.raises(Counting):  # the forwards before the count are all that is asked
        measure.measure(sources.Task("transformers", "", "toy"), 4.0, stop_at_the_count)
    assert forwards.calls == 1


def test_a_main_input_the_forward_does_not_take_is_the_first_pixels_it_takes():
    import inspect

    from onnxflops.survey.sources import _main_input

    class VisionTower:  # SmolVLM's: main_input_name inherited as input_ids
        main_input_name = "input_ids"

        def forward(self, pixel_values, patch_attention_mask=None):
            pass

    takes = inspect.signature(VisionTower().forward).parameters
    assert _main_input(VisionTower(), takes) == "pixel_values"
    VisionTower.main_input_name = "pixel_values"  # as it says, where the forward takes it
    assert _main_input(VisionTower(), takes) == "pixel_values"


@pytest.mark.slow  # imports torch
def test_a_codec_decoder_is_given_latents_and_a_waveform_may_take_a_channel_axis():
    torch = pytest.importorskip("torch")
    from onnxflops.survey.sources import TOKENS, _transformers_inputs, input_variants

    class Decoder:  # Mimi's decoder: latents (batch, hidden_size, frames), not token ids
        main_input_name = "latents"

        def forward(self, latents, padding_mask=None):
            pass

    inputs = _transformers_inputs(Decoder(), Config(hidden_size=96, vocab_size=1000))
    assert inputs["latents"].shape == (1, 96, TOKENS)
    assert inputs["latents"].dtype == torch.float32

    class Head:  # Nemotron's word timestamps: states (batch, tokens, hidden_size)
        main_input_name = "inputs_embeds"

        def forward(self, inputs_embeds, attention_mask=None):
            pass

    inputs = _transformers_inputs(Head(), Config(hidden_size=96, vocab_size=1000))
    assert inputs["inputs_embeds"].shape == (1, TOKENS, 96)
    assert inputs["inputs_embeds"].dtype == torch.float32
    # DAC names no audio_channels: its waveform (1, 16000) is also tried as (1, 1, 16000)
    waveform = {"input_values": torch.zeros(1, 16000)}
    assert [v["input_values"].shape for v in input_variants(waveform)] == [(1, 1, 16000)]


def test_token_ids_a_forward_requires_are_given_beside_its_pixels():
    import inspect

    from onnxflops.survey.sources import _required_token_ids

    def detector(pixel_values, input_ids, qformer_input_ids, token_type_ids=None):
        pass  # Grounding DINO's text prompt, without a default

    def vision_text(pixel_values, input_ids=None):
        pass  # CLIP's: text optional, not given

    takes = inspect.signature(detector).parameters
    assert _required_token_ids(takes, {"pixel_values": 0}) == ["input_ids", "qformer_input_ids"]
    assert _required_token_ids(takes, {"input_ids": 0}) == ["qformer_input_ids"]
    assert _required_token_ids(inspect.signature(vision_text).parameters, {}) == []


def test_audio_features_have_the_bins_and_frames_a_sub_config_sets():
    from onnxflops.survey.sources import _feature_frames, _mel_bins

    # Canary names its 128 bins in encoder_config only: the default 80 met its projection of
    # 8 · 128 inputs. Nemotron's diarizer a level deeper; its subsampling by 8 refuses 100 frames
    asr = Config(num_mel_bins=128, subsampling_factor=8)
    canary = Config(encoder_config=asr, decoder_config=Config(hidden_size=96))
    nemotron = Config(asr_config=Config(hidden_size=96), diarization_config=Config(audio_config=asr))
    assert (_mel_bins(canary), _mel_bins(nemotron)) == (128, 128)
    assert (_feature_frames(canary), _feature_frames(nemotron)) == (104, 104)  # 100 → 13 · 8
    # the config's own bins first (Whisper's 80 and 2 · 1500 frames), then feature_size, then 80
    whisper = Config(num_mel_bins=80, max_source_positions=1500, encoder_config=asr)
    assert (_mel_bins(whisper), _feature_frames(whisper)) == (80, 3000)
    assert (_mel_bins(Config(feature_size=160)), _mel_bins(Config())) == (160, 80)
    # W2V-BERT reads 2 stacked frames of 80 bins: its projection's 160 inputs, not feature_size
    assert _mel_bins(Config(feature_size=80, feature_projection_input_dim=160)) == 160


def test_audio_a_forward_requires_beside_its_text_is_given():
    import inspect

    from onnxflops.survey.sources import _required_audio

    def text_and_audio(input_ids, input_values, input_features=None):
        pass  # PE Audio: its main input is its text; its waveform has no default

    takes = inspect.signature(text_and_audio).parameters
    assert _required_audio(takes, {"input_ids": 0}) == ["input_values"]
    assert _required_audio(takes, {"input_values": 0}) == []


_DOCUMENTED_FORWARD = """Runs the model.

        Args:
            input_ids (`torch.Tensor` of shape `(batch_size, sequence_length)`, *optional*):
                Token ids.
            bbox ('torch.Tensor' of shape '(batch_size, num_boxes, 4)'):
                Boxes: (x1, y1, x2, y2).
            visual_feats (`torch.Tensor` of shape `(batch_size, num_visual_features, visual_feat_dim)`):
                Visual features.
            past_values (`torch.Tensor` of shape `(bs, sequence_length, num_input_channels)`, *required*):
                Input sequence.
            freq (`torch.LongTensor` of shape `(batch_size,)`):
                Frequency indices.
            query_length (`int`, *optional*):
                Not a tensor.

        Returns:
            last_hidden_state (`torch.Tensor` of shape `(batch_size, sequence_length, hidden_size)`):
                Not an argument.
        """


def test_a_forwards_docstring_gives_each_arguments_type_shape_and_whether_it_is_optional():
    from onnxflops.survey.sources import documented_arguments

    def forward(input_ids=None, bbox=None, visual_feats=None, past_values=None, freq=None):
        pass

    forward.__doc__ = _DOCUMENTED_FORWARD
    documented = documented_arguments(forward)
    assert documented["input_ids"] == ("torch.Tensor", ["batch_size", "sequence_length"], True)
    assert documented["bbox"] == ("torch.Tensor", ["batch_size", "num_boxes", "4"], False)
    assert documented["visual_feats"][1] == ["batch_size", "num_visual_features",
                                             "visual_feat_dim"]
    assert documented["past_values"][2] is False  # *required*
    assert documented["freq"] == ("torch.LongTensor", ["batch_size"], False)
    assert documented["query_length"] == ("int", None, True)
    assert "last_hidden_state" not in documented  # Returns, not Args


@pytest.mark.slow  # imports torch
def test_inputs_a_forward_requires_are_shaped_as_its_docstring_says():
    """TimesFM: float past values (not token ids) as long as the config's context, their
    padding and frequency; a time series of channels (PatchTST); Qwen3-ASR's features mask over
    the frames of its features, given bins × frames."""
    torch = pytest.importorskip("torch")
    from onnxflops.survey.sources import _transformers_inputs

    class TimeSeries:
        main_input_name = "past_values"

        def forward(self, past_values, past_values_padding, freq, **kwargs):
            pass

    TimeSeries.forward.__doc__ = _DOCUMENTED_FORWARD.replace(
        "(bs, sequence_length, num_input_channels)", "(batch_size, sequence_length)").replace(
        "freq (", "past_values_padding (`torch.LongTensor` of shape `(batch_size, "
                  "sequence_length)`):\n                Padding.\n            freq (")
    inputs = _transformers_inputs(TimeSeries(), Config(hidden_size=96, context_length=512))
    assert {k: (tuple(v.shape), v.dtype) for k, v in inputs.items()} == {
        "past_values": ((1, 512), torch.float32),
        "past_values_padding": ((1, 512), torch.int64),  # zeros: nothing padded
        "freq": ((1,), torch.int64)}
    assert not inputs["past_values_padding"].any()

    class Channels(TimeSeries):
        def forward(self, past_values, **kwargs):
            pass

    Channels.forward.__doc__ = _DOCUMENTED_FORWARD
    inputs = _transformers_inputs(Channels(), Config(num_input_channels=7, context_length=32))
    assert inputs["past_values"].shape == (1, 32, 7)

    class Encoder:
        main_input_name = "input_features"

        def forward(self, input_features, input_features_mask, **kwargs):
            """Encodes.

            Args:
                input_features (`torch.Tensor` of shape `(batch_size, sequence_length, feature_dim)`):
                    Features.
                input_features_mask (`torch.LongTensor` of shape `(batch_size, padded_feature_length)`):
                    Which frames are features.
            """

    inputs = _transformers_inputs(Encoder(), Config(num_mel_bins=128, max_source_positions=50))
    assert inputs["input_features"].shape == (1, 128, 100)
    assert inputs["input_features_mask"].shape == (1, 100)  # over the frames, all of them
    assert inputs["input_features_mask"].all()


@pytest.mark.slow  # imports torch
def test_a_model_of_several_main_inputs_is_given_each_its_task_as_long_as_its_config_says():
    """OneFormer names two main inputs, its pixels and its task; the task's sequence is as long
    as the config's task_seq_len (77), not TOKENS."""
    pytest.importorskip("torch")
    from onnxflops.survey.sources import _transformers_inputs

    class Segmenter:
        main_input_name = ["pixel_values", "task_inputs"]

        def forward(self, pixel_values, task_inputs, pixel_mask=None):
            """Segments.

            Args:
                pixel_values (`torch.FloatTensor` of shape `(batch_size, num_channels, height, width)`):
                    Pixels.
                task_inputs (`torch.FloatTensor` of shape `(batch_size, sequence_length)`):
                    The task.
            """

    inputs = _transformers_inputs(Segmenter(), Config(image_size=224, task_seq_len=77))
    assert {k: tuple(v.shape) for k, v in inputs.items()} == {
        "pixel_values": (1, 3, 224, 224), "task_inputs": (1, 77)}


@pytest.mark.slow  # imports torch
def test_tensors_a_docstring_does_not_call_optional_are_a_variant_of_the_inputs():
    """LXMERT's visual features and positions, BROS's boxes: documented without *optional*
    but defaulting to None; the forward fails without them, so they are tried then."""
    torch = pytest.importorskip("torch")
    from onnxflops.survey.sources import TOKENS, documented_variants

    class Text:
        def forward(self, input_ids=None, bbox=None, visual_feats=None, past_values=None,
                    freq=None, query_length=None):
            pass

    Text.forward.__doc__ = _DOCUMENTED_FORWARD
    config = Config(vocab_size=1000, visual_feat_dim=2048, num_input_channels=3)
    ids = torch.zeros(1, TOKENS, dtype=torch.long)
    (variant,) = documented_variants(Text(), config, {"input_ids": ids})
    assert {k: tuple(v.shape) for k, v in variant.items()} == {
        "input_ids": (1, TOKENS), "bbox": (1, TOKENS, 4),  # one box a token: num_boxes, by default
        "visual_feats": (1, TOKENS, 2048), "past_values": (1, TOKENS, 3), "freq": (1,)}
    boxes = variant["bbox"].float()  # a float type: corners on 0-1
    assert (boxes[..., :2] <= boxes[..., 2:]).all() and 0 <= boxes.min() and boxes.max() <= 1
    everything = {**variant}
    assert documented_variants(Text(), config, everything) == ()  # nothing more to give


@pytest.mark.slow  # imports torch
def test_the_other_modalities_a_forward_takes_are_a_variant_of_the_inputs():
    """ViLT (text, then its pixels), SAM 3 (pixels, then its text prompt): a forward that takes
    another modality as optional but fails without it is tried with it too."""
    torch = pytest.importorskip("torch")
    from onnxflops.survey.sources import TOKENS, modality_variants

    class TextAndImage:
        def forward(self, input_ids=None, pixel_values=None, input_features=None, labels=None):
            pass

    config = Config(vocab_size=1000, vision_config=Config(image_size=384, num_channels=3),
                    num_mel_bins=64, max_source_positions=50)
    ids = torch.zeros(1, TOKENS, dtype=torch.long)
    (variant,) = modality_variants(TextAndImage(), config, {"input_ids": ids})
    assert {k: tuple(v.shape) for k, v in variant.items()} == {
        "input_ids": (1, TOKENS), "pixel_values": (1, 3, 384, 384),
        "input_features": (1, 64, 100)}
    assert variant["input_ids"] is ids  # the text as given: a model without image tokens
    assert modality_variants(TextAndImage(), config, variant) == ()  # nothing more to give

    class Segmenter:  # pixels its main input; text and video the forward does not take
        def forward(self, pixel_values, input_ids=None):
            pass

    pixels = {"pixel_values": torch.zeros(1, 3, 64, 64)}
    (variant,) = modality_variants(Segmenter(), Config(vocab_size=10), pixels)
    assert variant["input_ids"].shape == (1, TOKENS) and variant["input_ids"].max() < 10


@pytest.mark.slow  # imports torch
def test_a_codec_reading_a_waveform_and_its_features_gets_a_frame_a_hop_and_both_layouts():
    """XCodec2: 16,000 samples over downsampling ratios whose product is 320 are 50 frames of
    features; tried with a channel axis and time × bins at once as well."""
    torch = pytest.importorskip("torch")
    from onnxflops.survey.sources import _transformers_inputs, input_variants

    class Codec:
        main_input_name = "input_values"

        def forward(self, input_values, input_features, padding_mask=None):
            pass

    config = Config(hidden_size=96, feature_size=160, downsampling_ratios=[2, 2, 4, 4, 5])
    inputs = _transformers_inputs(Codec(), config)
    assert {k: tuple(v.shape) for k, v in inputs.items()} == {
        "input_values": (1, 16000), "input_features": (1, 160, 50)}
    hop = Config(hidden_size=96, feature_size=80, audio_config=Config(hop_length=160))
    assert _transformers_inputs(Codec(), hop)["input_features"].shape == (1, 80, 100)
    assert [{k: tuple(v.shape) for k, v in variant.items()}
            for variant in input_variants(inputs)][-1] == {
        "input_values": (1, 1, 16000), "input_features": (1, 50, 160)}


@pytest.mark.slow  # imports torch and transformers
def test_the_models_own_processor_makes_a_variant_of_its_pixels():
    """SigLIP2's vision tower reads NaViT patches (up to its processor's 256, of 3 · 16² values),
    their mask and the patch grid, not an image; Gemma 4's the positions its processor names
    `image_position_ids`; LightGlue's processor takes a pair of images, not one. A vision
    tower's type finds the processor of its package; a video model's, its video processor."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from onnxflops.survey.sources import _processors, processor_variants

    assert _processors("siglip2_vision_model") == [("images", "Siglip2ImageProcessor")]
    assert _processors("vjepa2") == [("videos", "VJEPA2VideoProcessor")]

    class Patches:
        def forward(self, pixel_values, pixel_attention_mask=None, spatial_shapes=None):
            pass

    image = {"pixel_values": torch.zeros(1, 3, 224, 224), "input_ids": torch.zeros(1, 4)}
    one, two = processor_variants(Patches(), Config(model_type="siglip2_vision_model",
                                                    patch_size=16), image)
    assert {k: tuple(v.shape) for k, v in one.items()} == {
        "input_ids": (1, 4),  # kept: only pixels are remade
        "pixel_values": (1, 256, 768), "pixel_attention_mask": (1, 256), "spatial_shapes": (1, 2)}
    assert one["spatial_shapes"].tolist() == [[16, 16]] and one["pixel_attention_mask"].all()
    assert two["pixel_values"].shape == (2, 256, 768)  # the pair, a batch of two here

    class Positions:
        def forward(self, pixel_values, pixel_position_ids):
            pass

    (variant, _) = processor_variants(Positions(), Config(model_type="gemma4_vision",
                                                          patch_size=16), image)
    assert variant["pixel_position_ids"].shape[:2] == variant["pixel_values"].shape[:2]

    class Matcher:
        def forward(self, pixel_values):
            pass

    (pair,) = processor_variants(Matcher(), Config(model_type="lightglue"), image)
    assert pair["pixel_values"].shape[:3] == (1, 2, 3)  # (batch, 2 images, channels, h, w)


@pytest.mark.slow  # imports torch
def test_audio_a_config_says_more_about_is_a_variant_of_the_inputs():
    """FunASR stacks 7 frames of 80 bins (560 values a frame); MuseSpark's waveform must be a
    whole number of its patch sizes' product (16 · 6 · 5 · 4 = 1,920): 16,000 → 17,280."""
    torch = pytest.importorskip("torch")
    from onnxflops.survey.sources import audio_variants

    features = {"input_features": torch.zeros(1, 80, 100),
                "input_features_mask": torch.ones(1, 100, dtype=torch.long)}
    stacked = audio_variants(Config(num_mel_bins=80, num_stacked_frames=7), features)
    assert [{k: tuple(v.shape) for k, v in variant.items()} for variant in stacked] == [
        {"input_features": (1, 560, 100), "input_features_mask": (1, 100)},
        {"input_features": (1, 100, 560), "input_features_mask": (1, 100)}]
    assert audio_variants(Config(num_mel_bins=80), features) == ()  # nothing stacked

    waveform = {"input_values": torch.zeros(1, 16000)}
    longer = audio_variants(Config(patch_sizes=[16, 6, 5, 4]), waveform)
    assert [tuple(v["input_values"].shape) for v in longer] == [(1, 17280), (1, 1, 17280)]
    assert audio_variants(Config(hop_length=320), waveform) == ()  # already whole hops


@pytest.mark.slow  # imports torch
def test_audio_features_a_model_reads_as_time_by_bins_are_given_so():
    torch = pytest.importorskip("torch")
    from onnxflops.survey.measure import oracle_on_inputs_that_run
    from onnxflops.survey.sources import Subject, input_variants

    class Conformer(torch.nn.Linear):  # reads (batch, time, 8 bins)
        def forward(self, input_features):
            return super().forward(input_features)

    bins_by_time = {"input_features": torch.zeros(1, 8, 5)}  # as Whisper takes them: fails here
    subject = Subject(Conformer(8, 4), kwargs=bins_by_time, variants=input_variants(bins_by_time))
    ran, (columns, _) = oracle_on_inputs_that_run(subject, on_meta=False)
    assert ran.kwargs["input_features"].shape == (1, 5, 8)
    assert columns == {"oracle_macs": 5 * 8 * 4, "oracle_params": 8 * 4 + 4}  # 5 steps × 8→4


DISCARDING = """
import torch

class Tower(torch.nn.Module):  # a VLM's vision tower: its pooling head's output is overwritten
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(8, 8)
        self.head = torch.nn.Linear(8, 4)

    def forward(self, x):
        hidden = self.body(x)
        pooled = self.head(hidden[:, 0])
        pooled = hidden.mean(1)  # as DeepSeek-VL's aligner replaces the tower's pooler output
        return hidden, pooled

def tower():
    return Tower()
"""


@pytest.mark.slow  # imports torch
def test_work_the_forward_discards_is_the_oracles_error_in_a_row(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from onnxflops.survey.measure import measure
    from onnxflops.survey.sources import Task

    (tmp_path / "discarding.py").write_text(textwrap.dedent(DISCARDING))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    row = measure(Task("factory", "discarding:tower", "discarding:tower", (("x", (1, 5, 8)),)), 4)
    # the body: 5 tokens · 8 · 8 = 320 MACs; the head, run on one token and discarded: 8 · 4 = 32
    assert (row["macs"], row["oracle_macs"]) == (320, 352)
    assert (row["params"], row["unused_params"], row["oracle_params"]) == (72, 36, 108)
    assert row["verdict"] == "oracle failed"
    assert "counts 32 MACs in head," in row["reason"]


# one process per row, under its caps -------------------------------------------------------------

def test_a_folder_of_onnx_files_is_counted_each_in_its_own_process(tmp_path):
    _matmul_file(tmp_path / "m" / "a.onnx", 3)
    rows = survey([str(tmp_path / "m")], tmp_path / "s.csv", progress=False)
    # [1,3] @ [3,4]: 1·3·4 = 12 MACs; the weight's 12 params
    assert (rows[0]["macs"], rows[0]["params"]) == (12, 12)
    assert rows[0]["verdict"] == "oracle failed"
    assert "no framework oracle" in rows[0]["reason"] and rows[0]["peak_mb"] > 0
    # a rerun with the same file counts nothing again
    assert survey([str(tmp_path / "m")], tmp_path / "s.csv", progress=False) == rows
    assert len((tmp_path / "s.csv").read_text().splitlines()) == 2


FACTORIES = """
import time

def sleeps():
    time.sleep(60)

def hoards():
    return bytearray(8 * 1024 ** 3)

def maps():  # 3 GiB of address space that takes no memory, as torch's CUDA libraries do on CPU
    import mmap
    libraries = mmap.mmap(-1, 3 * 1024 ** 3, prot=mmap.PROT_READ)
    raise RuntimeError(f"mapped {len(libraries) >> 30} GiB")

def exits():
    import os
    os._exit(7)
"""


def test_models_past_their_caps_are_rows_and_the_survey_goes_on(tmp_path, monkeypatch):
    (tmp_path / "survey_factories.py").write_text(textwrap.dedent(FACTORIES))
    monkeypatch.chdir(tmp_path)
    # Only the sleeper meets the 5 s cap: the other rows get a cap no loaded machine's imports
    # reach, so each ends the way it is written to (a spawned row imports numpy and onnx first).
    capped = survey(["survey_factories:sleeps"], memory_gb=2, timeout=5, inputs={"x": (1, 3)},
                    progress=False)
    specs = ["survey_factories:hoards", "survey_factories:exits", "survey_factories:maps"]
    rows = capped + survey(specs, memory_gb=2, timeout=300, inputs={"x": (1, 3)}, jobs=3,
                           progress=False)
    assert {r["model"]: f"{r['verdict']}: {r['reason']}"[:60] for r in rows} == {
        "survey_factories:sleeps": "not built: timed out after 5 s in its build stage",
        "survey_factories:hoards": "not built: out of memory (survey_factories:hoards: the facto",
        "survey_factories:maps": "not built: OnnxFlopsError: survey_factories:maps: the factor",
        "survey_factories:exits": "not built: the process died (exit code 7) in its build stage"}
    # the cap is on memory, not on address space: 3 GiB mapped read-only under a 2 GB cap
    assert "mapped 3 GiB" in next(r["reason"] for r in rows if r["model"].endswith("maps"))
    assert "survey_factories" not in sys.modules


def test_the_command_refuses_bad_input_in_one_line(tmp_path, capsys):
    assert main(["survey"]) == 2
    assert main(["survey", "timm", "-o", str(tmp_path / "no" / "s.csv")]) == 2
    assert main(["survey", "timm", "--jobs", "0"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert [line.split(":")[2].strip() for line in err] == [
        "survey", "-o " + str(tmp_path / "no" / "s.csv"), "survey"]


def test_a_keras_hub_argument_without_a_default_gets_a_small_value_by_its_name():
    from onnxflops.survey.keras import required_value

    assert required_value("image_shape") == (64, 64, 3)
    assert required_value("vocab_size") == 1000
    assert required_value("num_layers_enc") == 2
    assert required_value("head_size") == 16
    assert required_value("stackwise_num_filters") == [64, 64]  # per stage, a width each
    assert required_value("stackwise_num_repeats") == [1, 1]  # per stage, one block each
    assert required_value("stackwise_strides") == [1, 2]  # the first stage keeps its size
    assert required_value("layer_types") == ["full_attention"] * 2
    assert required_value("image_encoder") is None  # a sub-model: built as its docstring names it
    assert required_value("block_type") is None


def test_a_keras_hub_argument_is_shaped_as_its_docstring_entry_says():
    """The docstring entry's type nests the value, its quoted choices and examples give one
    where the name does not (EfficientNet, MobileNet, CSPNet, HGNetV2, RetinaNet)."""
    from onnxflops.survey.keras import documented, required_value

    class Backbone:
        """A backbone.

        Args:
            stackwise_kernel_size: list of list of ints, kernel size for each block.
            depths: tuple of ints. Number of blocks in each stage.
            stem_strides: int or tuple/list of 2 integers, stride of the stem.
            block_type: str. One of `"bottleneck_block"`, `"dark_block"`, or
                `"edge_block"`.
            stackwise_block_types: list of strings. Each value is either 'v1', 'unfused'
                or 'fused'.
            min_level: int. The minimum level of the pyramid (e.g., 3).
            stage_filters: list of tuples, where each tuple contains configuration for a
                stage: (stage_in_channels, stage_num_blocks, stage_kernel_size).
        """

    def value(name):
        return required_value(name, documented(Backbone, name))

    assert documented(Backbone, "block_type").startswith('str. One of `"bottleneck_block"`')
    assert value("stackwise_kernel_size") == [[3], [3]]  # one list per stage, one block each
    assert value("depths") == [1, 1]
    assert value("stem_strides") == 2  # "int or ...": the int
    assert value("block_type") == "bottleneck_block"
    assert value("stackwise_block_types") == ["v1", "v1"]
    assert value("min_level") == 3
    assert value("stage_filters") == [(64, 2, 3)] * 2  # each field by its name, as an int
    assert required_value("stackwise_num_filters", "", stages=4) == [64, 128, 256, 512]


def test_config_keys_of_either_framework_are_read_by_what_they_size():
    from onnxflops.survey.keras import meaning

    assert [meaning(k) for k in ("hidden_dim", "n_embd", "d_model", "num_query_heads",
                                 "n_head", "num_key_value_heads", "num_hidden_layers", "n_layer",
                                 "intermediate_dim", "n_inner", "d_ff", "d_kv", "head_dim",
                                 "vocabulary_size", "vocab_size", "dropout", "ffn_hidden_size",
                                 "moe_intermediate_dim", "shared_expert_intermediate_size",
                                 "word_embed_proj_dim")] == \
        ["width"] * 3 + ["heads"] * 2 + ["kv_heads"] + ["layers"] * 2 + ["ffn"] * 3 + \
        ["head_dim"] * 2 + ["vocabulary"] * 2 + [None] + ["ffn", "expert_ffn", "shared_ffn",
                                                          "embedding"]


def test_a_keras_hub_size_left_at_its_library_default_is_made_small_too():
    """Qwen3.5's linear attention is sized by defaults (16 key heads, 32 value heads of 128):
    the rule left them full size and the row timed out. Every integer default that sizes a
    width, heads or a depth becomes its kind's small value, never larger than the default."""
    from onnxflops.survey.keras import small_config, smaller_default

    class Backbone:
        def __init__(self, vocabulary_size, hidden_dim, linear_num_key_heads=16,
                     linear_num_value_heads=32, linear_key_head_dim=128, iou_head_depth=3,
                     linear_conv_kernel_dim=4, sliding_window_size=32768, num_channels=3,
                     rope_max_wavelength=10000, max_sequence_length=4096, num_groups=32,
                     use_bias=True, dropout=0.1):
            pass

    assert small_config(Backbone) == {
        "vocabulary_size": 1000, "hidden_dim": 64, "linear_num_key_heads": 4,
        "linear_num_value_heads": 4, "linear_key_head_dim": 16, "iou_head_depth": 2,
        "num_channels": 3, "max_sequence_length": 64}  # the last two: names the rule sets
    assert smaller_default("num_channels", 3) == 3  # a width the library keeps small stays
    assert smaller_default("linear_conv_kernel_dim", 4) is None  # a kernel is no width
    assert smaller_default("sliding_window_size", 32768) is None  # a window the input sets
    assert smaller_default("use_bias", True) is None
    assert "linear_num_key_heads" not in small_config(Backbone, shrink_defaults=False)


# The twin mapping: a keras-hub backbone's small config onto its transformers twin's, by meaning.
_SMALL_LLM = {"vocabulary_size": 1000, "num_layers": 2, "num_query_heads": 4,
              "num_key_value_heads": 2, "hidden_dim": 64, "intermediate_dim": 128, "head_dim": 16}


@pytest.mark.slow  # transformers' configs import torch
def test_a_twin_config_carries_every_size_by_what_it_sizes():
    pytest.importorskip("transformers")
    from onnxflops.survey.keras import twin_config

    llama = twin_config("LlamaBackbone", _SMALL_LLM)
    assert (llama.vocab_size, llama.num_hidden_layers, llama.num_attention_heads,
            llama.num_key_value_heads, llama.hidden_size, llama.intermediate_size,
            llama.head_dim) == (1000, 2, 4, 2, 64, 128, 16)
    # GPT-2 names none of heads' size or key/value heads: each head is 64 / 4 wide, its own keys
    gpt2 = twin_config("GPT2Backbone", {"vocabulary_size": 1000, "num_layers": 2,
                                        "num_heads": 4, "hidden_dim": 64,
                                        "intermediate_dim": 128, "max_sequence_length": 64})
    assert (gpt2.n_layer, gpt2.n_head, gpt2.n_embd, gpt2.n_inner, gpt2.n_positions) == (
        2, 4, 64, 128, 64)
    # its token ids (50256) were made for the full vocabulary: within 1000 they are 0
    assert (gpt2.bos_token_id, gpt2.eos_token_id) == (0, 0)


@pytest.mark.slow  # transformers' configs import torch
def test_a_twin_config_takes_the_switches_that_describe_what_keras_hub_builds():
    pytest.importorskip("transformers")
    from onnxflops.survey.keras import twin_config

    falcon = twin_config("FalconBackbone", {**_SMALL_LLM, "num_attention_heads": 4})
    assert (falcon.multi_query, falcon.parallel_attn, falcon.alibi, falcon.bias,
            falcon.new_decoder_architecture) == (False, False, True, True, False)
    # Gemma's intermediate_dim is both gated halves: the twin's FFN is half of it
    assert twin_config("GemmaBackbone", _SMALL_LLM).intermediate_size == 64
    # DistilBERT's `hidden_dim` is its FFN (128), `dim` its width (64)
    distil = twin_config("DistilBertBackbone", {"vocabulary_size": 1000, "num_layers": 2,
                                                "num_heads": 4, "hidden_dim": 64,
                                                "intermediate_dim": 128})
    assert (distil.dim, distil.hidden_dim, distil.n_heads) == (64, 128, 4)
    t5 = twin_config("T5Backbone", {"vocabulary_size": 1000, "num_layers": 2, "num_heads": 4,
                                    "hidden_dim": 64, "intermediate_dim": 128,
                                    "key_value_dim": 16})
    assert (t5.d_model, t5.d_ff, t5.d_kv, t5.is_gated_act, t5.dense_act_fn) == (
        64, 128, 16, True, "relu")
    # keras-hub's BERT and GPT-NeoX take GELU's tanh form (HF's default is erf's); its ESM rotary
    # positions (HF's default is an absolute table)
    assert twin_config("BertBackbone", {"hidden_dim": 64}).hidden_act == "gelu_new"
    assert twin_config("GPTNeoXBackbone", {"hidden_dim": 64}).hidden_act == "gelu_new"
    assert twin_config("ESMBackbone", {"hidden_dim": 64}).position_embedding_type == "rotary"


@pytest.mark.slow  # transformers' configs import torch
def test_a_twin_config_sizes_experts_apart_from_the_dense_ffn():
    pytest.importorskip("transformers")
    from onnxflops.survey.keras import twin_config

    moe = twin_config("Qwen3MoeBackbone", {**_SMALL_LLM, "moe_intermediate_dim": 32,
                                           "num_experts": 4, "top_k": 2,
                                           "mlp_only_layers": []})
    assert (moe.intermediate_size, moe.moe_intermediate_size, moe.num_experts,
            moe.num_experts_per_tok) == (128, 32, 4, 2)
    assert moe.mlp_only_layers == []  # a list that reads like a depth is no size


def test_twin_flops_are_held_against_each_other_only_where_the_math_is_the_same():
    from onnxflops.survey.keras import TWIN_DIFFERS, TWIN_FLOPS_DIFFER, TWINS, twin_flops_verdict

    assert twin_flops_verdict("BertBackbone", 10, 10, 25, 25) == ("agree", "")
    assert twin_flops_verdict("BertBackbone", 10, 10, 25, 24) == ("differs", "")
    assert twin_flops_verdict("BertBackbone", 10, 11, 25, 25) == ("macs differ", "")
    verdict, reason = twin_flops_verdict("LlamaBackbone", 10, 10, 25, 24)
    assert verdict == "not the same math" and "rotary" in reason
    # the three traced last: each names the step one library takes and the other does not
    assert "padding mask" in twin_flops_verdict("DebertaV3Backbone", 10, 10, 25, 24)[1]
    assert "padding masks" in twin_flops_verdict("T5Backbone", 10, 10, 25, 24)[1]
    assert "post-FFN" in twin_flops_verdict("Gemma3Backbone", 10, 10, 25, 24)[1]
    # only pairs that compute the same network (their MACs held against each other) are listed
    assert set(TWIN_FLOPS_DIFFER) <= set(TWINS) - set(TWIN_DIFFERS)
    # a ×1 scale of torch's attention translation costs nothing now: OPT agrees, so is not listed
    assert "OPTBackbone" not in TWIN_FLOPS_DIFFER


def test_a_twin_has_a_pooler_only_where_the_keras_hub_backbone_pools():
    from onnxflops.survey.keras import pooler_switch

    class WithSwitch:
        def __init__(self, config, add_pooling_layer=True):
            pass

    class WithoutSwitch:
        def __init__(self, config):
            pass

    assert pooler_switch(WithSwitch, pooled=False) == {"add_pooling_layer": False}
    assert pooler_switch(WithSwitch, pooled=True) == {}
    assert pooler_switch(WithoutSwitch, pooled=False) == {}


def test_a_keras_hub_switch_the_docstring_types_as_a_choice_takes_the_choice():
    """SD3's `mmdit_qk_norm` reads as a switch (False) by its name; its docstring types it a
    string with the options None and "rms_norm", and False was refused."""
    from onnxflops.survey.keras import required_value

    doc = ('Optional str. Whether to normalize the query and key tensors. Available options '
           'are `None` and `"rms_norm"`.')
    assert required_value("mmdit_qk_norm", doc) == "rms_norm"
    assert required_value("use_qk_norm", "bool. Whether to normalize.") is False
    assert required_value("global_attn_indexes", "list of ints. The layers.") == [0, 0]


def test_a_composite_gives_a_per_feature_map_list_one_entry_per_sub_model_level(monkeypatch):
    """Depth Anything's `reassemble_factors` must be as long as its image encoder's feature
    maps: a per-stage list given after a sub-model with three pyramid outputs has three."""
    import onnxflops.survey.keras as rule

    class Encoder:
        pyramid_outputs = {"stem": 0, "stage1": 1, "stage2": 2}

    class Composite:
        def __init__(self, image_encoder, reassemble_factors, neck_hidden_dims):
            pass

    monkeypatch.setattr(rule, "sub_model", lambda cls, name: Encoder if name == "image_encoder"
                        else None)
    monkeypatch.setattr(rule, "build_small", lambda cls, *_: (Encoder(), {}))
    config = rule.small_config(Composite)
    assert config["reassemble_factors"] == [1, 1, 1]
    assert config["neck_hidden_dims"] == [64, 128, 256]  # more than 2 stages: a pyramid


def test_a_keras_hub_choice_that_does_not_build_gives_way_to_the_next_option():
    """CSPNet's docstring offers "csp", "dark" and "cs3"; with its default ratios only "dark"
    builds, and the rule tried the first option alone."""
    from onnxflops.survey.keras import build_small

    class Backbone:
        """A backbone.

        Args:
            stage_type: str. One of `"csp"`, `"dark"`, or `"cs3"`.
        """

        def __init__(self, stage_type):
            if stage_type != "dark":
                raise ValueError(f"incompatible shapes with {stage_type}")
            self.stage_type = stage_type

    model, config = build_small(Backbone)
    assert (model.stage_type, config) == ("dark", {"stage_type": "dark"})


def test_a_keras_hub_argument_no_rule_names_takes_the_value_the_docstring_example_gives():
    """MobileNetV5's block types ("er", "uir", ...) are listed by no docstring entry; its
    example writes a whole config as literals, read as the last try."""
    from onnxflops.survey.keras import build_small, example_arguments

    class Backbone:
        """A backbone.

        Example:
        ```python
        model_args = {
            "stackwise_block_types": [["er"], ["uir", "uir"]],
            "stackwise_num_blocks": [1, 2],
        }
        model = Backbone(**model_args, use_msfa=False)
        ```
        """

        def __init__(self, stackwise_block_types, stackwise_num_blocks, use_msfa=True):
            if [len(types) for types in stackwise_block_types] != stackwise_num_blocks:
                raise ValueError("a block type per block")
            self.types = stackwise_block_types

    assert example_arguments(Backbone) == {"stackwise_block_types": [["er"], ["uir", "uir"]],
                                           "stackwise_num_blocks": [1, 2], "use_msfa": False}
    assert build_small(Backbone)[0].types == [["er"], ["uir", "uir"]]

def test_a_per_stage_argument_the_docstring_types_an_int_is_a_list_where_the_code_iterates_it():
    """Depth Anything's docstring says `neck_hidden_dims: int.`; its constructor iterates it.
    The try that fails so is made again with the name's per-stage list (2 stages, 64 each)."""
    from onnxflops.survey.keras import build_small

    class Backbone:
        """A backbone.

        Args:
            neck_hidden_dims: int. The size of the neck hidden state.
            fusion_hidden_dim: int. The size of the fusion hidden state.
        """

        def __init__(self, neck_hidden_dims, fusion_hidden_dim):
            self.necks = [dim for dim in neck_hidden_dims]
            self.fusion = fusion_hidden_dim

    model, config = build_small(Backbone)
    assert (model.necks, model.fusion) == ([64, 64], 64)  # the int typed one stays an int


def test_a_depth_cut_keeps_one_layer_of_each_kind():
    # Qwen3.5: three linear-attention layers, then a full one, 8 times; cut to 2 layers the first
    # two would both be linear: the cut keeps layer 0 and layer 3, its per-layer sizes with them
    kinds = ["linear_attention"] * 3 + ["full_attention"]
    config = shrink(Config(num_hidden_layers=32, layer_types=kinds * 8,
                           window_per_layer=list(range(100, 132))))
    assert (config.num_hidden_layers, config.layer_types, config.window_per_layer) == \
        (2, ["linear_attention", "full_attention"], [100, 103])
    # three kinds (LFM: conv, full, sliding) take three layers; the depth follows
    lfm = shrink(Config(num_hidden_layers=6, layer_types=["conv", "conv", "full", "conv",
                                                          "sliding", "full"]))
    assert (lfm.num_hidden_layers, lfm.layer_types) == (3, ["conv", "full", "sliding"])


def test_a_layer_pattern_or_period_keeps_each_kind_within_the_depth():
    # RecurrentGemma: block_types repeat along 26 layers; its attention is the third: depth 3
    gemma = shrink(Config(num_hidden_layers=26, block_types=["recurrent", "recurrent",
                                                             "attention"]))
    assert (gemma.num_hidden_layers, gemma.block_types) == (3, ["recurrent", "recurrent",
                                                               "attention"])
    # Jamba: an attention layer every 8 at offset 4, experts every 2 at offset 1: within 2
    # layers, attention every 2 at 4 % 2 = 0; the experts' period is within the depth already
    jamba = shrink(Config(num_hidden_layers=32, attn_layer_period=8, attn_layer_offset=4,
                          expert_layer_period=2, expert_layer_offset=1))
    assert vars(jamba) == {"num_hidden_layers": 2, "attn_layer_period": 2,
                           "attn_layer_offset": 0, "expert_layer_period": 2,
                           "expert_layer_offset": 1}


# the flattened-patches rule of a Qwen2-VL-like vision tower ------------------------------------

def _parameters(forward):
    import inspect

    return inspect.signature(forward).parameters


def test_a_tower_that_needs_a_grid_gets_flattened_patches_and_their_grid():
    from onnxflops.survey.sources import flattened_patches

    def qwen_tower(self, hidden_states, grid_thw, **kwargs):
        pass

    qwen = Config(patch_size=14, temporal_patch_size=2, in_channels=3, spatial_merge_size=2)
    # 4×4 merged patches of 2×2 → an 8×8 grid: 64 rows of 3 channels × 2 frames × 14 × 14
    assert flattened_patches(_parameters(qwen_tower), qwen) == \
        ("hidden_states", (64, 1176), "grid_thw", [[1, 8, 8]])

    def muse_tower(self, pixel_values, image_grid_thw, **kwargs):
        pass

    muse = Config(patch_size=16, patch_temporal=2, num_channels=4, merge_size=[3, 3])
    # 12×12 grid: 144 rows of 4 × 2 × 16 × 16
    assert flattened_patches(_parameters(muse_tower), muse, merged_side=4) == \
        ("pixel_values", (144, 2048), "image_grid_thw", [[1, 12, 12]])
    # no temporal patch, channels or merge in its config: one frame, 3 channels, no merge
    assert flattened_patches(_parameters(muse_tower), Config(patch_size=16)) == \
        ("pixel_values", (16, 768), "image_grid_thw", [[1, 4, 4]])


def test_a_forward_that_runs_without_a_grid_keeps_the_other_input_rules():
    from onnxflops.survey.sources import flattened_patches

    config = Config(patch_size=16, spatial_merge_size=2)

    def optional_grid(self, pixel_values, image_grid_hw=None):  # RADIO: runs on an image
        pass

    def whole_vlm(self, input_ids, pixel_values=None, image_grid_thw=None):
        pass

    def vlm_needing_a_grid(self, input_ids, pixel_values, image_grid_thw):  # text too
        pass

    def no_grid(self, pixel_values):
        pass

    for forward in (optional_grid, whole_vlm, vlm_needing_a_grid, no_grid):
        assert flattened_patches(_parameters(forward), config) is None, forward.__name__

    def tower(self, pixel_values, grid_thw):
        pass

    assert flattened_patches(_parameters(tower), Config(patch_size=None)) is None  # no patch size


@pytest.mark.slow  # converts with torch
def test_a_towers_grid_is_a_constant_of_its_graph_so_positions_from_it_have_shapes():
    """A tower whose positions come from its grid's values (a Range of t·h·w) is counted whole
    where the grid is fixed in the model, as a preprocessor fixes it: given as an input, the
    grid's values are unknown to the graph and the Add after the Range is uncosted."""
    torch = pytest.importorskip("torch")
    import onnxflops
    from onnxflops.survey.sources import _with_fixed_grid

    class Tower(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(12, 8, bias=False)

        def forward(self, hidden_states, grid_thw):
            positions = torch.arange(int(grid_thw.prod()), dtype=torch.float32)
            return self.proj(hidden_states) + positions[:, None]

    fixed = _with_fixed_grid(Tower(), "grid_thw", [[1, 4, 4]])
    assert type(fixed).__name__ == "Tower"  # messages name the tower
    report = onnxflops.count(fixed, {"hidden_states": torch.zeros(16, 12)})
    assert report.total.macs == 16 * 12 * 8 and report.complete  # 16 patches: 12 → 8


# the input rule: arguments documented as expressions or not at all (issue 19) ------------------

@pytest.mark.slow  # imports torch
def test_a_docstring_shape_in_brackets_is_read_as_expressions_of_the_configs_keys():
    """MuseGlimmer's assistant documents `[batch_size, config.block_size, dim]` and
    `[batch_size, number_of_previous_accepted_tokens, dim * len(config.target_layer_ids)]`: its
    main input is states, not ids, and its required context as wide as its two target layers."""
    torch = pytest.importorskip("torch")
    from onnxflops.survey.sources import TOKENS, _transformers_inputs, documented_arguments

    class Assistant:
        main_input_name = "noise_embeds"

        def forward(self, noise_embeds, context_hidden_states, attention_mask=None):
            """Denoises.

            Args:
                noise_embeds (`torch.Tensor` of shape `[batch_size, config.block_size, dim]`):
                    Noise.
                context_hidden_states (`torch.Tensor` of shape `[batch_size, number_of_previous_accepted_tokens, dim * len(config.target_layer_ids)]`):
                    Context.
                attention_mask (`torch.Tensor` of shape `[batch_size, number_of_previous_accepted_tokens + config.block_size]`):
                    Mask.
            """

    config = Config(hidden_size=96, block_size=8, target_layer_ids=[1, 13], vocab_size=1000)
    inputs = _transformers_inputs(Assistant(), config)
    assert {k: (tuple(v.shape), v.dtype) for k, v in inputs.items()} == {
        "noise_embeds": ((1, 8, 96), torch.float32),
        "context_hidden_states": ((1, TOKENS, 2 * 96), torch.float32)}

    def qformer(query_embeds):
        """Args:
            query_embeds (`torch.Tensor`  of shape `(batch_size, sequence_length, hidden_size)`):
                Queries (two spaces before "of shape", as BLIP-2's Q-Former writes it).
        """

    assert documented_arguments(qformer)["query_embeds"][1] == [
        "batch_size", "sequence_length", "hidden_size"]


@pytest.mark.slow  # imports torch
def test_cross_attention_states_a_config_sizes_are_a_variant_of_the_inputs():
    """BLIP-2's Q-Former: `encoder_hidden_states` is documented *optional* with a `hidden_size`,
    but its config sizes it (`encoder_hidden_size`) and its cross-attention needs it."""
    torch = pytest.importorskip("torch")
    from onnxflops.survey.sources import TOKENS, documented_variants

    class QFormer:
        def forward(self, query_embeds, encoder_hidden_states=None, labels=None):
            """Args:
                query_embeds (`torch.Tensor` of shape `(batch_size, sequence_length, hidden_size)`):
                    Queries.
                encoder_hidden_states (`torch.Tensor` of shape `(batch_size, sequence_length, hidden_size)`, *optional*):
                    The vision tower's states.
                labels (`torch.Tensor` of shape `(batch_size, sequence_length)`, *optional*):
                    Not sized for by the config: not given.
            """

    queries = {"query_embeds": torch.zeros(1, TOKENS, 96)}
    (variant,) = documented_variants(QFormer(), Config(hidden_size=96, encoder_hidden_size=48),
                                     queries)
    assert {k: tuple(v.shape) for k, v in variant.items()} == {
        "query_embeds": (1, TOKENS, 96), "encoder_hidden_states": (1, TOKENS, 48)}
    assert documented_variants(QFormer(), Config(hidden_size=96), queries) == ()


@pytest.mark.slow  # imports torch
def test_optional_boxes_over_the_text_are_a_variant_as_integers_then_on_0_1():
    """UDOP documents its `bbox` *optional*, as `torch.LongTensor` of shape `({0}, 4)` (an
    unfilled placeholder for the text's shape), yet its relative position bias needs the boxes
    and reads them as floats; boxes over its patches (`visual_bbox`) it makes itself."""
    torch = pytest.importorskip("torch")
    from onnxflops.survey.sources import TOKENS, documented_arguments, documented_variants

    class Document:
        def forward(self, input_ids=None, bbox=None, visual_bbox=None):
            """Args:
                input_ids (`torch.Tensor` of shape `(batch_size, sequence_length)`, *optional*):
                    Tokens.
                bbox (`torch.LongTensor` of shape `({0}, 4)`, *optional*):
                    Boxes of the tokens.
                visual_bbox (`torch.LongTensor` of shape `(batch_size, patch_sequence_length, 4)`, *optional*):
                    Boxes of the patches.
            """

    assert documented_arguments(Document.forward)["bbox"][1] == [
        "batch_size", "sequence_length", "4"]
    ids = {"input_ids": torch.zeros(1, TOKENS, dtype=torch.long)}
    integers, floats = documented_variants(Document(), Config(vocab_size=1000), ids)
    assert integers.keys() == floats.keys() == {"input_ids", "bbox"}
    assert integers["bbox"].shape == floats["bbox"].shape == (1, TOKENS, 4)
    assert integers["bbox"].dtype == torch.long and integers["bbox"].max() < 1000
    assert floats["bbox"].is_floating_point() and floats["bbox"].max() <= 1
    boxes = floats["bbox"]
    assert (boxes[..., :2] <= boxes[..., 2:]).all()


@pytest.mark.slow  # imports torch
def test_a_forward_that_reads_its_main_input_under_another_name_is_given_it_so():
    """VibeVoice's tokenizer encoder says its main input is `input_values` but its forward reads
    the waveform as `hidden_states` (undocumented); its decoder reads latents there, channels
    first: the waveform, then states of the config's width in either layout, are tried."""
    pytest.importorskip("torch")
    from onnxflops.survey.sources import (TOKENS, _transformers_inputs, as_the_forward_names,
                                          input_variants)

    class Tokenizer:
        main_input_name = "input_values"

        def forward(self, hidden_states, padding_cache=None, use_cache=False, **kwargs):
            pass

    config = Config(hidden_size=64, vocab_size=1000)
    inputs = _transformers_inputs(Tokenizer(), config)
    assert {k: tuple(v.shape) for k, v in inputs.items()} == {"input_values": (1, 16000)}
    inputs, variants = as_the_forward_names(Tokenizer(), config, inputs, input_variants(inputs))
    assert {k: tuple(v.shape) for k, v in inputs.items()} == {"hidden_states": (1, 16000)}
    assert [tuple(v["hidden_states"].shape) for v in variants] == [
        (1, 1, 16000), (1, TOKENS, 64), (1, 64, TOKENS)]

    class Text:  # takes its main input: nothing renamed
        main_input_name = "input_ids"

        def forward(self, input_ids, hidden_states=None):
            pass

    ids = _transformers_inputs(Text(), config)
    assert as_the_forward_names(Text(), config, ids, ()) == (ids, ())


@pytest.mark.slow  # imports torch
def test_states_a_forward_requires_undocumented_are_given_at_each_width_and_layout():
    """PI0's `action_embeds` (documented without a shape), fed to its action expert as its
    embeddings: TOKENS states as wide as its configs say, channels last, then first."""
    pytest.importorskip("torch")
    from onnxflops.survey.sources import TOKENS, _transformers_inputs, states_variants

    class Policy:
        main_input_name = "input_ids"

        def forward(self, action_embeds, input_ids=None):
            """Args:
                action_embeds (`torch.Tensor`, *optional*):
                    The embeddings of actions.
                input_ids (`torch.Tensor` of shape `(batch_size, sequence_length)`, *optional*):
                    Tokens.
            """

    config = Config(vocab_size=1000, dit_config=Config(hidden_size=48))
    inputs = _transformers_inputs(Policy(), config)
    assert {k: tuple(v.shape) for k, v in inputs.items()} == {
        "input_ids": (1, TOKENS), "action_embeds": (1, TOKENS, 48)}
    assert [tuple(v["action_embeds"].shape) for v in states_variants(Policy(), config, inputs)] \
        == [(1, 48, TOKENS)]


@pytest.mark.slow  # imports torch
def test_a_towers_merge_sizes_are_given_and_fixed_beside_its_grid():
    """VideoLLaMA 3's vision tower requires `merge_sizes` beside its patches and grid: the
    merge its patches were laid out for, one per image (1: its config names none)."""
    torch = pytest.importorskip("torch")
    from onnxflops.survey.sources import _transformers_inputs, grid_companions

    class Tower:
        main_input_name = "pixel_values"

        def forward(self, pixel_values, grid_thw, merge_sizes, **kwargs):
            pass

    inputs = _transformers_inputs(Tower(), Config(patch_size=16))
    assert {k: tuple(v.shape) for k, v in inputs.items()} == {
        "pixel_values": (16, 768), "grid_thw": (1, 3), "merge_sizes": (1,)}
    assert inputs["merge_sizes"].tolist() == [1] and inputs["merge_sizes"].dtype == torch.int64
    assert grid_companions(_parameters(Tower.forward), Config(spatial_merge_size=2),
                           [[1, 8, 8]]) == {"merge_sizes": [2]}


@pytest.mark.slow  # imports torch and transformers
def test_the_models_own_feature_extractor_makes_a_variant_of_its_audio():
    """Gemma 3n's audio encoder reads `audio_mel` (its main input, no input rule's name) and a
    required `audio_mel_mask`: its feature extractor makes 97 frames of 128 bins of a second at
    16 kHz (32 ms frames every 10 ms) and their mask, given as the main input and its mask."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from onnxflops.survey.sources import _feature_extractors, feature_extractor_variants

    assert _feature_extractors("gemma3n_audio") == ["Gemma3nAudioFeatureExtractor"]

    class Encoder:
        main_input_name = "audio_mel"

        def forward(self, audio_mel, audio_mel_mask, **kwargs):
            pass

    ids = {"audio_mel": torch.zeros(1, 16, dtype=torch.long)}
    (variant,) = feature_extractor_variants(Encoder(), Config(model_type="gemma3n_audio"), ids)
    assert {k: (tuple(v.shape), v.dtype) for k, v in variant.items()} == {
        "audio_mel": ((1, 97, 128), torch.float32), "audio_mel_mask": ((1, 97), torch.bool)}


@pytest.mark.slow  # imports torch and transformers
def test_the_processors_other_images_and_masks_are_made_with_the_image():
    """SegGPT's image processor takes a prompt image and its mask beside the image: each at its
    448 × 448 (the forward stacks prompt and image to its 896 × 448), not the config's image
    size each."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from onnxflops.survey.sources import processor_variants

    class Painter:
        def forward(self, pixel_values, prompt_pixel_values, prompt_masks):
            pass

    side = torch.zeros(1, 3, 896, 448)
    base = {"pixel_values": side, "prompt_pixel_values": side, "prompt_masks": side}
    variants = processor_variants(Painter(), Config(model_type="seggpt"), base)
    assert {k: tuple(v.shape) for k, v in variants[0].items()} == {
        "pixel_values": (1, 3, 448, 448), "prompt_pixel_values": (1, 3, 448, 448),
        "prompt_masks": (1, 3, 448, 448)}


@pytest.mark.slow  # imports torch and timm
def test_an_image_side_named_only_by_a_timm_architecture_is_a_variant_at_timms_side():
    """PE Video's vision tower is timm's `vit_pe_core_large_patch14_336`, its config naming no
    image size: tried where the forward fails, its frames are 336 px, as timm's pretrained
    config says; a video main input given without frames has FRAMES of them."""
    pytest.importorskip("torch")
    pytest.importorskip("timm")
    from onnxflops.survey.sources import FRAMES, _transformers_inputs, pixel_variants

    class Encoder:
        main_input_name = "pixel_values_videos"

        def forward(self, pixel_values_videos, padding_mask_videos=None):
            pass

    timm_tower = Config(architecture="vit_pe_core_large_patch14_336", num_classes=1024)
    config = Config(hidden_size=96, vision_config=timm_tower)
    inputs = _transformers_inputs(Encoder(), config)
    assert inputs["pixel_values_videos"].shape == (1, 3, 224, 224)  # as before: no frames
    assert [tuple(v["pixel_values_videos"].shape) for v in pixel_variants(config, inputs)] == [
        (1, FRAMES, 3, 224, 224), (1, 3, 336, 336), (1, FRAMES, 3, 336, 336)]
    nested = Config(text_config=Config(vocab_size=10), video_config=config)  # PeVideoConfig
    video = {"pixel_values_videos": inputs["pixel_values_videos"][None].expand(1, FRAMES, 3, 224, 224)}
    assert [tuple(v["pixel_values_videos"].shape) for v in pixel_variants(nested, video)] == [
        (1, FRAMES, 3, 336, 336)]
    assert pixel_variants(Config(vision_config=Config(image_size=224)), video) == ()


@pytest.mark.slow  # imports torch
def test_a_main_input_no_rule_names_nor_docstring_shapes_is_tried_as_states():
    """Perceiver's `inputs` (`torch.Tensor`, no shape): token ids first, then TOKENS states of
    the config's width."""
    pytest.importorskip("torch")
    from onnxflops.survey.sources import TOKENS, _transformers_inputs, states_variants

    class Perceiver:
        main_input_name = "inputs"

        def forward(self, inputs, attention_mask=None):
            """Args:
                inputs (`torch.Tensor`):
                    Inputs to the perceiver.
            """

    config = Config(d_model=96, vocab_size=262)
    inputs = _transformers_inputs(Perceiver(), config)
    assert inputs["inputs"].shape == (1, TOKENS) and not inputs["inputs"].is_floating_point()
    assert [tuple(v["inputs"].shape) for v in states_variants(Perceiver(), config, inputs)] == [
        (1, TOKENS, 96), (1, 96, TOKENS)]


@pytest.mark.slow  # imports torch
def test_flattened_patches_are_a_variant_as_images_of_a_patch_each():
    """Kimi-K2.5's vision tower convolves each patch: its 64 patches of 3 · 14 · 14 values are
    (64, 3, 14, 14), tried where the forward fails on (64, 588)."""
    torch = pytest.importorskip("torch")
    from onnxflops.survey.sources import patch_variants

    patches = {"pixel_values": torch.zeros(64, 588)}
    (variant,) = patch_variants(patches, Config(patch_size=14))
    assert variant["pixel_values"].shape == (64, 3, 14, 14)
    assert patch_variants(patches, Config(patch_size=16)) == ()  # 588 is no whole 16²


@pytest.mark.slow  # imports torch
def test_a_documented_mask_over_an_input_is_a_variant_optional_or_not():
    """AudioFlamingo3's encoder documents `input_features_mask` *optional* but sums it for the
    lengths: tried with it, ones over the features' 3,000 frames (given bins × frames)."""
    torch = pytest.importorskip("torch")
    from onnxflops.survey.sources import mask_variants

    class Encoder:
        def forward(self, input_features, input_features_mask=None, labels_mask=None):
            """Args:
                input_features (`torch.FloatTensor` of shape `(batch_size, feature_size, sequence_length)`):
                    Features.
                input_features_mask (`torch.Tensor` of shape `(batch_size, sequence_length)`, *optional*):
                    Which frames are features.
                labels_mask (`torch.Tensor` of shape `(batch_size, sequence_length)`, *optional*):
                    Over no input given: not given.
            """

    features = {"input_features": torch.zeros(1, 128, 3000)}
    (variant,) = mask_variants(Encoder(), Config(vocab_size=10), features)
    assert {k: tuple(v.shape) for k, v in variant.items()} == {
        "input_features": (1, 128, 3000), "input_features_mask": (1, 3000)}
    assert variant["input_features_mask"].all()
    assert mask_variants(Encoder(), Config(vocab_size=10), variant) == ()


@pytest.mark.slow  # imports torch
def test_a_variant_that_runs_out_of_memory_is_the_one_measured_again_on_meta():
    """PE Video fails on 224 px frames (its timm tower is 336 px) and its 336 px variant runs out
    of memory on a real-weight build: the failure is that variant's, with its subject, so that
    the oracle measures it on meta, not the inputs that fail for another reason."""
    torch = pytest.importorskip("torch")
    from onnxflops.survey.measure import oracle_on_inputs_that_run
    from onnxflops.survey.sources import Subject

    class Tower(torch.nn.Linear):
        def forward(self, pixels):
            if pixels.shape[-1] != 336:
                raise AssertionError("Input height (224) doesn't match model (336).")
            raise MemoryError("336 px frames")

    small, large = {"pixels": torch.zeros(1, 224)}, {"pixels": torch.zeros(1, 336)}
    with pytest.raises(MemoryError) as failed:
        oracle_on_inputs_that_run(Subject(Tower(4, 4), kwargs=small, variants=(large,)), False)
    assert failed.value.subject.kwargs is large
    with pytest.raises(AssertionError):  # no variant out of memory: the inputs' own failure
        oracle_on_inputs_that_run(Subject(Tower(4, 4), kwargs=small, variants=(small,)), False)
