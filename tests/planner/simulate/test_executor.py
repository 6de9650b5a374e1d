"""The executor that runs the app's simulations outside its process: results, refusals, progress and cancelling,
on the Dask cluster (:func:`shared`) and in threads of this process (the fallback without Dask)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

from fedplan.planner.simulate.executor import WORKER_NICENESS, Cancelled, Executor, Interruptible, shared
from fedplan.planner.tasks.validate import ValidateFedsgdDpc

#: A FedSGD-DPC validation of a few seconds; at ε = 1 without rounds the planner's T* = 0 is refused by name.
SMALL = dict(mechanism="laplace", clients=5, seeds=(0,), n_samples=2000, target_epsilon=50, test_fraction=0.2,
             rounds=2)


def _interrupted(function, ready: threading.Event, *, after: float = 0.0) -> dict:
    """Run ``function(outcome)`` under an :class:`Interruptible` in a thread, interrupt it ``after`` seconds past
    ``ready``, and return ``outcome`` (with ``cancelled`` once :class:`Cancelled` ended it) when the thread ended."""
    guard, outcome = Interruptible(), {}

    def run():
        try:
            guard.run(lambda: function(outcome))
        except Cancelled:
            outcome["cancelled"] = True

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(10)
    time.sleep(after)
    guard.interrupt()
    thread.join(30)
    assert not thread.is_alive()
    return outcome


def test_an_interrupted_loop_raises_cancelled_and_a_finished_one_is_left_alone():
    started = threading.Event()

    def spin(outcome):
        started.set()
        while True:  # pure Python: only the interrupt ends it
            pass

    assert _interrupted(spin, started) == {"cancelled": True}
    done = Interruptible()
    assert done.run(lambda: 42) == 42
    done.interrupt()  # after the end: nothing raised anywhere
    assert done.finished and not done.interrupted


def test_an_interrupt_during_an_import_waits_for_the_import_to_end(tmp_path, monkeypatch):
    """A plan cancelled while dp-accounting imported scipy.signal left scipy.signal half-imported for the whole
    server (every later plan: "NameError: name '_signal_api' is not defined"). The interrupt lands during the
    import of a module whose body runs 0.5 s; the module is then whole in ``sys.modules`` and the run is still
    cancelled, in the loop after the import."""
    import importlib
    import sys

    (tmp_path / "fedplan_slow_import.py").write_text(
        "import time\nend = time.perf_counter() + 0.5\nwhile time.perf_counter() < end:\n    pass\nWHOLE = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "fedplan_slow_import", raising=False)
    importing = threading.Event()

    def work(outcome):
        importing.set()
        importlib.import_module("fedplan_slow_import")
        outcome["imported"] = True
        while True:
            pass

    assert _interrupted(work, importing, after=0.1) == {"imported": True, "cancelled": True}
    assert sys.modules["fedplan_slow_import"].WHOLE


def test_a_dask_run_returns_the_same_report_as_this_process_and_refuses_with_the_same_words():
    request = ValidateFedsgdDpc(**SMALL)
    outcome = shared().submit(request).result(timeout=300)
    assert outcome.pid != os.getpid() and outcome.where.startswith("tcp://")
    local = request.run()
    # a run depends only on its request (its wall time aside)
    assert outcome.report.result.claims == local.result.claims and outcome.report.result.table == local.result.table
    refused = ValidateFedsgdDpc(**{**SMALL, "target_epsilon": 1, "rounds": None})
    with pytest.raises(ValueError) as here:
        refused.run()
    with pytest.raises(ValueError) as there:
        shared().submit(refused).result(timeout=300)
    assert str(there.value) == str(here.value) and "rounds must be given" in str(there.value)


def test_threads_of_this_process_when_asked_report_progress_and_cancel():
    runner = Executor(scheduler="process")
    assert runner.fallback == "FEDPLAN_SCHEDULER=process" and runner.backend == "threads of this process"
    job = runner.submit(ValidateFedsgdDpc(**{**SMALL, "seeds": (0, 1)}))
    outcome = job.result(timeout=300)
    assert job.state() == "finished" and job.progress() == (2, 2)
    assert outcome.where == "this process" and outcome.pid == os.getpid()
    long = runner.submit(ValidateFedsgdDpc(**{**SMALL, "n_samples": 200_000, "rounds": 200, "seeds": (0, 1, 2)}))
    time.sleep(0.5)
    long.cancel()
    with pytest.raises(Cancelled):
        long.result(timeout=60)  # the run of minutes stopped
    assert long.state() == "cancelled" and not long.thread.is_alive()


def test_the_local_clusters_workers_yield_to_the_apps_script_runs():
    runner = shared()
    runner.wait_ready()
    if runner.fallback is not None or runner.scheduler != "local":
        pytest.skip(f"runs do not go to a local cluster here ({runner.backend})")
    own = os.nice(0)
    workers = runner.client.run(os.nice, 0)  # each worker's niceness (os.nice(0) reads it)
    assert workers and all(value == min(own + WORKER_NICENESS, 19) for value in workers.values())


class _UnpicklableError(Exception):
    def __init__(self, reason: str, code: int) -> None:
        super().__init__(f"{reason} ({code})")
        self.lock = threading.Lock()  # no pickler takes a lock (distributed's tblib pickles __dict__)


def _raise_unpicklable():
    raise _UnpicklableError("odd", 3)


def test_a_forked_child_returns_the_value_raises_the_error_and_ends():
    import logging
    import sys

    from fedplan.planner.simulate.executor import CHILD_NICENESS, ForkedChild

    pid, niceness, streams, logs = ForkedChild().run(lambda: (os.getpid(), os.nice(0), (id(sys.stdout), id(
        sys.stderr)), logging.getLogger("fedplan").isEnabledFor(logging.CRITICAL)))
    assert pid != os.getpid() and niceness == os.nice(0) + CHILD_NICENESS
    # streams of its own (a buffer lock held by another thread at the fork stays held in the copy) and no logging
    assert streams[0] != id(sys.stdout) and streams[1] != id(sys.stderr) and not logs
    with pytest.raises(ValueError, match="^invalid literal"):
        ForkedChild().run(lambda: int("x"))
    with pytest.raises(RuntimeError, match=r"^_UnpicklableError: odd \(3\)$"):
        ForkedChild().run(_raise_unpicklable)
    with pytest.raises(RuntimeError, match="ended without an answer .exit code -9"):
        ForkedChild().run(lambda: os.kill(os.getpid(), 9))  # as the system's out-of-memory killer does


def test_a_forked_childs_answer_is_returned_without_waiting_for_the_child_to_end(monkeypatch):
    """The end of a child (the kernel freeing its copy of the server: 18-20 ms) is not waited for: a thread reaps it.
    Here the reaping is made to take 3 s; the answer still comes back at once, and the child is reaped after."""
    import multiprocessing.process

    from fedplan.planner.simulate.executor import ForkedChild

    join = multiprocessing.process.BaseProcess.join

    def slow_join(self, timeout=None):
        time.sleep(3)
        return join(self, timeout)

    monkeypatch.setattr(multiprocessing.process.BaseProcess, "join", slow_join)
    child, started = ForkedChild(), time.monotonic()
    assert child.run(lambda: 7) == 7
    assert time.monotonic() - started < 2.5
    reaper = next(thread for thread in threading.enumerate() if thread.name == "fedplan-page-work-reaper")
    reaper.join(timeout=30)
    assert child.process.exitcode == 0 and not os.path.exists(f"/proc/{child.process.pid}")


def test_an_interrupted_forked_child_is_killed_and_raises_cancelled(tmp_path):
    from fedplan.planner.simulate.executor import ForkedChild

    child, note = ForkedChild(), tmp_path / "pid"

    def slow():
        note.write_text(str(os.getpid()))
        time.sleep(60)

    timer = threading.Timer(0.5, child.interrupt)
    timer.start()
    started = time.monotonic()
    with pytest.raises(Cancelled):
        child.run(slow)
    assert time.monotonic() - started < 5 and not os.path.exists(f"/proc/{note.read_text()}")
    early = ForkedChild()
    early.interrupt()
    with pytest.raises(Cancelled):
        early.run(lambda: 1)  # interrupted before it forked: nothing runs


def test_a_child_forked_while_another_thread_imports_lazily_can_import_too():
    """The fork waits for import_lazily's lock: a child forked while another thread held it would wait for it for
    ever, the thread that holds it not being copied."""
    from fedplan.bounds import imports
    from fedplan.planner.simulate.executor import ForkedChild

    holding, answers = threading.Event(), []

    def hold() -> None:
        with imports.held():
            holding.set()
            time.sleep(0.5)

    holder = threading.Thread(target=hold)
    holder.start()
    holding.wait()
    worker = threading.Thread(target=lambda: answers.append(
        ForkedChild().run(lambda: imports.import_lazily("json").dumps([1]))), daemon=True)
    started = time.monotonic()
    worker.start()
    worker.join(timeout=20)
    holder.join()
    assert answers == ["[1]"] and time.monotonic() - started >= 0.4


def _import_in_a_second_thread() -> bool:
    """In this (forked) process: whether a thread other than this one imports lazily within 10 s."""
    from fedplan.bounds import imports

    done = threading.Event()
    second = threading.Thread(target=lambda: (imports.import_lazily("json"), done.set()), daemon=True)
    second.start()
    return done.wait(timeout=10)


def test_a_thread_the_forked_child_starts_can_import_lazily():
    """The child is forked while its parent thread holds import_lazily's lock (ForkedChild._start_child), and runs its
    work inside that hold: a second thread of the child (a large PLD's add side, bounds/pld.py both_sides) waited for
    the lock for ever before the child's copy was made afresh at the fork."""
    from fedplan.planner.simulate.executor import ForkedChild

    assert ForkedChild().run(_import_in_a_second_thread) is True


def test_making_the_executor_leaves_the_import_of_dask_to_its_own_thread():
    """The app's executor is made by the script run that first draws a validation section (the Planner's, after its
    first plan). It imported distributed there (0.4 s alone, about 2 s beside a browser): that run, and the click that
    had to interrupt it, waited (the benchmark's Planner: 5.2 s for its first change). The import is _connect's."""
    code = ("import sys; from fedplan.planner.simulate import executor; "
            "executor.Executor._connect = lambda self: None; executor.Executor(scheduler='local'); "
            "print('distributed' in sys.modules)")
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert found.stdout.strip() == "False"
