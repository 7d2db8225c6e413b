"""FLOPs of each keras-hub backbone beside its transformers twin's, both counted by onnxflops.

    PYTHONPATH=. python tools/twin_flops.py [BACKBONE ...]
    PYTHONPATH=. python tools/twin_flops.py --verdicts   # verdicts again, nothing recounted

For every pair survey/keras.csv marks as agreeing on MACs (the twin's MACs there are the oracle's),
the backbone is built by the survey's small-config rule and the twin from the same config
(`twin_config`); both are counted through onnxflops, each in a process of its own (torch and
TensorFlow apart). #21 asks the FLOPs to agree where the math is the same: a pair whose two
networks compute the same thing in different amounts of elementwise work is marked "not the same
math", with the ops and why (`TWIN_FLOPS_DIFFER`). The table is written to survey/keras_twins.csv
(rows of the backbones named replaced, the others kept); the FLOPs of each op type on which a pair
differs are printed.
"""
import csv
import sys

from onnxflops.survey.keras import TWINS, apart, twin_flops_verdict

TABLE = "survey/keras_twins.csv"
COLUMNS = ("backbone", "twin", "macs", "twin_macs", "flops", "twin_flops", "flops_diff",
           "verdict", "reason")


def keras_count(name):
    from onnxflops.survey import keras as k
    k._keras()
    import keras_hub

    import onnxflops
    model, config = k.build_small(getattr(keras_hub.models, name))
    report = onnxflops.count(model, k.bound_inputs(model, k.IMAGE))
    return config, k.has_pooled_output(model), _totals(report)


def twin_count(name, config, pooled):
    import warnings
    warnings.simplefilter("ignore")
    import torch  # noqa: F401 - before anything that may import TensorFlow

    import onnxflops
    from onnxflops.survey.keras import twin_model
    model, inputs = twin_model(name, config, pooled)
    return _totals(onnxflops.count(model.eval(), inputs=inputs))


def _totals(report):
    return (report.total.macs, report.total.flops,
            {op: totals.flops for op, totals in report.by_op_type().items()})


def op_differences(ops: dict, twin_ops: dict) -> dict:
    """{op type: (FLOPs here, FLOPs in the twin)} where they differ."""
    return {op: (ops.get(op, 0), twin_ops.get(op, 0)) for op in sorted(set(ops) | set(twin_ops))
            if ops.get(op, 0) != twin_ops.get(op, 0)}


def main(names):
    agreeing = [r["model"].split(":")[1] for r in csv.DictReader(open("survey/keras.csv"))
                if r.get("twin_agrees") == "True"]
    names = names or agreeing
    try:
        kept = [r for r in csv.DictReader(open(TABLE, newline="")) if r["backbone"] not in names]
    except FileNotFoundError:
        kept = []
    rows = []
    for name in names:
        twin = TWINS[name][0] if isinstance(TWINS[name], tuple) else TWINS[name]
        try:
            config, pooled, (macs, flops, ops) = apart(keras_count, name)
            twin_macs, twin_flops, twin_ops = apart(twin_count, name, config, pooled)
        except Exception as e:  # noqa: BLE001 - a pair that fails is a row saying why
            rows.append({"backbone": name, "twin": twin, "verdict": "failed",
                         "reason": f"{type(e).__name__}: {str(e)[:200]}"})
            print(name, rows[-1]["reason"], flush=True)
            _write(kept + rows)
            continue
        result, reason = twin_flops_verdict(name, macs, twin_macs, flops, twin_flops)
        rows.append({"backbone": name, "twin": twin, "macs": macs, "twin_macs": twin_macs,
                     "flops": flops, "twin_flops": twin_flops, "flops_diff": flops - twin_flops,
                     "verdict": result, "reason": reason})
        print(f"{name}\t{twin}\tflops {flops} twin {twin_flops} ({flops - twin_flops:+})\t{result}",
              flush=True)
        for op, (here, there) in op_differences(ops, twin_ops).items():
            print(f"    {op:24s} {here:>12} {there:>12} {here - there:+}", flush=True)
        _write(kept + rows)  # after each pair: a run cut short keeps what it made


def _write(rows):
    with open(TABLE, "w", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS)
        writer.writeheader()
        writer.writerows(sorted(rows, key=lambda r: r["backbone"]))


def verdicts_again():
    """The table's verdicts and reasons made again from its counts (after TWIN_FLOPS_DIFFER
    changed), nothing recounted."""
    rows = list(csv.DictReader(open(TABLE, newline="")))
    for row in rows:
        if row["flops"]:
            row["verdict"], row["reason"] = twin_flops_verdict(
                row["backbone"], *(int(row[k]) for k in ("macs", "twin_macs", "flops",
                                                         "twin_flops")))
    _write(rows)


if __name__ == "__main__":
    if sys.argv[1:] == ["--verdicts"]:
        verdicts_again()
    else:
        main(sys.argv[1:])
