"""Python function calls per turn in the ``agentbus up`` process (a load-proof measure).

Wall-clock figures on a shared host are noisy; call counts are not. This starts
``agentbus up`` (one process, scripted model) under a profiler that a signal turns on and
off, warms it up, profiles ``--runs`` sequential runs, and prints the calls per run: in all,
in ``bus/tracing.py``, in the held step metrics, and the functions whose counts differ most
from a saved profile (``--against``: another build's ``--save``).

    python -m agentbus_bench.turn_calls --mode multi --accuracy accurate --runs 200 --save a.json

``--instructions`` runs the process under valgrind's callgrind instead, instrumented only
while the runs are measured, and prints the machine instructions it executed per run, all
threads and C extensions included (SQLite's, pydantic's, the packers'). Unlike CPU seconds
it does not move with the host's speed, but it still moves with the host's load: the
process's periodic work (heartbeats, claim loops, polls) is paid per second, and a busy
host stretches each run's seconds (the same build counted 12.5 M a single-mode run on a
quiet host and 14.5 M beside a local model). So it then counts ``--idle`` seconds of the
process doing nothing (about 5.5 M instructions a second here) and prints the runs' count
without that work too: the figure to compare builds by when the host is not quiet.
Under the tool a run takes about a quarter of a second.

Run it from the checkout whose build you measure (it imports that checkout's ``bus``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import inspect
import json
import os
import pstats
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agentbus_bench.deployment import wait_for_up
from agentbus_bench.turn import _one_run  # pyright: ignore[reportPrivateUsage]
from bus import embedded
from bus.settings import BusSettings
from bus.typed_redis import from_url

# Runs `agentbus up` in the child with a profiler: SIGUSR1 starts it, SIGUSR2 saves it.
_CHILD = """
import cProfile, signal, sys
prof, out = cProfile.Profile(), sys.argv.pop(1)
def start(*_): prof.enable()
def save(*_):
    prof.disable()
    prof.dump_stats(out + ".tmp")
    import os; os.replace(out + ".tmp", out)
signal.signal(signal.SIGUSR1, start)
signal.signal(signal.SIGUSR2, save)
from api.cli.main import app
sys.argv[0] = "agentbus"
app()
"""
# The same without a profiler (for CPU time): the signals only write an empty profile.
_PLAIN = _CHILD.replace("prof.enable()", "pass")


def _where(key: tuple[str, int, str]) -> str:
    filename, line, name = key
    for root in ("bus/", "agents/", "gateway/", "api/", "retrieval/"):
        at = filename.find("/" + root)
        if at >= 0 and "/.venv/" not in filename:
            return f"{filename[at + 1 :]}:{name}"
    if filename == "~":
        return re.sub(r" at 0x[0-9a-f]+", "", name)
    return f"{Path(filename).name}:{line}:{name}"


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, all its threads (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Callgrind:
    """Switches callgrind's instrumentation of a process on and off, and reads its count.

    After the runs it also counts ``idle_s`` seconds of the process doing nothing but its
    periodic work (heartbeats, claim loops, polls): ``periodic`` per second. That work is
    paid per second, so it is in a run's count for as long as the run takes, and a loaded
    host, which stretches every run under the tool, raises the count. ``net`` is the
    count without it: what the runs themselves executed, whatever the host's load.
    """

    def __init__(self, folder: Path, idle_s: float = 0.0) -> None:
        self.folder = folder
        self.idle_s = idle_s
        self.instructions = 0
        self.periodic = 0.0  # instructions per second with no run
        self.seconds = 0.0  # the measured runs' wall time

    def command(self) -> list[str]:
        if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
            raise SystemExit("--instructions needs valgrind (Debian: apt-get install valgrind)")
        out = self.folder / "callgrind.%p"
        return ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]

    def _control(self, pid: int, *args: str) -> None:
        subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True)

    def start(self, pid: int) -> None:
        self._control(pid, "--zero")
        self._control(pid, "--instr=on")

    def stop(self, pid: int) -> None:
        self._control(pid, "--instr=off")
        self._control(pid, "--dump")
        self.instructions = self._total()

    async def idle(self, pid: int) -> None:
        """Count ``idle_s`` seconds of the process's periodic work alone."""
        if self.idle_s <= 0:
            return
        for dump in self.folder.glob("callgrind.*"):  # the runs' count is read already
            dump.unlink()
        self._control(pid, "--zero")
        self._control(pid, "--instr=on")
        started = time.perf_counter()
        await asyncio.sleep(self.idle_s)
        self._control(pid, "--dump")
        seconds = time.perf_counter() - started
        self._control(pid, "--instr=off")
        self.periodic = self._total() / seconds

    def net(self, runs: int) -> float:
        """Instructions per run without the periodic work paid while the runs took."""
        return (self.instructions - self.periodic * self.seconds) / runs

    def _total(self) -> int:
        # Each dump holds the counts since the zero: the last one's totals are the latest.
        totals = [
            int(line.split()[1])
            for dump in self.folder.glob("callgrind.*")
            for line in dump.read_text().splitlines()
            if line.startswith(("totals:", "summary:"))
        ]
        return max(totals, default=0)


