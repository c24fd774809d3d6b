"""The one background thread that compiles fusion's and deferred dispatch's programs (``fusion._worker``).

Jobs run in order, each in a copy of its caller's ``contextvars`` context (its modes), with a short
thread switch interval: tracing holds the GIL, and each of the caller's kernel dispatches that lets the
GIL go would otherwise wait a whole interval to get it back (see ``fusion.py``).

Example:
    >>> from fgraph.autograd._compile_worker import CompileWorker
    >>> worker = CompileWorker(quiet_wait=0.1, switch_interval=1e-4)
    >>> done = []
    >>> worker.submit(done.append, 1)
    >>> worker.wait_idle(None)
    True
    >>> done, worker.epoch()
    ([1], 1)
"""
from __future__ import annotations

import contextvars
import queue
import sys
import threading
import time
from typing import Any, Callable, Optional

__all__ = ["CompileWorker"]


class CompileWorker:
    """One daemon thread that compiles queued programs, each in its caller's copied context."""

    def __init__(self, quiet_wait: float, switch_interval: float) -> None:
        self.quiet_wait, self.switch_interval = quiet_wait, switch_interval
        self.jobs: "queue.Queue[tuple]" = queue.Queue()
        self.finished = 0  # jobs run to their end (see epoch)
        self.thread: Optional[threading.Thread] = None
        self.start_lock = threading.Lock()
        self.waited = 0.0  # seconds spent yielding to passes (not counted as compile time)
        self.deferrable = 0.0  # what the running job may still wait for passes, in seconds

    def submit(self, job: Callable[..., Any], *args: Any) -> None:
        """Run ``job(*args)`` on the worker, in a copy of the caller's context (its modes)."""
        context = contextvars.copy_context()
        with self.start_lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._main, name="fgraph-fusion-compile", daemon=True)
                self.thread.start()
        self.jobs.put((context, job, args))

    def epoch(self) -> Optional[int]:
        """``None`` while a job is queued or running; else how many have finished. Two equal epochs: no compile
        competed for the cores in between (what deferred dispatch's race needs of a timed step)."""
        return None if self.jobs.unfinished_tasks else self.finished

    def wait_idle(self, timeout: Optional[float]) -> bool:
        if timeout is None:
            self.jobs.join()
            return True
        deadline = time.monotonic() + timeout
        with self.jobs.all_tasks_done:
            while self.jobs.unfinished_tasks:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.jobs.all_tasks_done.wait(left)
        return True

    def shutdown(self) -> None:
        """At exit: drop queued jobs and let the running one finish (a daemon thread stopped inside
        XLA's compiler aborts the process)."""
        while True:
            try:
                self.jobs.get_nowait()
            except queue.Empty:
                break
            self.jobs.task_done()
        self.wait_idle(60.0)

    def _main(self) -> None:
        while True:
            context, job, args = self.jobs.get()
            # Tracing is Python holding the GIL; each time the caller's thread lets the GIL go (every
            # kernel dispatch) it would wait a whole switch interval (5 ms) to get it back. A short
            # interval while a job runs keeps the caller's node-by-node passes at their own speed.
            self.deferrable = self.quiet_wait
            interval = sys.getswitchinterval()
            sys.setswitchinterval(min(interval, self.switch_interval))
            try:
                context.run(job, *args)
            except Exception:  # pragma: no cover - jobs record their own failures
                pass
            finally:
                sys.setswitchinterval(interval)
                del context, job, args  # do not keep the graph alive until the next job
                self.finished += 1
                self.jobs.task_done()
