"""The long fuzz run: thousands of mutated seed models and generated hostile ones through the API
and the command line, each in a child process capped in time and memory, counted per outcome and
per command.

    python tools/fuzz.py --cases 30000 --jobs 2          # counts per outcome, failure signatures
    python tools/fuzz.py --replay cnn_dynamo:1234 -o case.onnx   # one case again, its file kept
    python tools/fuzz.py --code /path/to/other/checkout  # the same cases on other code (before)
    python tools/fuzz.py --merge runs/*.json             # a long run's slices, summed (Markdown)

Outcomes: ok; clean error (OnnxFlopsError, or the CLI exits 2 with one line); traceback (any other
exception, or a CLI exit that is neither); negative count; counted invalid (counted, though
onnxruntime refuses to load the model, oracle.check_runtime); blow-up (MemoryError, or more memory
than --memory-mb above the parent, onnxruntime's excluded); hang (over --timeout CPU seconds, three times that for an
`llm` case, which may export a model; or ten times that on the wall clock); crash (killed by a
signal). The run ends with where the cases' time went, per command and phase (print_costs).
The mutations and the property are those of the property tests: tests/fuzz/mutator.py, oracle.py;
the generators (function bombs, symbolic chains, trip-count products, large external data,
invalid graphs, function opsets, framework files, llm configs, factory specs) are
tests/fuzz/generators.py.
An ONNX case N runs `count` with one of several option sets, `compare`, `report` or `profile`, by
N (a generator that needs options, such as --symbolic, sets them); one in FAULT_EVERY runs under
a fault of its environment (an unwritable or missing cache or output folder, a full disk, a long
or odd path: environment_fault). The other input kinds run `count`, `convert`, `profile` or `llm`.

Speed: ONNX cases are forked from this process, which imports no framework (a fork copies the
page tables of some 100 MB); the other kinds from a process that imported torch, transformers,
TensorFlow and Keras once (Frameworks). onnxruntime's verdict runs in the case's own process
after the case has sent its outcome, and is kept by the model's bytes (VERDICTS); a model it
would take minutes to inline (ORACLE_MAX_INLINED_NODES) is not loaded: no verdict, tallied.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import hashlib
import json
import os
import random
import re
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "fuzz")]
if "--code" in sys.argv[:-1]:  # onnxflops from another checkout: before any module imports it
    sys.path.insert(0, str(Path(sys.argv[sys.argv.index("--code") + 1]).resolve()))

import generators  # noqa: E402
import mutator  # noqa: E402
import oracle  # noqa: E402

# (label, command, options) by case number; report's page goes to the case's folder (REPORT).
REPORT = "report.html"
# profile's and report's budget in the cases: what it would let run longer, or need more memory
# than a blow-up (half of the default --memory-mb), is refused in one line (the flags a user
# raises), not run past the case's CPU seconds or memory.
BUDGET = ("--max-seconds", "10", "--max-memory-gb", "0.5")
COMMANDS = (("count", "count", ("-b", "2")),
            ("count --by layer", "count", ("-b", "2", "--by", "layer")),
            ("count --json", "count", ("-b", "2", "--json")),
            ("count --csv", "count", ("-b", "3", "--by", "node", "--csv")),
            ("count --markdown", "count", ("-b", "1", "--markdown", "--by", "category")),
            ("count --training", "count", ("-b", "2", "--training")),
            ("count --symbolic", "count", ("--symbolic", "--json")),
            ("compare", "compare", ("-b", "2")),
            ("report", "report", ("-b", "2", "--runs", "1", "--warmup", "0", "--profile-runs",
                                  "1", "--no-ceilings", *BUDGET, "-o", REPORT)),
            ("profile", "profile", ("-b", "2", "--runs", "1", "--warmup", "0", "--profile-runs",
                                    "1", "--no-ceilings", "--opt-level", "disable", *BUDGET)))
CLI_OPTIONS = tuple(options for _, command, options in COMMANDS if command == "count")


def make_case(seeds: dict[str, bytes], name: str, case: int, folder: Path
              ) -> tuple[bytes, list[str], tuple | None]:
    """The case's model bytes, what made them, and the count options a generator asks for."""
    if name in generators.GENERATORS:
        data, what, options = generators.GENERATORS[name](random.Random(f"{name}:{case}"), folder)
        return data, [what], options or None
    data, what = mutator.case_bytes(seeds, name, case)
    return data, what, None


