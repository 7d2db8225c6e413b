"""`survey transformers --llm` on a fixed sample of small families, each row in its own process:
every row the committed table (survey/llm.csv) holds exact stays exact, against the HF model's
own prefill and decode passes and the hand counts of KV bytes and active params."""

from __future__ import annotations

from pathlib import Path

from onnxflops.survey import read_any, survey

TABLE = Path(__file__).resolve().parents[2] / "survey" / "llm.csv"
# One family per kind the survey meets: full attention and dense (Llama), multi-query with a
# window on every layer (Mistral), local/global layers (Gemma 2), routed + shared experts whose
# default grouped kernel FlopCounterMode reads as 0 (Qwen2-MoE, its oracle run eager).
SAMPLE = ["transformers:llama", "transformers:mistral", "transformers:gemma2",
          "transformers:qwen2_moe"]


def test_the_llm_sample_stays_exact_where_the_committed_table_says_it_was(tmp_path):
    committed = {r["model"]: r for r in read_any(TABLE)}
    was_exact = [m for m in SAMPLE if committed.get(m, {}).get("verdict") == "exact"]
    assert len(was_exact) >= 3, "the sample checks too little: pick rows the table holds exact"
    rows = survey(was_exact, tmp_path / "llm.csv", jobs=2, timeout=300, progress=False,
                  llm=True)
    assert {r["model"]: r["reason"] for r in rows if r["verdict"] != "exact"} == {}
    by_model = {r["model"]: r for r in rows}
    for model in was_exact:  # the same numbers as committed, column by column
        assert {k: by_model[model][k] for k in committed[model] if k.endswith(("macs", "bytes"))} \
            == {k: v for k, v in committed[model].items() if k.endswith(("macs", "bytes"))}
    moe = by_model.get("transformers:qwen2_moe")
    if moe is not None:  # the survey says where it ran the eager form of the model
        assert "eager experts" in moe["oracle"] and moe["experts"] == "routed + shared"
