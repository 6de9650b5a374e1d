"""Requests run outside the calling process: the app's simulations on the Dask cluster the sweeps use.

One :class:`Executor` serves a whole process (:func:`shared`: the Streamlit app's sessions all use it): it submits a
request (a picklable frozen dataclass, :class:`~planner.tasks.base.Request`) and returns a :class:`Job` at once;
the caller polls the job for progress and its result, and cancels it when its user leaves or asks to.

Where the runs go (:meth:`Executor.from_environment`, ``FEDPLAN_SCHEDULER``):

* unset or ``local`` (the default): a ``distributed.LocalCluster`` of one single-threaded worker process per core,
  made by the sweep's :func:`~planner.simulate.sweep._dask_client` in a helper process (``python -m
  fedplan.planner.simulate.executor``, started in the background when the executor is made, ended when the executor
  closes or its parent dies), so k runs on k cores take about as long as one and the caller's process stays idle.
  The helper is needed in a Streamlit server: Streamlit installs the page being run as ``sys.modules["__main__"]``,
  and a worker process spawned from the server would run that page again (multiprocessing re-imports ``__main__``);
* ``tcp://HOST:PORT``: a running Dask scheduler (its workers need fedplan installed);
* ``process``: threads of the calling process (also what happens, said in :attr:`Executor.fallback`, when Dask is
  not installed).

A job's progress is the request's own ``progress(done, total)`` calls, sent from the worker through a Dask
``Variable`` named after the job. Cancelling is cooperative but prompt: the run's thread gets :class:`Cancelled`
raised inside it (between two Python bytecodes, so within a fraction of a second in the engines' loops, but not
inside an import: :class:`Interruptible`) as soon as the worker sees its task cancelled (``Future.cancel``, or the
client gone); a cancelled run no longer holds the worker, which takes the next run at once.
"""

from __future__ import annotations

import abc
import argparse
import ctypes
import functools
import logging
import multiprocessing
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fedplan.bounds import imports
from fedplan.bounds.imports import import_lazily
from fedplan.planner.extras import optional_import, require_installed

__all__ = ["Cancelled", "Executor", "ForkedChild", "Interruptible", "Job", "Outcome", "SCHEDULER_VARIABLE", "shared"]

#: The environment variable naming where an app's runs go: ``local`` (default), ``tcp://HOST:PORT`` or ``process``.
SCHEDULER_VARIABLE = "FEDPLAN_SCHEDULER"
#: Seconds between two looks of a worker at whether its run was cancelled.
WATCH_SECONDS = 0.1
#: Niceness of the local cluster's helper and so of its workers: a simulation is batch work, and on a machine whose
#: cores it fills the server's script runs (every page's interactions) must not wait behind it. Alone, a run at
#: niceness 10 gets the same cores as at 0.
WORKER_NICENESS = 10
#: Seconds a job waits for the cluster to start (or the scheduler to answer) before the submission fails.
START_TIMEOUT = 120.0


class Cancelled(BaseException):  # noqa: N818 - a control signal, not an error (like KeyboardInterrupt)
    """Raised inside the thread of a cancelled run (a ``BaseException``: no ``except Exception`` swallows it)."""


@dataclass(frozen=True)
class Outcome:
    """A finished run: the request's report, the wall and CPU seconds it computed and where (a worker's address, or
    this process), with that process's id."""

    report: Any
    seconds: float
    where: str
    pid: int
    cpu_seconds: float = 0.0


#: Seconds between two looks at whether an interrupted thread has finished the import it was in.
IMPORT_POLL_SECONDS = 0.02


def _importing(thread: int, *, lazily: bool = True) -> bool:
    """Whether the thread ``thread`` is inside an import: a frame of Python's import machinery on its stack, or (with
    ``lazily``) of :func:`~fedplan.bounds.imports.import_lazily` (waiting for its lock, whose release an exception
    could skip)."""
    frame = sys._current_frames().get(thread)
    while frame is not None:
        if (lazily and frame.f_code is import_lazily.__code__) or frame.f_code.co_filename.startswith(
                "<frozen importlib"):
            return True
        frame = frame.f_back
    return False


