"""The bomb and hang classes of issue #23, each run whole by `count` and `profile` in a process
of its own under an address-space cap, with its wall seconds, peak memory and outcome.

    python tools/fuzz_classes.py [--cap-gb 4] [--timeout 300] [--markdown FILE]

Each class's model is the first case of its generator (tests/fuzz/generators.py) that is what
the class names: function bombs of 2^16 to 2^20 nodes, a symbolic chain of 60 or more doubling
steps (under --symbolic), nested Loops whose trip counts multiply to 10^9 and 30 levels of them,
a Scan over 100,000 rows, an initializer of 2.2 GB of (sparse) external data. The promise for
each: exit 0 with output, or exit 2 with one line; never a signal, a traceback or a hang.
"""

from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "fuzz")]

import generators  # noqa: E402

# (class, generator, a regex its case's description starts with, count options)
CLASSES = (("function bomb 2^16", "gen_function_bomb", r"function bomb 2\^16", ()),
           ("function bomb 2^18", "gen_function_bomb", r"function bomb 2\^18", ()),
           ("function bomb 2^20", "gen_function_bomb", r"function bomb 2\^20", ()),
           ("symbolic chain, 60+ doublings", "gen_symbolic_chain", r"symbolic chain of [6-8]\d",
            ("--symbolic",)),
           ("nested Loops, 10^9 trips", "gen_trip_products", r"3 nested Loops, 1e\+09", ()),
           ("30 nested Loops", "gen_trip_products", "30 nested Loops", ()),
           ("Scan over 100,000 rows", "gen_trip_products", "Scan over 100000 rows", ()),
           ("2.2 GB external data", "gen_large_external_data", "external data 550000x1024 float32",
            ()))
PROFILE = ("-b", "1", "--runs", "1", "--warmup", "0", "--profile-runs", "1", "--no-ceilings")


def first_case(generator: str, what: str, folder: Path) -> tuple[Path, str]:
    """The first case of `generator` whose description matches `what` (a regex), written in
    `folder` (with what it writes beside it): the model's path and its description."""
    import re

    for case in range(5000):
        for extra in folder.iterdir():
            extra.unlink()
        data, made, _ = generators.GENERATORS[generator](random.Random(f"{generator}:{case}"),
                                                         folder)
        if re.match(what + r"(\b|$)", made) and not made.endswith("(file missing)"):
            path = folder / "model.onnx"
            path.write_bytes(data)
            return path, f"{made} ({generator}:{case})"
    raise SystemExit(f"no case of {generator} is {what!r} in 5000")


def run(argv: list[str], cap_gb: float, timeout: int) -> dict:
    """`python -m onnxflops.cli ARGV` under an address-space cap, ended after `timeout` seconds:
    exit code, wall seconds, peak RSS (MB, of it and what it waited for) and stderr's last line
    (or how many lines it printed)."""
    import os
    import signal

    cap = int(cap_gb * 2**30)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.monotonic()
        child = subprocess.Popen([sys.executable, "-m", "onnxflops.cli", *argv], stdout=out,
                                 stderr=err, preexec_fn=limit, start_new_session=True)
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - start > timeout:
                os.killpg(child.pid, signal.SIGKILL)
                _, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.05)
        seconds = time.monotonic() - start
        child.returncode = 0  # reaped here
        out.seek(0)
        err.seek(0)
        lines, errors = out.read().splitlines(), err.read().strip().splitlines()
    if seconds > timeout:
        code = "hang"
    elif os.WIFSIGNALED(status):
        code = f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    else:
        code = os.WEXITSTATUS(status)
    said = errors[-1] if code not in (0, 1) and errors else f"{len(lines)} lines of output"
    return {"exit": code, "seconds": seconds, "rss_mb": usage.ru_maxrss / 1024, "line": said,
            "stderr_lines": len(errors)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap-gb", type=float, default=4.0)
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("--markdown", help="write the table here too")
    parser.add_argument("--only", help="the classes whose name contains this")
    parser.add_argument("--max-seconds", help="profile's time budget (default: profile's own)")
    args = parser.parse_args()
    rows = ["| class | command | exit | wall s | peak RSS MB | what it said |", "|---|---|---|---|---|---|"]
    broken = 0
    for name, generator, what, options in CLASSES:
        if args.only and args.only not in name:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            path, made = first_case(generator, what, Path(tmp))
            print(f"{name}: {made}", flush=True)
            # profile binds a symbolic chain's dims (it runs no symbolic shape).
            profile = [*PROFILE, *(["--input", "x=2x3"] if options else []),
                       *(["--max-seconds", args.max_seconds] if args.max_seconds else [])]
            for command, argv in (("count", [*options] or ["-b", "1"]), ("profile", profile)):
                result = run([command, str(path), *argv], args.cap_gb, args.timeout)
                ok = result["exit"] in (0, 1) or (result["exit"] == 2 and result["stderr_lines"] == 1)
                broken += not ok
                line = result["line"].replace(str(path), "FILE").replace("|", "\\|")[:160]
                rss = f"{result['rss_mb']:.0f}"
                rows.append(f"| {name} | {command} {' '.join(argv)} | {result['exit']} | "
                            f"{result['seconds']:.1f} | {rss} | {line} |")
                print("  " + rows[-1], flush=True)
    table = "\n".join(rows)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
