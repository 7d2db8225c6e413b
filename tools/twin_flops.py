"""FLOPs of each keras-hub backbone beside its transformers twin's, both counted by onnxflops.

    PYTHONPATH=. python tools/twin_flops.py

For every pair survey/keras.csv marks as agreeing on MACs (the twin's MACs there are the oracle's):
the twin is built from the same small config (`twin_config`) and counted through onnxflops, and its
MACs and FLOPs are printed beside the keras row's. #21 asks the FLOPs to agree where the math is
the same; each backbone and each twin runs in a process of its own (torch and TensorFlow apart).
"""
import csv

from onnxflops.survey.keras import apart


def keras_config(name):
    from onnxflops.survey import keras as k
    k._keras()
    import keras_hub
    model, config = k.build_small(getattr(keras_hub.models, name))
    return config, k.has_pooled_output(model)


def twin_count(name, config, pooled):
    import warnings
    warnings.simplefilter("ignore")
    import onnxflops
    from onnxflops.survey.keras import twin_model
    model, inputs = twin_model(name, config, pooled)
    report = onnxflops.count(model.eval(), inputs=inputs)
    return report.total.macs, report.total.flops


if __name__ == "__main__":
    rows = {r["model"].split(":")[1]: r for r in csv.DictReader(open("survey/keras.csv"))
            if r.get("twin_agrees") == "True"}
    for name, row in sorted(rows.items()):
        try:
            config, pooled = apart(keras_config, name)
            macs, flops = apart(twin_count, name, config, pooled)
            print(f"{name}\tkeras {row['macs']} {row['flops']}\ttwin {macs} {flops}\t"
                  f"flops_diff {int(float(row['flops'])) - int(flops)}", flush=True)
        except Exception as e:
            print(f"{name}\terror {type(e).__name__}: {str(e)[:200]}", flush=True)
