"""Crash isolation: cases run in a worker process, so a segfault or abort in native
code (or a hang) is reported as a finding about that case while the fuzzer goes on
with a fresh worker. The worker is recycled every so often to bound memory."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import traceback
from dataclasses import dataclass


@dataclass
class Outcome:
    status: str      # "pass" | "fail" | "crash" | "timeout"
    message: str = ""

    @property
    def failed(self) -> bool:
        return self.status != "pass"


def _worker(conn, cache_dir):
    if cache_dir:
        os.environ["PARITY_CACHE"] = cache_dir
    from .check import Mismatch, check_case, explain_case
    while True:
        try:
            case = conn.recv()
        except EOFError:
            return
        if case is None:
            return
        try:
            if isinstance(case, tuple):  # ("explain", case): the pipeline step behind its mismatch
                conn.send(("pass", explain_case(case[1]) or ""))
                continue
            check_case(case)
            conn.send(("pass", ""))
        except Mismatch as exc:
            conn.send(("fail", str(exc)))
        except Exception as exc:  # a harness-side error is still reported, with where it came from
            tb = traceback.extract_tb(exc.__traceback__)[-1]
            conn.send(("fail", f"{type(exc).__name__}: {exc} (at {os.path.basename(tb.filename)}:{tb.lineno})"))


def _signal_name(code: int | None) -> str:
    if code is None:
        return "unknown"
    if code < 0:
        try:
            return signal.Signals(-code).name
        except ValueError:
            return f"signal {-code}"
    return f"exit status {code}"


class IsolatedRunner:
    """Runs cases one at a time in a child process that survives nothing but is always replaced."""

    def __init__(self, timeout: float = 300.0, recycle_every: int = 300, cache_dir: str | None = None):
        self.timeout = timeout
        self.recycle_every = recycle_every
        self.cache_dir = cache_dir
        self._ctx = mp.get_context("spawn")
        self._proc = None
        self._conn = None
        self._served = 0
        self.crashes = 0

    def _start(self):
        parent, child = self._ctx.Pipe()
        self._proc = self._ctx.Process(target=_worker, args=(child, self.cache_dir), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent
        self._served = 0

    def _stop(self, kill=False):
        if self._proc is None:
            return
        try:
            if not kill:
                self._conn.send(None)
                self._proc.join(5)
        except (OSError, EOFError, BrokenPipeError):
            pass
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(5)
        self._conn.close()
        self._proc = self._conn = None

    def run(self, case: dict) -> Outcome:
        if self._proc is None or self._served >= self.recycle_every:
            self._stop()
            self._start()
        self._served += 1
        try:
            self._conn.send(case)
            if not self._conn.poll(self.timeout):
                self._stop(kill=True)
                return Outcome("timeout", f"the case did not finish within {self.timeout:.0f} s (worker killed)")
            status, message = self._conn.recv()
            return Outcome(status, message)
        except (EOFError, OSError, BrokenPipeError):
            self._proc.join(5)
            code = self._proc.exitcode
            self.crashes += 1
            self._stop(kill=True)
            return Outcome("crash", f"the compiled case crashed the process ({_signal_name(code)})")

    def explain(self, case: dict) -> str | None:
        """The CPU pipeline step that makes a failing case's values wrong (``check.explain_case``),
        in the worker like the case itself; None when there is none to name; what went wrong when
        the bisection itself failed, crashed or timed out (a configuration that crashes is a
        compiler bug too)."""
        outcome = self.run(("explain", case))
        if outcome.status == "pass":
            return outcome.message or None
        what = {"crash": "crashed", "timeout": "timed out"}.get(outcome.status, "failed")
        return f"unknown: the pass bisection {what} ({outcome.message})"

    def close(self):
        self._stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