async def _drive(
    settings: BusSettings,
    mode: str,
    accuracy: str,
    runs: int,
    pid: int,
    callgrind: _Callgrind | None = None,
) -> tuple[float, float]:
    """Profile ``runs`` runs after a warm-up; the up process's CPU seconds and wall seconds."""
    redis = from_url(embedded.socket_url(settings.data_dir))
    try:
        for _ in range(20):  # warm-up: imports, connections, script loads, caches
            await _one_run(redis, settings, mode, accuracy)
        await asyncio.sleep(0.5)
        if callgrind is not None:
            callgrind.start(pid)
        os.kill(pid, signal.SIGUSR1)
        await asyncio.sleep(0.1)
        cpu, wall = _cpu_seconds(pid), time.perf_counter()
        for _ in range(runs):
            await _one_run(redis, settings, mode, accuracy)
        cpu, wall = _cpu_seconds(pid) - cpu, time.perf_counter() - wall
        if callgrind is not None:
            callgrind.stop(pid)
            callgrind.seconds = wall
            await callgrind.idle(pid)
        os.kill(pid, signal.SIGUSR2)
        return cpu, wall
    finally:
        await redis.aclose()


def instructions(mode: str, accuracy: str, runs: int, idle_s: float = 0.0) -> _Callgrind:
    """Machine instructions the up process executes over ``runs`` runs (callgrind, no
    profiler), then over ``idle_s`` seconds of periodic work alone."""
    with tempfile.TemporaryDirectory() as tmp:
        callgrind = _Callgrind(Path(tmp), idle_s)
        measure(mode, accuracy, runs, profile=False, callgrind=callgrind)
        return callgrind