class Interruptible:
    """Runs a function in the calling thread; :meth:`interrupt` from any other thread raises :class:`Cancelled`
    inside it, unless it has already returned.

    Never inside an import: an exception raised there leaves the package half-imported for the whole process (on
    a fresh server a plan cancelled while dp-accounting imported scipy.signal left every later plan failing with
    "NameError: name '_signal_api' is not defined"). While the thread imports, :class:`Cancelled` waits for the
    import to end (a second or two at most, for the heaviest libraries)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.thread: int | None = None
        self.finished = False
        self.interrupted = False

    def interrupt(self) -> None:
        with self.lock:
            if self.thread is None or self.finished or self.interrupted:
                self.interrupted = self.interrupted or self.thread is None
                return
            self.interrupted = True
            if not _importing(self.thread):
                self._raise()
                return
        threading.Thread(target=self._raise_after_import, name="fedplan-interrupt-after-import", daemon=True).start()

    def _raise(self) -> None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.thread), ctypes.py_object(Cancelled))

    def _raise_after_import(self) -> None:
        while True:
            time.sleep(IMPORT_POLL_SECONDS)
            with self.lock:
                if self.finished:
                    return
                if not _importing(self.thread):
                    self._raise()
                    return

    def run(self, function: Callable[[], Any]) -> Any:
        """``function()``; raises :class:`Cancelled` if interrupted before it returned."""
        with self.lock:
            self.thread = threading.get_ident()
            if self.interrupted:
                raise Cancelled
        try:
            return function()
        finally:
            with self.lock:
                self.finished = True


#: Niceness of a :class:`ForkedChild`: the page work it computes (a plan, a calibration) is batch work next to the
#: server's script runs, which answer the user's clicks (as the cluster's workers, :data:`WORKER_NICENESS`).
CHILD_NICENESS = WORKER_NICENESS
#: Seconds :class:`ForkedChild` waits for the other threads' imports to end before it forks (they take a second or
#: two at most, on a fresh server).
FORK_WAIT_SECONDS = 30.0


# Python 3.12 warns at every fork of a process with threads; ForkedChild forks only at a point where no other
# thread holds an import lock (its docstring), and its child only computes
warnings.filterwarnings("ignore", message=r"This process \(pid=\d+\) is multi-threaded, use of fork\(\) may lead",
                        category=DeprecationWarning)


def _portable(error: BaseException) -> BaseException:
    """``error`` if it survives pickling (its type and message reach the parent), else a ``ValueError`` (a refusal)
    or ``RuntimeError`` with its type and message."""
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:  # noqa: BLE001 - any exception type may refuse pickling
        kind = ValueError if isinstance(error, ValueError) else RuntimeError
        return kind(f"{type(error).__name__}: {error}")


def _compute_in_child(function: Callable[[], Any], sender) -> None:
    """The forked child: ``function()`` (or the exception it raised), sent to the parent; then the child ends without
    running the parent's exit handlers (they belong to the server: its Dask client, Streamlit's)."""
    code = 0
    try:
        imports.fresh_lock_in_child()  # forked under imports.held(), a block this child never leaves
        os.nice(CHILD_NICENESS)
        # a server thread writing to stdout or stderr at the fork left that stream's buffer lock held in this copy
        # (Python does not reset it): the child writes through streams of its own and does not log (the server's
        # handlers hold the old streams); its errors come back as exceptions
        sys.stdout = open(os.dup(1), "w", buffering=1, encoding="utf-8", errors="replace")  # noqa: SIM115
        sys.stderr = open(os.dup(2), "w", buffering=1, encoding="utf-8", errors="replace")  # noqa: SIM115
        logging.disable(logging.CRITICAL)
        try:
            outcome = (True, function())
        except Exception as error:  # noqa: BLE001 - raised in the parent
            outcome = (False, _portable(error))
        try:
            sender.send(outcome)
        except Exception as error:  # noqa: BLE001 - a value that does not pickle
            sender.send((False, RuntimeError(f"the answer could not be sent from the computing process: {error}")))
        sender.close()
    except BaseException:  # noqa: BLE001 - nothing may unwind into the server's code that this child copied
        code = 1
    finally:
        os._exit(code)


class ForkedChild:
    """Runs a function in a child process forked from this one (the interface of :class:`Interruptible`):
    :meth:`interrupt` kills the child, and :meth:`run` raises :class:`Cancelled`.

    What it is for: the app's page work (a plan's calibration, seconds of pure-Python series and FFTs) computed in a
    thread of the server holds the GIL most of the time, and every script run meanwhile (each click on any page of any
    session) waits for it (:mod:`fedplan.app_pages.background` gives the measured cost). A child holds its own
    interpreter on another core; it starts in about 10-30 ms, being a copy of the server with every module already
    imported, and its answer comes back pickled.

    Forking a process that has threads copies only the calling thread, so a lock another thread holds stays held in
    the child forever. The child only computes, but a computation may import: so the fork happens while this
    thread holds :func:`~fedplan.bounds.imports.import_lazily`'s lock and no other thread is inside an import (which
    would leave that module's import lock held in the child). Python's own locks (the GIL, logging's) are reset
    after a fork; numpy's and scipy's libraries register their own fork handlers.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.process = None
        self.interrupted = False

    def interrupt(self) -> None:
        with self.lock:
            self.interrupted = True
            if self.process is not None and self.process.exitcode is None:
                self.process.kill()

    def _fork(self, function: Callable[[], Any]):
        context = multiprocessing.get_context("fork")
        receiver, sender = context.Pipe(duplex=False)
        try:
            self._start_child(context, function, sender)
        except BaseException:
            receiver.close()
            raise
        finally:
            sender.close()
        return receiver

    def _start_child(self, context, function: Callable[[], Any], sender) -> None:
        deadline, me = time.monotonic() + FORK_WAIT_SECONDS, threading.get_ident()
        while True:
            # the lock is not held while waiting: a thread importing a module whose code calls import_lazily waits
            # for it, holding that module's import lock (a thread merely waiting for it holds none)
            with imports.held():
                if not any(_importing(thread.ident, lazily=False) for thread in threading.enumerate()
                           if thread.ident != me):
                    with self.lock:
                        if self.interrupted:
                            raise Cancelled
                        self.process = context.Process(target=_compute_in_child, args=(function, sender),
                                                       name="fedplan-page-work", daemon=True)
                        self.process.start()
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"another thread of the server was still importing after {FORK_WAIT_SECONDS:g} s")
            time.sleep(IMPORT_POLL_SECONDS)

    def run(self, function: Callable[[], Any]) -> Any:
        """``function()`` computed in a forked child; raises what it raised, or :class:`Cancelled` if interrupted
        before it answered."""
        receiver = self._fork(function)
        try:
            ok, value = receiver.recv()
        except EOFError:  # the child ended without an answer: killed by interrupt(), or by the system
            self.process.join()
            if self.interrupted:
                raise Cancelled from None
            raise RuntimeError(f"the computing process ended without an answer (exit code {self.process.exitcode}; "
                               "out of memory?)") from None
        finally:
            receiver.close()
        # the answer is in and the child is ending (os._exit); the kernel's teardown of its copy of the server took
        # 18-20 ms (a 300 MiB heap), which the page waiting for the answer need not wait for: a thread reaps it
        threading.Thread(target=self.process.join, name="fedplan-page-work-reaper", daemon=True).start()
        if ok:
            return value
        raise value


