"""Count each real-library model of the zoo and say whether it matches its framework's own count.

    prlimit --as=8000000000 python bench/zoo.py [NAME ...]

One line per model: exact, or what differs (MACs against FlopCounterMode / 2, params against the
framework's count, uncosted nodes, or the error). Keras models have no flop counter: their MACs
are compared with their torch twin's count when both are run.
"""

from __future__ import annotations

import sys
import time
import traceback
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import onnxflops  # noqa: E402
from onnxflops.models.zoo import ZOO, oracle, zoo_model  # noqa: E402


def measure(name: str, macs_of: dict[str, int]) -> str:
    model = zoo_model(name)
    built = model.build()
    inputs = model.inputs()
    want_macs, want_params = oracle(model, built, inputs)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = onnxflops.count(built, inputs or None)
    seconds = time.perf_counter() - start
    macs_of[name] = report.total.macs
    if want_macs is None and model.twin in macs_of:
        want_macs = macs_of[model.twin]
    problems = []
    if want_macs is not None and report.total.macs != want_macs:
        problems.append(f"MACs {report.total.macs:,} vs {want_macs:,} "
                        f"({report.total.macs - want_macs:+,})")
    if report.total.params != want_params:
        problems.append(f"params {report.total.params:,} vs {want_params:,} "
                        f"({report.total.params - want_params:+,})")
    if report.uncosted:
        kinds = sorted({u.op_type for u in report.uncosted})
        problems.append(f"{len(report.uncosted)} uncosted ({', '.join(kinds)})")
    verdict = "exact" if not problems else "NOT EXACT: " + "; ".join(problems)
    return f"{verdict} [{seconds:.1f}s, flops {report.total.flops:,}]"


def main(names: list[str]) -> None:
    macs_of: dict[str, int] = {}
    for name in names or [m.name for m in ZOO]:
        try:
            line = measure(name, macs_of)
        except Exception as e:  # noqa: BLE001 - a survey reports every failure and goes on
            line = f"FAILS: {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
            if "-v" in sys.argv:
                traceback.print_exc()
        print(f"{name:28s} {line}", flush=True)


if __name__ == "__main__":
    main([a for a in sys.argv[1:] if not a.startswith("-")])