def measure(
    mode: str,
    accuracy: str,
    runs: int,
    profile: bool = True,
    otlp: str | None = None,
    callgrind: _Callgrind | None = None,
) -> tuple[dict[str, float], float]:
    """Calls per run by function (``file:function``) in the up process, and its CPU ms per
    run (without the profiler when ``profile`` is false: then no calls are counted)."""
    with tempfile.TemporaryDirectory() as tmp:
        data, out = Path(tmp), Path(tmp) / "up.prof"
        under = callgrind.command() if callgrind is not None else []
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTBUS_", "OTEL_"))}
        env.update(
            AGENTBUS_DATA_DIR=str(data),
            AGENTBUS_LLM="scripted",
            AGENTBUS_LOG_LEVEL="warning",
            AGENTBUS_API_PORT="0",
        )
        if otlp:
            env["OTEL_EXPORTER_OTLP_ENDPOINT"] = otlp
        log = data / "up.log"
        with log.open("wb") as sink:
            up = subprocess.Popen(
                [*under, sys.executable, "-c", _CHILD if profile else _PLAIN, str(out), "up"],
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        try:
            wait_for_up(up, log, within=300 if callgrind is None else 1800)
            cpu, _wall = asyncio.run(
                _drive(BusSettings(data_dir=data), mode, accuracy, runs, up.pid, callgrind)
            )
            deadline = time.monotonic() + 60
            while not out.exists():
                if time.monotonic() > deadline:
                    raise SystemExit("no profile saved")
                time.sleep(0.1)
            # pstats keeps the raw table in an attribute its stubs do not declare.
            stats: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = (
                vars(pstats.Stats(str(out)))["stats"] if profile else {}
            )
        finally:
            up.send_signal(signal.SIGTERM)
            up.wait(30)
    per_run: dict[str, float] = {}
    for key, (_cc, nc, *_rest) in stats.items():
        name = _where(key)
        per_run[name] = per_run.get(name, 0.0) + nc / runs
    return per_run, cpu * 1000 / runs


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--mode", default="multi")
    p.add_argument("--accuracy", default="accurate")
    p.add_argument("--runs", type=int, default=200)
    p.add_argument("--save", type=Path, help="write the per-function counts here (JSON)")
    p.add_argument("--against", type=Path, help="a saved profile to compare with")
    p.add_argument("--cpu", action="store_true", help="no profiler: the CPU ms per run only")
    p.add_argument(
        "--instructions",
        action="store_true",
        help="no profiler: machine instructions per run, under valgrind's callgrind",
    )
    p.add_argument(
        "--idle",
        type=float,
        default=5.0,
        help="with --instructions: seconds of periodic work counted alone after the runs "
        "(0: none), to give the runs' count without it",
    )
    p.add_argument(
        "--traced", action="store_true", help="tracing on, to a local OTLP receiver (this process)"
    )
    a = p.parse_args()
    if a.instructions:
        counted = instructions(a.mode, a.accuracy, a.runs, a.idle)
        print(f"up process instructions per run: {counted.instructions / a.runs / 1e6:.2f} M")
        if a.idle > 0:
            print(
                f"  periodic work alone: {counted.periodic / 1e6:.2f} M a second; the runs "
                f"took {counted.seconds / a.runs * 1000:.0f} ms each; without it: "
                f"{counted.net(a.runs) / 1e6:.2f} M per run"
            )
        return
    if a.traced:
        from agentbus_bench.otlp_receiver import otlp_receiver  # not in builds before tracing

        with otlp_receiver() as receiver:
            per_run, cpu_ms = measure(a.mode, a.accuracy, a.runs, not a.cpu, receiver.url)
            spans = len(receiver.spans)
        print(f"spans received per run (warm-up included): {spans / (a.runs + 20):.1f}")
    else:
        per_run, cpu_ms = measure(a.mode, a.accuracy, a.runs, profile=not a.cpu)
    if a.cpu:
        print(f"up process CPU per run: {cpu_ms:.2f} ms")
        return
    if a.save:
        a.save.write_text(json.dumps(per_run))
    tracing = sum(v for k, v in per_run.items() if k.startswith("bus/tracing.py"))
    held = sum(v for k, v in per_run.items() if k.startswith("bus/runtime/metrics.py"))
    null_at = {
        f"contextlib.py:{inspect.getsourcelines(f)[1]}:{f.__name__}"
        for f in (vars(contextlib.nullcontext)[name] for name in ("__enter__", "__exit__"))
    }
    null = sum(v for k, v in per_run.items() if k in null_at)
    print(f"calls per run: {sum(per_run.values()):.1f}")
    print(f"  in bus/tracing.py: {tracing:.1f}; nullcontext enter/exit: {null:.1f}")
    print(f"  in bus/runtime/metrics.py (held step metrics): {held:.1f}")
    if a.against:
        before: dict[str, float] = json.loads(a.against.read_text())
        print(f"calls per run in {a.against}: {sum(before.values()):.1f}")
        names = set(before) | set(per_run)
        diff = sorted(
            ((per_run.get(n, 0.0) - before.get(n, 0.0), n) for n in names),
            key=lambda d: -abs(d[0]),
        )
        for d, n in diff[:40]:
            if abs(d) >= 0.5:
                print(f"  {d:+8.1f}  {n}")


if __name__ == "__main__":
    main()
