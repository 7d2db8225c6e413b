"""`onnxflops profile`: latency and per-node achieved FLOP/s of one model under onnxruntime."""

from __future__ import annotations

import argparse

from onnxflops.commands.common import (add_command, add_graph_option, check_output_options,
                                       input_shapes, print_result)
from onnxflops.profiling import OPT_LEVELS, PROVIDERS


def register(sub) -> None:
    p = add_command(
        sub, "profile", "measure latency and achieved FLOP/s under onnxruntime",
        "Run a model under onnxruntime: end-to-end latency over timed runs with the profiler off, "
        "then per-node times from a profiled session joined to the counted FLOPs (through "
        "onnxruntime's fusions), against the machine's measured peak FLOP/s and memory "
        "bandwidth.", inputs=True, conversion=True, convention=True, rows="executed node",
        page="the report command's page, with its plots")
    add_measure_options(p)
    p.add_argument("--top", type=int, default=20, metavar="N",
                   help="rows of the node table, slowest first (default 20; 0: all)")
    p.set_defaults(func=run)


def add_measure_options(p: argparse.ArgumentParser) -> None:
    """How `profile` and `report` run a model under onnxruntime (--convention comes with
    add_command)."""
    p.add_argument("--provider", choices=list(PROVIDERS), default="cpu",
                   help="onnxruntime execution provider (cuda needs onnxruntime-gpu and a GPU)")
    p.add_argument("--threads", type=int, metavar="N",
                   help="intra-op threads (default: onnxruntime's, one per physical core)")
    p.add_argument("--runs", type=int, default=100, metavar="N", help="timed runs (default 100)")
    p.add_argument("--warmup", type=int, default=10, metavar="N",
                   help="untimed runs first (default 10)")
    p.add_argument("--profile-runs", type=int, default=10, metavar="N",
                   help="runs of the profiled session whose per-node median is kept (default 10)")
    p.add_argument("--opt-level", choices=list(OPT_LEVELS), default="all",
                   help="onnxruntime graph optimization level (default: all, as deployed)")
    p.add_argument("--no-ceilings", dest="ceilings", action="store_false",
                   help="do not measure peak FLOP/s and bandwidth (no efficiency, no bound)")
    p.add_argument("--quick", action="store_true",
                   help="rough ceilings from small problems and at most 2 warm-up runs")
    p.add_argument("--device-id", type=int, default=0, help="GPU index for --provider cuda")
    p.add_argument("--max-seconds", type=_positive, default=600, metavar="S",
                   help="refuse, before running, a profile estimated to take longer "
                        "(default 600; the estimate is a lower bound)")
    p.add_argument("--max-memory-gb", type=_positive, metavar="GB",
                   help="memory budget in GiB in place of the available RAM (the process's "
                        "address-space, data and cgroup limits still hold)")
    add_graph_option(p)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return value


def measure_kwargs(args: argparse.Namespace) -> dict:
    return dict(inputs=input_shapes(args), batch=args.batch, provider=args.provider,
                threads=args.threads, runs=args.runs, warmup=args.warmup,
                profile_runs=args.profile_runs, opt_level=args.opt_level,
                convention=args.convention, ceilings=args.ceilings, quick=args.quick,
                device_id=args.device_id, max_seconds=args.max_seconds,
                max_memory_gb=args.max_memory_gb, exporter=args.exporter, unsafe=args.unsafe,
                graph=args.graph)


def run(args: argparse.Namespace) -> int:
    from onnxflops.profiling import STAGES, profile
    from onnxflops.progress import stages

    check_output_options(args)
    with stages(1, STAGES) as bar:
        bar.start(str(args.model))
        result = profile(args.model, progress=bar.update, **measure_kwargs(args))
    print_result(result, args, view={"top": args.top or None}, page=_page)
    return 0


def _page(result) -> str:
    from onnxflops.html.page import to_html

    return to_html([result], result.model)
