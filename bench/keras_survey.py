"""Every keras.applications builder and keras-hub backbone, counted and checked against the Keras
oracle: a thin call of `onnxflops survey keras.applications keras_hub` (the sources live in
`onnxflops/survey/keras.py`, the oracle in `onnxflops/oracles/keras.py`), kept for the command
line it always had.

    nice -n 15 python bench/keras_survey.py [-o survey/keras.csv] [--timeout 600]
        [--memory-gb 4] [--jobs N] [SOURCE[:PATTERN] ...]

Rows are appended as they finish and a rerun resumes, as for any survey.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from onnxflops.survey import summary, survey  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="*", default=["keras.applications", "keras_hub"])
    parser.add_argument("-o", "--output", default=str(REPO / "survey" / "keras.csv"))
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--memory-gb", type=float, default=4)
    parser.add_argument("--jobs", type=int, default=1)
    args = parser.parse_args()
    survey(args.sources, args.output, jobs=args.jobs, memory_gb=args.memory_gb,
           timeout=args.timeout)
    print(summary(args.output))


if __name__ == "__main__":
    main()