def _timed(request, progress) -> tuple[Any, float, float]:
    """The report, the wall seconds and this thread's CPU seconds of ``request.run``."""
    started, cpu = time.perf_counter(), time.thread_time()
    report = request.run(progress=progress)
    return report, time.perf_counter() - started, time.thread_time() - cpu


def run_on_worker(request, progress_name: str) -> Outcome | None:
    """A Dask task: ``request.run`` with its progress sent to the ``Variable`` ``progress_name``; None when the task
    was cancelled while it ran (its run is stopped by :class:`Cancelled`, see the module docstring)."""
    distributed = optional_import("distributed", purpose="a run on a Dask cluster")
    worker = distributed.get_worker()
    key = worker.get_current_task()
    variable = distributed.Variable(progress_name)
    guard, stop = Interruptible(), threading.Event()

    def watch() -> None:
        while not stop.wait(WATCH_SECONDS):
            task = worker.state.tasks.get(key)
            if task is None or task.state in ("cancelled", "released", "forgotten"):
                guard.interrupt()
                return

    def progress(done: int, total: int) -> None:
        variable.set({"started": True, "done": int(done), "total": int(total)})

    watcher = threading.Thread(target=watch, name=f"fedplan-watch-{key}", daemon=True)
    watcher.start()
    try:
        variable.set({"started": True, "done": 0, "total": 0})
        report, seconds, cpu = guard.run(lambda: _timed(request, progress))
    except Cancelled:
        return None
    finally:
        stop.set()
        watcher.join()
    return Outcome(report, seconds, worker.address, os.getpid(), cpu)


class Job(abc.ABC):
    """One submitted request: :meth:`state`, :meth:`progress`, :meth:`result`, :meth:`cancel` (abstract: a Dask
    future or a thread of this process implements them)."""

    def __init__(self, started: float) -> None:
        self.submitted = started

    @abc.abstractmethod
    def state(self) -> str:
        """``queued`` (waiting for a free worker), ``running``, ``finished`` (result or error) or ``cancelled``."""

    @abc.abstractmethod
    def progress(self) -> tuple[int, int]:
        """(done, total) of the run's last ``progress`` call; (0, 0) before the first."""

    def done(self) -> bool:
        return self.state() in ("finished", "cancelled")

    @abc.abstractmethod
    def result(self, timeout: float | None = None) -> Outcome:
        """The :class:`Outcome` (waits up to ``timeout`` seconds); the request's own ``ValueError`` is raised here."""

    @abc.abstractmethod
    def cancel(self) -> None:
        """Stop the run (at once if queued, within a fraction of a second if running); idempotent."""


