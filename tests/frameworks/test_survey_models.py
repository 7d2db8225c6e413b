"""Real registry models through `onnxflops survey`, each row in its own process: tiny ones are
exact, Ray runs the same rows, and a fixed sample stays exact where the committed tables
(survey/*.csv) say it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from onnxflops.survey import read_any, survey

TABLES = Path(__file__).resolve().parents[2] / "survey"
TINY = ["timm:test_resnet", "timm:test_vit", "torchvision:squeezenet1_1"]
# Small models of each registry whose rows were exact when the tables were committed: about
# 3 minutes on 2 cores, two rows at a time.
SAMPLE = [
    "timm:test_byobnet", "timm:test_coatnet", "timm:test_convnext", "timm:test_convnext3",
    "timm:test_efficientnet", "timm:test_efficientnet_evos", "timm:test_efficientnet_gn",
    "timm:test_efficientnet_ln", "timm:test_nfnet", "timm:test_resnet", "timm:test_vit",
    "timm:test_vit2", "timm:test_vit4",
    "torchvision:squeezenet1_1", "torchvision:mobilenet_v3_small", "torchvision:alexnet",
    "torchvision:mnasnet0_5", "torchvision:shufflenet_v2_x0_5",
    "transformers:bert", "transformers:llama", "transformers:vit", "transformers:t5",
    "transformers:gpt2", "transformers:qwen2",
]

# Small Keras rows the Keras table holds exact, the relative-attention ones among them (weight-only
# work Grappler once folded): about 60 s on 2 cores, two rows at a time.
KERAS_SAMPLE = ["keras.applications:MobileNet", "keras_hub:DebertaV3Backbone",
                "keras_hub:XLNetBackbone", "keras_hub:BertBackbone"]


def test_tiny_timm_and_torchvision_models_are_exact(tmp_path):
    rows = survey(TINY, tmp_path / "s.csv", jobs=2, timeout=300, progress=False)
    assert {r["model"]: (r["verdict"], r["reason"]) for r in rows} == \
        dict.fromkeys(TINY, ("exact", ""))
    assert all(r["macs"] > 0 and r["params"] > 0 for r in rows)


def test_ray_runs_the_same_rows_as_the_local_pool(tmp_path):
    pytest.importorskip("ray")
    rows = survey(TINY[:2], tmp_path / "s.jsonl", ray="auto", jobs=2, timeout=300,
                  progress=False)
    assert {r["model"]: r["verdict"] for r in rows} == dict.fromkeys(TINY[:2], "exact")


def test_the_sample_stays_exact_where_the_committed_tables_say_it_was():
    committed = {r["model"]: r for table in TABLES.glob("*.csv") if table.name != "llm.csv"
                 for r in read_any(table)}  # llm.csv: serving rows (test_survey_llm_models)
    was_exact = [m for m in SAMPLE if committed.get(m, {}).get("verdict") == "exact"]
    assert len(was_exact) >= 20, "the sample checks too little: pick rows the tables hold exact"
    rows = survey(was_exact, jobs=2, timeout=600, progress=False)
    assert {r["model"]: r["reason"] for r in rows if r["verdict"] != "exact"} == {}


def test_the_keras_sample_stays_exact_where_the_keras_table_says_it_was():
    committed = {r["model"]: r for r in read_any(TABLES / "keras.csv")}
    was_exact = [m for m in KERAS_SAMPLE if committed.get(m, {}).get("verdict") == "exact"]
    assert len(was_exact) >= 3, "the sample checks too little: pick rows the table holds exact"
    rows = survey(was_exact, jobs=2, memory_gb=4, timeout=600, progress=False)
    assert {r["model"]: r["reason"] for r in rows if r["verdict"] != "exact"} == {}
    # Each keras-hub row's twin counts the same network's MACs.
    assert all(r["twin_agrees"] for r in rows if r["model"] in committed
               and committed[r["model"]]["twin_agrees"])


def test_a_builder_that_computes_with_tensors_builds_on_meta_one_parameter_at_a_time():
    import torch

    from onnxflops.survey.measure import _parameters_on_meta
    from onnxflops.survey.oracle import torch_oracle

    def build():  # widths computed with tensors, as torchvision's RegNet does: fails under meta
        widths = (torch.tensor([2.0, 3.0]) * 4).int().tolist()
        return torch.nn.Sequential(torch.nn.Linear(widths[0], widths[1]), torch.nn.BatchNorm1d(12))

    with pytest.raises(NotImplementedError), torch.device("meta"):
        build()
    with _parameters_on_meta():
        model = build()
    model.to("meta")
    assert {t.device.type for t in [*model.parameters(), *model.buffers()]} == {"meta"}
    # Linear 8 → 12 on two rows: 2 · 8 · 12 = 192 MACs (BatchNorm: none);
    # params 8 · 12 + 12 + 2 · 12 = 132
    assert torch_oracle(model, (torch.randn(2, 8, device="meta"),)) == (192, 132)


def test_the_oracle_reports_the_lstm_work_flop_counter_mode_misses():
    import torch

    from onnxflops.survey.oracle import checked_flop_counter

    torch.manual_seed(0)
    # nn.LSTM on the CPU runs oneDNN's kernel, which FlopCounterMode counts as 0; the hand formula
    # gives 4·16·(8+16)·5 + 4·16·(16+16)·5 = 17,920 MACs. A GRU it counts: 3·16·24·5 = 5,760 MACs.
    lstm = torch.nn.LSTM(8, 16, num_layers=2)
    assert checked_flop_counter(lstm, (torch.randn(5, 1, 8),)) == (0, {"LSTM": 17_920})
    gru = torch.nn.GRU(8, 16)
    assert checked_flop_counter(gru, (torch.randn(5, 1, 8),)) == (2 * 5_760, {})


def test_the_oracle_reports_the_distance_work_flop_counter_mode_misses():
    import torch

    from onnxflops.survey.oracle import checked_flop_counter

    class CodebookSearch(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.codes = torch.nn.Parameter(torch.randn(64, 8))

        def forward(self, x):
            return torch.cdist(x, self.codes).argmin(-1)

    # FlopCounterMode has no formula for cdist (0); ATen's matrix-product form, 64 codes > 25:
    # 5·64·(8 + 2) = 3,200 MACs. The exported graph holds that MatMul (K = 10).
    assert checked_flop_counter(CodebookSearch(), (torch.randn(5, 8),)) == (0, {"cdist": 3_200})
    import onnxflops

    assert onnxflops.count(CodebookSearch(), inputs=torch.randn(5, 8)).total.macs == 3_200


def test_the_oracle_reports_work_whose_result_no_output_reads():
    import torch

    from onnxflops.survey.oracle import discarded_work

    class Dropped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.dropped = torch.nn.Linear(4, 3, bias=False)  # FLAVA's text_to_mm_projection
            self.router = torch.nn.Linear(4, 2, bias=False)
            self.kept = torch.nn.Linear(4, 5, bias=False)

        def forward(self, x):
            self.dropped(x)
            # read through integer indices only (no gradient flows): still read
            pick = self.router(x).argmax(-1)
            out = self.kept(x)
            return out[torch.arange(2), pick]

    class Attention(torch.nn.Module):
        # LiLT's last layer on text alone: the layout stream's attention product runs in the
        # module whose text product is read, and is itself read by nothing
        def __init__(self):
            super().__init__()
            self.text = torch.nn.Linear(4, 4, bias=False)
            self.layout = torch.nn.Linear(4, 2, bias=False)

        def forward(self, x):
            probs = torch.softmax(x @ x.transpose(-1, -2), -1)  # 2·4·2 = 16 MACs, read
            probs @ self.layout(x)  # layout 2·4·2 = 16, its product 2·2·2 = 8: dropped
            return probs @ self.text(x)  # text 2·4·4 = 32, its product 2·2·4 = 16

    # x 2×4: dropped 2·4·3 = 24, router 2·4·2 = 16 (read through argmax), kept 2·4·5 = 40 MACs
    assert discarded_work(Dropped(), (torch.ones(2, 4),)) == {"dropped": 24}
    # the product in the model itself is named by its class
    assert discarded_work(Attention(), (torch.ones(2, 4),)) == {"layout": 16, "Attention": 8}
