"""The long fuzz run: thousands of mutated seed models through the API and the command line, each in
a child process capped in time and memory, counted per outcome.

    python tools/fuzz.py --cases 30000 --jobs 2          # counts per outcome, failure signatures
    python tools/fuzz.py --replay cnn_dynamo:1234 -o case.onnx   # one case again, its file kept

Outcomes: ok; clean error (OnnxFlopsError, or the CLI exits 2 with one line); traceback (any other
exception, or a CLI exit that is neither); negative count; blow-up (MemoryError, or more memory
than --memory-mb above the parent); hang (over --timeout seconds); crash (killed by a signal).
The mutations and the property are those of the property tests: tests/fuzz/mutator.py, oracle.py.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import select
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "fuzz")]

import mutator  # noqa: E402
import oracle  # noqa: E402

CLI_OPTIONS = (("-b", "2"), ("-b", "2", "--by", "layer"), ("-b", "2", "--json"),
               ("-b", "3", "--by", "node", "--csv"), ("-b", "1", "--markdown", "--by", "category"))


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_case(data: bytes, case: int, workdir: Path) -> dict:
    path = workdir / f"case{case}.onnx"
    path.write_bytes(data)
    try:
        outcome, where = oracle.check_api(path)
        if outcome in (oracle.OK, oracle.CLEAN):
            outcome, where = oracle.check_cli(path, *CLI_OPTIONS[case % len(CLI_OPTIONS)])
    finally:
        path.unlink()
    return {"outcome": outcome, "where": where}


def _child(data: bytes, case: int, workdir: Path, write_fd: int, memory_mb: int,
           timeout: int) -> None:
    limit = int(_vm_size() + memory_mb * 2**20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.alarm(timeout)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    try:
        result = run_case(data, case, workdir)
    except MemoryError:
        result = {"outcome": oracle.BLOW_UP, "where": "MemoryError in the harness"}
    except BaseException as e:  # noqa: BLE001 - the harness reports, never dies
        result = {"outcome": oracle.TRACEBACK, "where": "harness " + oracle.signature(e)}
    os.write(write_fd, json.dumps(result).encode())
    os._exit(0)


def _vm_size() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def fuzz(first: int, cases: int, jobs: int, memory_mb: int, timeout: int,
         seeds: dict[str, bytes]) -> tuple[collections.Counter, dict]:
    names = sorted(seeds)
    counts: collections.Counter = collections.Counter()
    failures: dict[str, list] = {}
    running: dict[int, tuple] = {}  # pid -> (read fd, case id, started)
    base_rss = _rss_mb()
    pending = iter(range(first, first + cases))
    with tempfile.TemporaryDirectory(prefix="onnxflops-fuzz-") as tmp:
        workdir = Path(tmp)
        while True:
            while len(running) < jobs:
                case = next(pending, None)
                if case is None:
                    break
                seed = names[case % len(names)]
                data, what = mutator.case_bytes(seeds, seed, case)
                read_fd, write_fd = os.pipe()
                pid = os.fork()
                if pid == 0:
                    os.close(read_fd)
                    _child(data, case, workdir, write_fd, memory_mb, timeout)
                os.close(write_fd)
                running[pid] = (read_fd, f"{seed}:{case}", "; ".join(what), time.monotonic())
            if not running:
                break
            pid, status, usage = os.wait4(-1, 0)
            read_fd, case_id, what, started = running.pop(pid)
            readable, _, _ = select.select([read_fd], [], [], 0)
            raw = os.read(read_fd, 1 << 16) if readable else b""
            os.close(read_fd)
            rss_growth = usage.ru_maxrss / 1024 - base_rss
            if raw:
                result = json.loads(raw)
            elif os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM:
                result = {"outcome": oracle.HANG, "where": f"over {timeout} s"}
            elif os.WIFSIGNALED(status):
                result = {"outcome": oracle.CRASH,
                          "where": f"signal {signal.Signals(os.WTERMSIG(status)).name}"}
            else:
                result = {"outcome": oracle.CRASH, "where": f"exit {os.WEXITSTATUS(status)}"}
            if result["outcome"] in (oracle.OK, oracle.CLEAN) and rss_growth > memory_mb / 2:
                result = {"outcome": oracle.BLOW_UP, "where": f"{rss_growth:.0f} MB"}
            counts[result["outcome"]] += 1
            if result["outcome"] in oracle.FAILURES:
                key = f"{result['outcome']}: {result['where']}"
                failures.setdefault(key, []).append(f"{case_id} ({what})")
            done = sum(counts.values())
            if done % 1000 == 0:
                print(f"  {done} cases, {time.monotonic() - START:.0f} s: {dict(counts)}",
                      file=sys.stderr, flush=True)
    return counts, failures


START = time.monotonic()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--first", type=int, default=0, help="first case number")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--memory-mb", type=int, default=1024,
                        help="address space a case may add to the parent's (default 1024)")
    parser.add_argument("--timeout", type=int, default=20, help="seconds per case (default 20)")
    parser.add_argument("--replay", metavar="SEED:CASE", help="run one case in this process")
    parser.add_argument("-o", "--output", help="with --replay: where to write the case's file")
    parser.add_argument("--json", help="write counts and failures to this file")
    args = parser.parse_args()
    seeds = mutator.load_seeds()
    if args.replay:
        seed, case = args.replay.rsplit(":", 1)
        data, what = mutator.case_bytes(seeds, seed, int(case))
        print("mutations:", "; ".join(what))
        path = Path(args.output or tempfile.mktemp(suffix=".onnx"))
        path.write_bytes(data)
        print("file:", path)
        print("api:", oracle.check_api(path))
        print("cli:", oracle.check_cli(path, *CLI_OPTIONS[int(case) % len(CLI_OPTIONS)]))
        return 0
    import onnxflops.api  # noqa: F401 - imported once here, not in each child
    import onnxflops.commands.count  # noqa: F401
    with tempfile.TemporaryDirectory() as tmp:  # what a count imports lazily, imported once too
        for name, data in seeds.items():
            run_case(data, 0, Path(tmp))
    counts, failures = fuzz(args.first, args.cases, args.jobs, args.memory_mb, args.timeout, seeds)
    print(f"{sum(counts.values())} cases in {time.monotonic() - START:.0f} s")
    for outcome in oracle.OUTCOMES:
        print(f"  {outcome:15} {counts[outcome]}")
    print(f"{len(failures)} failure signatures:")
    for key, cases in sorted(failures.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(cases):6}  {key}\n          e.g. {cases[0]}")
    if args.json:
        Path(args.json).write_text(json.dumps({"counts": counts, "failures": failures}, indent=1))
    return 1 if any(counts[o] for o in oracle.FAILURES) else 0


if __name__ == "__main__":
    sys.exit(main())