class _DaskJob(Job):
    def __init__(self, client, future, variable, started: float) -> None:
        super().__init__(started)
        self.client, self.future, self.variable = client, future, variable
        self.last = {"started": False, "done": 0, "total": 0}
        self.cancelled = False
        self.lock = threading.Lock()

    def _look(self) -> dict:
        with self.lock:
            if self.future is not None and not self.future.done():
                try:
                    self.last = self.variable.get(timeout=0)
                except (TimeoutError, OSError):
                    pass
            return self.last

    def state(self) -> str:
        if self.cancelled:
            return "cancelled"
        if self.future is None or self.future.done():
            return "finished"
        return "running" if self._look()["started"] else "queued"

    def progress(self) -> tuple[int, int]:
        last = self._look()
        return last["done"], last["total"]

    def result(self, timeout: float | None = None) -> Outcome:
        if self.cancelled:
            raise Cancelled
        try:
            outcome = self.future.result(timeout=timeout)
        finally:
            if self.future.done():
                self._release()
        if outcome is None:  # the worker saw its task cancelled (e.g. by another client)
            self.cancelled = True
            raise Cancelled
        return outcome

    def cancel(self) -> None:
        if self.cancelled or self.future is None:
            return
        self.cancelled = True
        try:
            self.future.cancel()
        finally:
            self._release()

    def _release(self) -> None:
        """Forget the future (the cluster drops the result) and the progress variable."""
        with self.lock:
            if self.future is None:
                return
            self.future = None
            try:
                self.variable.delete()
            except (OSError, TimeoutError):
                pass


class _ThreadJob(Job):
    def __init__(self, request, started: float) -> None:
        super().__init__(started)
        self.guard, self.finished = Interruptible(), threading.Event()
        self.last, self.running, self.cancelled = (0, 0), False, False
        self.outcome: Outcome | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._work, args=(request,), name="fedplan-run", daemon=True)
        self.thread.start()

    def _work(self, request) -> None:
        def progress(done: int, total: int) -> None:
            self.last = (int(done), int(total))

        self.running = True
        try:
            report, seconds, cpu = self.guard.run(lambda: _timed(request, progress))
            self.outcome = Outcome(report, seconds, "this process", os.getpid(), cpu)
        except Cancelled:
            self.cancelled = True
        except BaseException as error:  # handed to result()
            self.error = error
        finally:
            self.finished.set()

    def state(self) -> str:
        if self.cancelled:
            return "cancelled"
        return "finished" if self.finished.is_set() else "running" if self.running else "queued"

    def progress(self) -> tuple[int, int]:
        return self.last

    def result(self, timeout: float | None = None) -> Outcome:
        if not self.finished.wait(timeout):
            raise TimeoutError(f"the run did not finish in {timeout} s")
        if self.cancelled:
            raise Cancelled
        if self.error is not None:
            raise self.error
        return self.outcome

    def cancel(self) -> None:
        if not self.finished.is_set():
            self.cancelled = True
            self.guard.interrupt()