def command_of(case: int, options: tuple | None) -> tuple[str, str, tuple]:
    """The command an ONNX case runs: drawn by its number, apart from the seed it mutates (by
    case % seeds), so that every seed and generator meets every command."""
    if options:
        return f"count {' '.join(options)}", "count", options
    return COMMANDS[random.Random(f"command:{case}").randrange(len(COMMANDS))]


def label_of(seed: str, case: int, options: tuple | dict | None) -> str:
    """The command a case runs, as the counts per command name it (before any fault)."""
    if isinstance(options, dict) or seed in generators.INVOCATIONS:
        return f"{seed} cases"
    return command_of(case, options)[0]


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_case(data: bytes | None, case: int, folder: Path, options: tuple | dict | None = None,
             timeout: int = 20, send=None) -> dict:
    """The case's outcome (the API's, then the command's, then the runtime oracle's where it
    counted), in `folder`, which it removes. `options`: count options, or a generator's
    Invocation (another input kind, written in `folder`); an ONNX case whose number says so runs
    under an environment fault (environment_fault). `send`, in a case's process: called with
    the count's outcome before onnxruntime runs in this process under ORACLE_CPU_SECONDS of
    its own (onnxruntime may take the process down: the count's outcome is in by then)."""
    if isinstance(options, dict):
        invocation = options
        label = f"{invocation['command']} ({invocation['kind']})"
    else:
        label, command, argv = command_of(case, options)
        invocation = {"command": command, "model": f"case{case}.onnx", "argv": argv, "api": True,
                      "env": {}, "runtime": True}
        (folder / invocation["model"]).write_bytes(data)
        fault = environment_fault(case, folder, invocation)
        if fault:
            label = f"{invocation['command']} ({fault})"
    model = invocation["model"]
    # Paths relative to the case's folder, as a user types them (a name may start with a dash).
    path = model[len("spec:"):] if model.startswith("spec:") else model
    argv = invocation["argv"]
    os.chdir(folder)
    os.environ.update(invocation["env"])
    if invocation.get("file_size"):  # a full disk: writes past the size fail (EFBIG)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (invocation["file_size"],) * 2)
    if model.startswith("spec:"):
        sys.path.insert(0, str(folder))
    phases = Phases()
    result = {"outcome": oracle.OK, "where": "", "command": label, "seconds": phases.seconds}
    try:
        if invocation["api"]:
            with phases("api"):
                result["outcome"], result["where"] = oracle.check_api(
                    path, **({"symbolic": True, "batch": None} if "--symbolic" in argv else {}))
        if result["outcome"] in (oracle.OK, oracle.CLEAN):
            with phases("cli"):
                result["outcome"], result["where"] = oracle.check_cli(
                    path, *argv, command=invocation["command"])
        # The count's own peak: onnxruntime's memory below is the oracle's, not the count's.
        result["rss_mb"] = _rss_mb()
        if result["outcome"] == oracle.OK and invocation["runtime"] and Path(path).is_file():
            key = _model_key(Path(path))
            if key not in VERDICTS:
                if send:
                    send({**result, "oracle_key": key})
                with phases("oracle"):
                    VERDICTS[key] = runtime_verdict(Path(path).resolve(), timeout,
                                                    capped=send is not None)
                result["verdict"] = [key, *VERDICTS[key]]
            result["outcome"], result["where"] = VERDICTS[key]
    finally:
        os.chdir(folder.parent)
        shutil.rmtree(folder, ignore_errors=True)
    return result


# onnxruntime's verdicts (outcome, where) by _model_key, kept by the parent from its children's
# results: the children it forks later find them (a generator makes the same model many times,
# and a function bomb costs the oracle its 5 CPU seconds each time).
VERDICTS: dict[str, tuple[str, str]] = {}


def _model_key(path: Path) -> str:
    """The model's bytes and the names and sizes of the files beside it (its external data)."""
    digest = hashlib.sha256(path.read_bytes())
    for other in sorted(path.parent.iterdir()):
        if other != path and other.is_file():
            digest.update(f"\0{other.name}\0{other.stat().st_size}".encode())
    return digest.hexdigest()