class Executor:
    """Where a process's runs go (see the module docstring); make one per process and share it.

    ``scheduler``: ``"local"`` (a new LocalCluster of ``processes`` workers, default one per core), a scheduler
    address, or ``"process"`` (threads of this process). Without Dask installed it runs in this process and says why
    in :attr:`fallback`. The cluster starts in the background; :meth:`submit` waits for it.
    """

    def __init__(self, *, scheduler: str = "local", processes: int | None = None) -> None:
        self.scheduler, self.processes = scheduler, processes
        self.fallback: str | None = None
        self.client = self.cluster = self.helper = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        if scheduler == "process":
            self.fallback = f"{SCHEDULER_VARIABLE}=process"
        else:
            try:  # found, not imported: the import (0.4 s alone, 2 s beside a browser) is _connect's, in its
                # thread; made here, it held up the script run that first drew a validation section
                require_installed("distributed", purpose="running simulations outside the app's server process")
            except ModuleNotFoundError as error:
                self.fallback = str(error)
        if self.fallback is not None:
            self._ready.set()
        else:
            threading.Thread(target=self._connect, name="fedplan-executor-start", daemon=True).start()

    @classmethod
    def from_environment(cls) -> Executor:
        """The executor ``FEDPLAN_SCHEDULER`` names (``local`` when unset)."""
        return cls(scheduler=os.environ.get(SCHEDULER_VARIABLE, "").strip() or "local")

    def _connect(self) -> None:
        from fedplan.planner.simulate.sweep import _dask_client

        try:
            address = self._start_helper() if self.scheduler == "local" else self.scheduler
            self.client, self.cluster = _dask_client(address, None)
            # the workers import the request modules while nobody waits (cold: 2-4 s each)
            self.client.run(_warm)
        except BaseException as error:  # handed to submit()
            self._error = error
        finally:
            self._ready.set()

    def _start_helper(self) -> str:
        """Start the helper process that holds the LocalCluster (see the module docstring); its scheduler's
        address."""
        log = tempfile.TemporaryFile(mode="w+")
        command = [sys.executable, "-m", __name__, "--processes", str(self.processes or os.cpu_count() or 1)]
        # niced from its first instruction, before its imports (2 s of a core, at the server's niceness when it
        # reniced itself after them, beside the first page a user sees); its workers inherit it
        self.helper = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
                                       preexec_fn=functools.partial(os.nice, WORKER_NICENESS))
        address = self.helper.stdout.readline().strip()
        if not address.startswith("tcp://"):
            log.seek(0)
            raise ValueError("the local Dask cluster did not start: " + " ".join(log.read().split()[-60:]))
        log.close()
        return address

    @property
    def backend(self) -> str:
        """Where runs go, in words."""
        if self.fallback is not None:
            return "threads of this process"
        if self.scheduler == "local":
            workers = self.processes or os.cpu_count() or 1
            return f"a Dask LocalCluster of {workers} single-threaded worker process{'es' if workers > 1 else ''}"
        return f"the Dask scheduler at {self.scheduler}"

    def workers(self) -> int:
        """Runs that can go at once (workers of the cluster; 1 in this process)."""
        if self.fallback is not None:
            return 1
        if not self._ready.is_set() or self.client is None:
            return self.processes or os.cpu_count() or 1
        return max(1, len(self.client.scheduler_info().get("workers", {})))

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        """Wait for the cluster; raises ``ValueError`` (why it could not be reached) or ``TimeoutError``."""
        if not self._ready.wait(timeout):
            raise TimeoutError(f"the Dask cluster did not start within {timeout:.0f} s")
        if self._error is not None:
            raise ValueError(str(self._error)) from self._error

    def submit(self, request) -> Job:
        """Start ``request`` (a :class:`~planner.tasks.base.Request`) and return its :class:`Job` at once (after the
        cluster is up)."""
        started = time.perf_counter()
        if self.fallback is not None:
            return _ThreadJob(request, started)
        self.wait_ready()
        distributed = optional_import("distributed", purpose="a run on a Dask cluster")
        name = f"fedplan-progress-{uuid.uuid4().hex}"
        variable = distributed.Variable(name, client=self.client)
        variable.set({"started": False, "done": 0, "total": 0})
        future = self.client.submit(run_on_worker, request, name, pure=False,
                                    key=f"fedplan-{type(request).__name__}-{uuid.uuid4().hex}")
        return _DaskJob(self.client, future, variable, started)

    def close(self) -> None:
        self._ready.wait(START_TIMEOUT)
        if self.client is not None:
            self.client.close()
        if self.helper is not None:
            self.helper.stdin.close()  # the helper closes its cluster and ends
            try:
                self.helper.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.helper.kill()
                self.helper.wait()


_SHARED: Executor | None = None
_SHARED_LOCK = threading.Lock()


def shared() -> Executor:
    """The process's one executor (:meth:`Executor.from_environment`), made on the first call: the app's sessions,
    its tests and ``benchmarks/app_load.py`` all submit to it."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = Executor.from_environment()
        return _SHARED


def _warm() -> None:
    import fedplan.planner.tasks.validate  # noqa: F401 - the engines, data and models the app's runs need


def _serve(argv=None) -> None:
    """The helper process: a LocalCluster of ``--processes`` workers; prints its scheduler's address, then holds it
    until its standard input closes (the executor closed, or its process ended)."""
    from fedplan.planner.simulate.sweep import _dask_client

    parser = argparse.ArgumentParser(description="a local Dask cluster for fedplan's executor")
    parser.add_argument("--processes", type=int, default=None)
    args = parser.parse_args(argv)
    client, cluster = _dask_client("local", args.processes)
    try:
        print(cluster.scheduler_address, flush=True)
        sys.stdin.read()
    finally:
        client.close()
        cluster.close()


if __name__ == "__main__":
    _serve()