class Phases:
    """CPU seconds (this process's and its waited-for children's) spent in each named phase of
    a case: where a case's time goes (the run's table "CPU seconds per case")."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @staticmethod
    def cpu() -> float:
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return Phases.own_cpu() + children.ru_utime + children.ru_stime

    @staticmethod
    def own_cpu() -> float:
        """This process's CPU seconds, as RLIMIT_CPU counts them."""
        own = resource.getrusage(resource.RUSAGE_SELF)
        return own.ru_utime + own.ru_stime

    @contextlib.contextmanager
    def __call__(self, name: str):
        start = self.cpu()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + self.cpu() - start


ORACLE_CPU_SECONDS = 5
# An `llm` case (a model built and exported by torch) may take this many times --timeout.
CONVERSION_CPU_FACTOR = 3
# A case may take this many times --timeout on the wall clock (its CPU seconds are --timeout).
WALL_PER_CPU = 10
# One ONNX case in FAULT_EVERY runs under a fault of its environment, by its number.
FAULT_EVERY = 7
_FAULTS = ("cache unwritable", "cache is a file", "output folder missing", "output unwritable",
           "full disk", "long name", "long path", "odd name", "dash name")


def environment_fault(case: int, folder: Path, invocation: dict) -> str | None:
    """Set `invocation` (an ONNX case's, its file written in `folder`) to run under a fault of
    its environment where the case's number says so: the fault's name, or None."""
    if case % FAULT_EVERY != 3:
        return None
    fault = _FAULTS[(case // FAULT_EVERY) % len(_FAULTS)]
    model = invocation["model"]
    writes = ("report", ("-b", "2", "--runs", "1", "--warmup", "0", "--profile-runs", "1",
                         "--no-ceilings", *BUDGET, "-o"))
    if fault.startswith("cache"):
        cache = folder / "cache"
        if fault == "cache is a file":
            cache.write_text("")
            cache = cache / "sub"
        else:  # root writes any folder of its own: /proc takes no new folder, whoever asks
            cache = Path("/proc/onnxflops-fuzz-cache")
        invocation.update(command="profile", env={"ONNXFLOPS_CACHE_DIR": str(cache)},
                          argv=("-b", "2", "--runs", "1", "--warmup", "0", "--profile-runs", "1",
                                "--quick", *BUDGET))
    elif fault == "output folder missing":
        invocation.update(command="count", argv=("-b", "2", "--html",
                                                 str(folder / "no" / "such" / "page.html")))
    elif fault == "output unwritable":
        invocation.update(command=writes[0], argv=(*writes[1], "/proc/onnxflops-fuzz.html"))
    elif fault == "full disk":
        invocation.update(command=writes[0], argv=(*writes[1], REPORT), file_size=2048)
    elif fault == "long name":
        invocation["model"] = "n" * 5000 + ".onnx"
    elif fault == "long path":
        invocation["model"] = "/".join(["d" * 200] * 30) + "/" + model
    else:
        odd = ("-model.onnx" if fault == "dash name" else "mödel \n\t%s;$(x).onnx")
        (folder / model).rename(folder / odd)
        invocation["model"] = odd
    return fault


# onnxruntime inlines local functions in time that grows as the square of the nodes it makes:
# 16,384 took 6.6 CPU s here and 32,768 took 25.6, five times ORACLE_CPU_SECONDS, past which
# it gives no verdict. Beyond this it is not started: the verdict would be the same none.
ORACLE_MAX_INLINED_NODES = 32_768
NO_VERDICT = "no verdict: "  # how an OK verdict that is none begins (tallied per reason)


def runtime_verdict(path: Path, timeout: int, capped: bool = True) -> tuple[str, str]:
    """oracle.check_runtime in this process, `capped` to ORACLE_CPU_SECONDS of CPU beyond what
    the process has spent (the kernel ends it past them: the parent reads no verdict). A model
    onnxruntime would take minutes to load (a function bomb it inlines) gives no verdict, and
    one past ORACLE_MAX_INLINED_NODES is not loaded at all."""
    inlined = oracle.inlined_nodes(path)
    if inlined > ORACLE_MAX_INLINED_NODES:
        return oracle.OK, f"{NO_VERDICT}onnxruntime would inline {inlined} nodes"
    if capped:
        signal.alarm(timeout * WALL_PER_CPU)  # the count is done: this time is the oracle's
        spent = Phases.own_cpu()
        hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
        soft = int(spent) + 1 + min(timeout, ORACLE_CPU_SECONDS)
        resource.setrlimit(resource.RLIMIT_CPU, (soft if hard == resource.RLIM_INFINITY
                                                 else min(soft, hard), hard))
    try:
        outcome, where = oracle.check_runtime(path)
    except BaseException as e:  # noqa: BLE001 - the oracle's own trouble is no verdict
        return oracle.OK, f"{NO_VERDICT}oracle raised {type(e).__name__}"
    if outcome == oracle.OK and where:
        where = NO_VERDICT + where
    return outcome, where


def _child(seeds: dict[str, bytes], name: str, case: int, workdir: Path, write_fd: int,
           memory_mb: int, timeout: int) -> None:
    limit = int(_vm_size() + memory_mb * 2**20)
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    if hard != resource.RLIM_INFINITY:  # under a cap of its own (ulimit -v): never raised
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # A hang is time spent computing: CPU seconds, which a loaded machine does not inflate (a
    # shared machine may give a case a tenth of a core); the wall clock only catches one asleep.
    resource.setrlimit(resource.RLIMIT_CPU, (timeout, CONVERSION_CPU_FACTOR * timeout + 5))
    signal.alarm(timeout * WALL_PER_CPU)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    folder = workdir / f"case{case}"
    folder.mkdir()
    label = "?"
    modules = set(sys.modules)
    made, what = Phases(), []

    def send(result: dict) -> None:  # one JSON line: the case's outcome, the oracle's after it
        result = {**result, "seconds": {**result.get("seconds", {}), **made.seconds},
                  "what": "; ".join(what),
                  # What the child imported that the parent had not: imported again per case.
                  "imported": sorted({m.split(".")[0] for m in set(sys.modules) - modules})}
        os.write(write_fd, (json.dumps(result) + "\n").encode())
    try:
        with made("make"):
            data, what[:], options = make_case(seeds, name, case, folder)
        if isinstance(options, dict) and options["command"] == "llm":
            # A config that builds is a model exported by torch (20-30 CPU s for a small Llama
            # on a loaded machine): bounded, but no hang at 20.
            resource.setrlimit(resource.RLIMIT_CPU, (CONVERSION_CPU_FACTOR * timeout,
                                                     CONVERSION_CPU_FACTOR * timeout + 5))
            signal.alarm(CONVERSION_CPU_FACTOR * timeout * WALL_PER_CPU)
        label = label_of(name, case, options)
        result = run_case(data, case, folder, options, timeout, send)
    except MemoryError:
        result = {"outcome": oracle.BLOW_UP, "where": "MemoryError in the harness",
                  "command": label}
    except BaseException as e:  # noqa: BLE001 - the harness reports, never dies
        result = {"outcome": oracle.TRACEBACK, "where": "harness " + oracle.signature(e),
                  "command": label}
    send(result)
    os._exit(0)


def _vm_size() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def _start(seeds: dict[str, bytes], name: str, case: int, workdir: Path, memory_mb: int,
           timeout: int) -> tuple[int, int, float]:
    """Fork case `name:case` of this process: (its pid, the read end of its results, the
    seconds the fork took)."""
    read_fd, write_fd = os.pipe()
    forked = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _child(seeds, name, case, workdir, write_fd, memory_mb, timeout)
    os.close(write_fd)
    return pid, read_fd, time.monotonic() - forked


def _finish(pid: int, read_fd: int, fork_seconds: float, base_mb: float) -> dict:
    """Wait for case process `pid` and read what it sent: its exit status, CPU seconds, peak
    memory in MB, the lines it wrote (JSON), the fork's seconds and the forking process's peak
    memory, `base_mb`."""
    _, status, usage = os.wait4(pid, 0)
    raw = b""
    while select.select([read_fd], [], [], 0)[0]:
        chunk = os.read(read_fd, 1 << 16)
        if not chunk:
            break
        raw += chunk
    os.close(read_fd)
    return {"status": status, "cpu": usage.ru_utime + usage.ru_stime,
            "maxrss": usage.ru_maxrss / 1024, "lines": raw.decode(errors="replace"),
            "fork": fork_seconds, "base": base_mb}


class Frameworks:
    """A process that imports the frameworks once (the `llm` path, then TensorFlow and Keras:
    warm_frameworks) and forks the cases of the other input kinds (generators.INVOCATIONS),
    one at a time, on request. The run's own process stays light, and forking it for an ONNX
    case copies the page tables of some 100 MB, not of 1.1 GB (12 ms, not 80, here)."""

    def __init__(self, seeds: dict[str, bytes], workdir: Path, memory_mb: int, timeout: int):
        request_r, request_w = os.pipe()
        reply_r, reply_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(request_w)
            os.close(reply_r)
            warm_frameworks()
            base_mb = _rss_mb()
            os.write(reply_w, b"ready\n")
            for line in os.fdopen(request_r):
                name, case = json.loads(line)
                finished = _finish(*_start(seeds, name, case, workdir, memory_mb, timeout),
                                   base_mb)
                os.write(reply_w, (json.dumps(finished) + "\n").encode())
            os._exit(0)
        os.close(request_r)
        os.close(reply_w)
        self.requests = os.fdopen(request_w, "w")
        self.replies = os.fdopen(reply_r)
        self.busy = False
        if self.replies.readline() != "ready\n":
            raise SystemExit("the harness's Frameworks process died warming up")

    def fileno(self) -> int:
        return self.replies.fileno()

    def submit(self, name: str, case: int) -> None:
        self.requests.write(json.dumps([name, case]) + "\n")
        self.requests.flush()
        self.busy = True

    def reply(self) -> dict | None:
        """The finished case's (as _finish gives it), or None where the process has died."""
        self.busy = False
        line = self.replies.readline()
        return json.loads(line) if line else None

    def close(self) -> None:
        self.requests.close()
        os.waitpid(self.pid, 0)


def judge(finished: dict, timeout: int, memory_mb: int) -> dict:
    """A finished case's result: the last line it sent, or the outcome its end tells (a hang
    past its CPU seconds or the wall clock, a crash by a signal); a case that sent its outcome
    and was ended while onnxruntime loaded its model gets no verdict from it (NO_VERDICT); a
    count that grew past half of --memory-mb is a blow-up."""
    status = finished["status"]
    try:
        lines = [json.loads(line) for line in finished["lines"].splitlines() if line.strip()]
    except json.JSONDecodeError:
        lines = []
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGXCPU:
        end = oracle.HANG, f"over {timeout} CPU s"
    elif os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM:
        end = oracle.HANG, f"over {timeout * WALL_PER_CPU} s, asleep or starved"
    elif os.WIFSIGNALED(status):
        end = oracle.CRASH, f"signal {signal.Signals(os.WTERMSIG(status)).name}"
    else:
        end = oracle.CRASH, f"exit {os.WEXITSTATUS(status)}"
    if not lines:
        result = {"outcome": end[0], "where": end[1]}
    else:
        result = lines[-1]
        if "oracle_key" in result:  # ended while onnxruntime loaded the model
            ended = {signal.SIGXCPU: f"over {ORACLE_CPU_SECONDS} CPU s",
                     signal.SIGALRM: f"over {timeout * WALL_PER_CPU} s"}.get(
                         os.WIFSIGNALED(status) and os.WTERMSIG(status), f"ended: {end[1]}")
            result["where"] = NO_VERDICT + "onnxruntime " + ended
            result["verdict"] = [result.pop("oracle_key"), oracle.OK, result["where"]]
    growth = result.get("rss_mb", finished["maxrss"]) - finished["base"]
    if result["outcome"] in (oracle.OK, oracle.CLEAN) and growth > memory_mb / 2:
        result = {**result, "outcome": oracle.BLOW_UP, "where": f"{growth:.0f} MB"}
    return result


def describe(seeds: dict[str, bytes], seed: str, case: int) -> str:
    """What made a case, made again (the case process sends it, unless it died first)."""
    if seed in generators.GENERATORS:
        return "generated"
    return "; ".join(mutator.case_bytes(seeds, seed, case)[1])


def fuzz(first: int, cases: int, jobs: int, memory_mb: int, timeout: int,
         seeds: dict[str, bytes], names: list[str], seconds: float | None = None,
         json_path: str | None = None, frameworks: bool = True
         ) -> tuple[collections.Counter, dict, dict, dict]:
    counts: collections.Counter = collections.Counter()
    by_command: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    failures: dict[str, list] = {}
    # Where the time goes, per command: seconds summed over its cases (PHASES).
    costs: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    imported: collections.Counter = collections.Counter()  # top-level modules a child imported
    no_verdict: collections.Counter = collections.Counter()  # why onnxruntime gave none
    slowest: list[tuple] = []  # (wall seconds, case, command, phases) of the SLOWEST slowest
    running: dict[int, tuple] = {}  # read fd (or the Frameworks') -> (pid, case id, started, fork)
    base_mb = _rss_mb()
    pending = iter(range(first, first + cases))
    waiting: collections.deque = collections.deque()  # cases of other kinds, for Frameworks
    with tempfile.TemporaryDirectory(prefix="onnxflops-fuzz-") as tmp:
        workdir = Path(tmp)
        other_kinds = Frameworks(seeds, workdir, memory_mb, timeout) if frameworks else None
        while True:
            while len(running) < jobs:
                if waiting and not other_kinds.busy:
                    case = waiting.popleft()
                elif waiting:
                    break
                else:
                    case = None if seconds and time.monotonic() - START > seconds \
                        else next(pending, None)
                    if case is None:
                        break
                seed = names[case % len(names)]
                started = time.monotonic()
                if seed in generators.INVOCATIONS and other_kinds:
                    if other_kinds.busy:
                        waiting.append(case)
                        continue
                    other_kinds.submit(seed, case)
                    running[other_kinds.fileno()] = (None, f"{seed}:{case}", started, 0.0)
                else:
                    pid, read_fd, fork_seconds = _start(seeds, seed, case, workdir, memory_mb,
                                                        timeout)
                    running[read_fd] = (pid, f"{seed}:{case}", started, fork_seconds)
            if not running:
                break
            fd = select.select(list(running), [], [])[0][0]
            pid, case_id, started, fork_seconds = running.pop(fd)
            if pid is None:
                finished = other_kinds.reply()
                if finished is None:  # it died: say so, and start another
                    finished = {"status": 0, "cpu": 0.0, "maxrss": 0.0, "base": 0.0, "fork": 0.0,
                                "lines": json.dumps({"outcome": oracle.CRASH,
                                                     "where": "the harness's Frameworks died"})}
                    other_kinds = Frameworks(seeds, workdir, memory_mb, timeout)
            else:
                finished = _finish(pid, fd, fork_seconds, base_mb)
            result = judge(finished, timeout, memory_mb)
            seed = case_id.rsplit(":", 1)[0]
            case_number = int(case_id.rsplit(":", 1)[1])
            command = result.get("command") or label_of(seed, case_number,
                                                        generators.OPTIONS.get(seed))
            if result.get("verdict"):
                key, *verdict = result["verdict"]
                VERDICTS[key] = tuple(verdict)
            if result["outcome"] == oracle.OK and result.get("where", "").startswith(NO_VERDICT):
                no_verdict[re.sub(r"\d+", "N", result["where"][len(NO_VERDICT):])] += 1
            counts[result["outcome"]] += 1
            cost = costs[command]
            cost["cases"] += 1
            wall = time.monotonic() - started
            cost["wall"] += wall
            slowest.append((round(wall, 2), case_id, command, result.get("seconds", {})))
            slowest = sorted(slowest, reverse=True)[:SLOWEST]
            cost["fork"] += finished["fork"]
            cost["child cpu"] += finished["cpu"]
            for phase, spent in result.get("seconds", {}).items():
                cost[phase] += spent
            for module in result.get("imported", ()):
                imported[module] += 1
            by_command[command][result["outcome"]] += 1
            if result["outcome"] in oracle.FAILURES:
                key = f"{result['outcome']}: {result['where']}"
                what = result.get("what") or describe(seeds, seed, case_number)
                failures.setdefault(key, []).append(f"{case_id} ({what})")
            done = sum(counts.values())
            if done % 200 == 0:
                print(f"  {done} cases, {time.monotonic() - START:.0f} s: {dict(counts)}",
                      file=sys.stderr, flush=True)
                if json_path:  # a long run's counts so far, should it be stopped
                    write_json(json_path, counts, by_command, failures,
                               {"costs": costs, "imported": imported, "slowest": slowest,
                                "no verdict": no_verdict})
        if other_kinds:
            other_kinds.close()
    return counts, failures, by_command, {"costs": costs, "imported": imported,
                                          "slowest": slowest, "no verdict": no_verdict}


START = time.monotonic()
# The phases of a case, as the costs table prints them: wall seconds from fork to reaping, the
# parent's fork call, the child's CPU seconds, then the CPU seconds of each phase (making the
# case, the API check, the CLI check, the onnxruntime oracle's process).
SLOWEST = 10
PHASES = ("wall", "fork", "child cpu", "make", "api", "cli", "oracle")


def write_json(path: str, counts: collections.Counter, by_command: dict, failures: dict,
               profile: dict, done: bool = False) -> None:
    """The run's counts so far; `done`: the run ended (a slice whose file says so is complete)."""
    Path(path).write_text(json.dumps({"cases": sum(counts.values()),
                                      "seconds": round(time.monotonic() - START), "done": done,
                                      "counts": counts, "by_command": by_command,
                                      "failures": failures, **profile}, indent=1))


def print_costs(costs: dict, imported: collections.Counter) -> None:
    """Seconds per case of each phase, per command (wall and fork on the clock, the rest CPU)."""
    print("seconds per case: cases, " + ", ".join(PHASES))
    for command, cost in sorted(costs.items()):
        n = cost["cases"]
        print(f"  {command:32} {n:6} " + " ".join(f"{cost[p] / n:8.3f}" for p in PHASES))
    if imported:
        print("imported by children (cases): " + ", ".join(
            f"{m} {k}" for m, k in imported.most_common(15)))


def warm_up(seeds: dict[str, bytes]) -> None:
    """Import here, once, what an ONNX case imports lazily (a count, a profile, the oracle), so
    each case forks warm instead of importing it again under its caps."""
    import onnxflops.api  # noqa: F401
    import onnxflops.commands.count  # noqa: F401
    import onnxruntime  # noqa: F401 - the oracle's
    import sympy  # noqa: F401 - a count of symbolic dims' (a second a case imported it)
    with tempfile.TemporaryDirectory() as tmp:
        datas = list(seeds.values())
        for case in range(max(len(COMMANDS), len(datas))):  # every seed, and every command
            folder = Path(tmp) / f"warm{case}"
            folder.mkdir()
            run_case(datas[case % len(datas)], case, folder)
    os.environ.pop("ONNXFLOPS_CACHE_DIR", None)  # an environment fault's, set in this process


def warm_frameworks() -> None:
    """Import, once, the frameworks the other input kinds load (a minute), in the process that
    forks their cases (Frameworks). The `llm` path (transformers, which imports torch._dynamo
    and so triton) runs before TensorFlow is imported: triton imported after TensorFlow
    segfaults, which killed every `llm` case that got as far as transformers."""
    import torch  # noqa: F401
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "warm"
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps(generators.LLAMA))
        run_case(None, 0, folder, generators.Invocation(
            "llm", "config.json", "--prompt", "8", "--generate", "1", "--hardware", "h100",
            kind="config.json", api=False))
    import tensorflow  # noqa: F401
    import keras  # noqa: F401


def merge(paths: list[str]) -> dict:
    """The runs' JSON files (a long run's slices) summed: cases, seconds, counts per outcome and
    per command, failures, onnxruntime's missing verdicts."""
    total = {"cases": 0, "seconds": 0, "counts": collections.Counter(), "failures": {},
             "by_command": collections.defaultdict(collections.Counter),
             "no verdict": collections.Counter(), "runs": []}
    for path in paths:
        run = json.loads(Path(path).read_text())
        total["runs"].append({"file": Path(path).name, "cases": run["cases"],
                              "seconds": run["seconds"]})
        total["cases"] += run["cases"]
        total["seconds"] += run["seconds"]
        total["counts"].update(run["counts"])
        total["no verdict"].update(run.get("no verdict", {}))
        for command, counted in run["by_command"].items():
            total["by_command"][command].update(counted)
        for key, cases in run["failures"].items():
            total["failures"].setdefault(key, []).extend(cases)
    return total


def summary_markdown(total: dict) -> str:
    """Counts per outcome, then per command (each ONNX command, each under a fault of its
    environment, each other input kind), as Markdown tables."""
    rows = [f"{total['cases']:,} cases in {total['seconds']:,} s ({len(total['runs'])} runs)", "",
            "| outcome | cases |", "|---|---:|"]
    rows += [f"| {outcome} | {total['counts'].get(outcome, 0):,} |" for outcome in oracle.OUTCOMES]
    rows += ["", "| command | " + " | ".join(oracle.OUTCOMES) + " |",
             "|---|" + "---:|" * len(oracle.OUTCOMES)]
    for command, counted in sorted(total["by_command"].items()):
        rows.append(f"| {command} | " + " | ".join(f"{counted.get(o, 0):,}"
                                                   for o in oracle.OUTCOMES) + " |")
    if total["no verdict"]:
        rows += ["", "onnxruntime gave no verdict on counted cases: " + ", ".join(
            f"{reason} ({n})" for reason, n in total["no verdict"].most_common())]
    for key, cases in sorted(total["failures"].items(), key=lambda kv: -len(kv[1])):
        rows.append(f"- {len(cases)} × {key}, e.g. {cases[0]}")
    return "\n".join(rows) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--first", type=int, default=0, help="first case number")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--memory-mb", type=int, default=1024,
                        help="address space a case may add to the parent's (default 1024)")
    parser.add_argument("--timeout", type=int, default=20,
                        help="CPU seconds per case (default 20; ten times that on the wall clock)")
    parser.add_argument("--replay", metavar="SEED:CASE", help="run one case in this process")
    parser.add_argument("-o", "--output", help="with --replay: where to write the case's file")
    parser.add_argument("--json", help="write counts and failures to this file")
    parser.add_argument("--seconds", type=float,
                        help="start no case after this many seconds (the run ends soon after)")
    parser.add_argument("--code", metavar="DIR",
                        help="import onnxflops from this checkout (main's code, for a before run)")
    parser.add_argument("--no-generators", action="store_true",
                        help="mutated seeds only, as before the generators")
    parser.add_argument("--merge", nargs="+", metavar="JSON",
                        help="sum these runs' JSON files (a long run's slices), print Markdown")
    args = parser.parse_args()
    if args.merge:
        total = merge(args.merge)
        print(summary_markdown(total), end="")
        if args.json:
            Path(args.json).write_text(json.dumps(total, indent=1))
        return 1 if any(total["counts"].get(o) for o in oracle.FAILURES) else 0
    seeds = mutator.load_seeds()
    names = sorted(seeds) + ([] if args.no_generators else sorted(generators.GENERATORS))
    if args.replay:
        seed, case = args.replay.rsplit(":", 1)
        folder = Path(tempfile.mkdtemp())
        data, what, options = make_case(seeds, seed, int(case), folder)
        print("made:", "; ".join(what))
        if args.output and data is not None:
            Path(args.output).write_bytes(data)
            print("file:", args.output)
        print(run_case(data, int(case), folder, options, args.timeout))
        return 0
    if args.json:  # the cases change the working folder
        args.json = str(Path(args.json).resolve())
    here = Path.cwd()
    warm_up(seeds)
    os.chdir(here)
    import onnxflops
    print("onnxflops from", Path(onnxflops.__file__).parent, file=sys.stderr)
    counts, failures, by_command, profile = fuzz(args.first, args.cases, args.jobs,
                                                 args.memory_mb, args.timeout, seeds, names,
                                                 args.seconds, args.json,
                                                 frameworks=not args.no_generators)
    print(f"{sum(counts.values())} cases in {time.monotonic() - START:.0f} s")
    for outcome in oracle.OUTCOMES:
        print(f"  {outcome:15} {counts[outcome]}")
    print("by command: " + ", ".join(oracle.OUTCOMES))
    for command, counted in sorted(by_command.items()):
        print(f"  {command:22} " + " ".join(f"{counted[o]:6}" for o in oracle.OUTCOMES))
    print(f"{len(failures)} failure signatures:")
    for key, cases in sorted(failures.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(cases):6}  {key}\n          e.g. {cases[0]}")
    print_costs(profile["costs"], profile["imported"])
    print("onnxruntime gave no verdict (counted cases): " + (", ".join(
        f"{reason} {n}" for reason, n in profile["no verdict"].most_common()) or "none"))
    print("slowest cases (wall s): " + ", ".join(f"{case} {wall}" for wall, case, *_
                                                 in profile["slowest"]))
    if args.json:
        write_json(args.json, counts, by_command, failures, profile, done=True)
    return 1 if any(counts[o] for o in oracle.FAILURES) else 0


if __name__ == "__main__":
    sys.exit(main())
