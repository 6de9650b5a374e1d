"""Work a page should not freeze for: computed beside the server while the page stays live (issue 20).

A page asks :func:`answer` for the value of a computation under a key (the request's fields). A value already
computed, or computed within :func:`inline_wait` seconds of the start of its computation (0.1 s; none when the last
computation of its kind took ten times that; ``FEDPLAN_INLINE_WAIT`` sets it, the page tests set it long so that
one script run shows the answer), comes back at once. Otherwise :func:`answer` returns None after drawing where it
is called a progress line with the elapsed time and an estimate (the time the last computation of the same kind
took), and a Cancel button, in a fragment that redraws itself every :data:`POLL_SECONDS` and reruns the page when
the value is ready. The script run that started the work ends at once, so the page's other widgets answer while it
runs.

The work is shared by the server's sessions (two users asking for the same plan wait for one computation) and kept
for :data:`KEPT` keys, errors included (a refused request is refused again at once). A session that moves on to
another key, or presses Cancel, stops the work it no longer wants unless another session waits for it too:
its child process is killed (or, computed in a thread, :class:`~fedplan.planner.simulate.executor.Interruptible`
raises ``Cancelled`` in it, which stops it within a fraction of a second, after the import it may be in).

Where the work computes (``FEDPLAN_PAGE_WORK``): ``process`` (the default), a child process forked from the server
for each computation (:class:`~fedplan.planner.simulate.executor.ForkedChild`), so that the script runs of every
session keep the server's GIL while a plan computes (Planner clicks in Chromium on 2 cores, 27 in each mode,
interleaved: median 261 ms, 90th percentile 430 ms, against 309 ms and 515 ms with the plan in a server thread);
Cancel kills the child. ``thread``: a thread of the server (the page tests that hold a computation with an
in-process event). Either way not the Dask cluster of the simulations (:mod:`fedplan.planner.simulate.executor`):
a plan takes seconds, and behind a simulation on a busy cluster it would wait minutes.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from fedplan.bounds.imports import import_lazily
from fedplan.bounds.pld import import_libraries
from fedplan.planner.simulate.executor import Cancelled, ForkedChild, Interruptible

#: Seconds between two redraws of the progress line.
POLL_SECONDS = 0.3
#: Computations kept (finished or not), the oldest finished ones forgotten first.
KEPT = 64
#: Default seconds a script run waits for a value before it shows progress instead.
INLINE_WAIT = 0.1
#: The longest inline wait ``FEDPLAN_INLINE_WAIT`` may set (the page tests set 600 s: one script run, one answer).
MAX_INLINE_WAIT = 3600.0
#: Seconds without a script run or a progress redraw asking for unfinished work before it is stopped: every tab that
#: wanted it was closed (an open tab redraws every :data:`POLL_SECONDS`, a hidden one at least every second or so).
UNWATCHED_SECONDS = 10.0

_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="fedplan-page-work")
_LOCK = threading.Lock()


@dataclass
class _Work:
    future: Future
    guard: ForkedChild | Interruptible
    started: float
    sessions: set[str] = field(default_factory=set)
    #: When a script run or a progress redraw last asked for it (time.perf_counter).
    seen: float = field(default_factory=time.perf_counter)


_WORK: OrderedDict[Hashable, _Work] = OrderedDict()
#: Seconds the last finished computation of each kind took (the estimate shown while the next one runs).
_LAST_SECONDS: dict[str, float] = {}


def inline_wait() -> float:
    """Seconds a script run waits for a value before it shows progress (``FEDPLAN_INLINE_WAIT``, default 0.1)."""
    text = os.environ.get("FEDPLAN_INLINE_WAIT", "").strip()
    try:
        seconds = float(text) if text else INLINE_WAIT
    except ValueError:
        seconds = math.nan
    if not 0 <= seconds <= MAX_INLINE_WAIT:
        raise ValueError(f"FEDPLAN_INLINE_WAIT must be a number of seconds in [0, {MAX_INLINE_WAIT:g}]; got {text!r} "
                         "(set it for the server, or unset it)")
    return seconds


#: The values of ``FEDPLAN_PAGE_WORK``: where a computation runs (the module docstring).
RUNNERS = {"process": ForkedChild, "thread": Interruptible}


def runner() -> type[ForkedChild] | type[Interruptible]:
    """What computes the work (``FEDPLAN_PAGE_WORK``: process, the default, or thread)."""
    text = os.environ.get("FEDPLAN_PAGE_WORK", "").strip() or "process"
    if text not in RUNNERS:
        raise ValueError(f"FEDPLAN_PAGE_WORK must be one of {', '.join(RUNNERS)}; got {text!r} (set it for the "
                         "server, or unset it)")
    return RUNNERS[text]


def _warm_up() -> None:
    """In process mode, import once in the server what a plan imports on first use (about a second): a forked child
    starts with the server's modules, and would otherwise import them again for every plan."""
    with contextlib.suppress(ValueError):  # a wrong FEDPLAN_PAGE_WORK is said by answer(), on the page
        if runner() is ForkedChild:
            threading.Thread(target=import_libraries, name="fedplan-page-work-imports", daemon=True).start()


_warm_up()


def _session() -> str:
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    context = get_script_run_ctx()
    return context.session_id if context is not None else "no session"


_JANITOR: list[threading.Thread] = []


def _start(compute: Callable[[], Any], kind: str, imports: tuple[str, ...],
           make_guard: type[ForkedChild] | type[Interruptible]) -> _Work:
    if not _JANITOR:  # called under _LOCK
        _JANITOR.append(threading.Thread(target=_stop_unwatched, name="fedplan-page-work-janitor", daemon=True))
        _JANITOR[0].start()
    guard = make_guard()

    def task() -> Any:
        started = time.perf_counter()
        for name in imports:  # in this process, once: every later child has them (one still missing: its refusal)
            with contextlib.suppress(ImportError):
                import_lazily(name)
        value = guard.run(compute)
        _LAST_SECONDS[kind] = time.perf_counter() - started
        return value

    return _Work(_POOL.submit(task), guard, time.perf_counter())


def _wanted(work: _Work | None) -> bool:
    """Whether ``work`` can still give its value (it was not cancelled)."""
    if work is None:
        return False
    if not work.future.done():
        return True
    return not isinstance(work.future.exception(), Cancelled)


def _release(key: Hashable, session: str) -> None:
    """``session`` no longer waits for ``key``: stop the work if nobody else does."""
    with _LOCK:
        work = _WORK.get(key)
        if work is None:
            return
        work.sessions.discard(session)
        if not work.sessions and not work.future.done():
            work.guard.interrupt()
            del _WORK[key]


def _stop_unwatched() -> None:
    """Every second: stop the unfinished work no tab has asked for in :data:`UNWATCHED_SECONDS` (its tabs were
    closed; a plan left running would slow every other session's script runs on the two cores)."""
    while True:
        time.sleep(1.0)
        now = time.perf_counter()
        with _LOCK:
            for key, work in list(_WORK.items()):
                if not work.future.done() and now - work.seen > UNWATCHED_SECONDS:
                    work.guard.interrupt()
                    del _WORK[key]


def _forget_old() -> None:
    finished = [key for key, work in _WORK.items() if work.future.done()]
    for key in finished[:max(0, len(_WORK) - KEPT)]:
        del _WORK[key]


def known(key: Hashable) -> Any | None:
    """The value computed for ``key`` if its computation has finished (its exception raised here), else None;
    unlike :func:`answer` it neither starts nor claims work (a page showing an earlier answer while a new one is
    computed)."""
    with _LOCK:
        work = _WORK.get(key)
    if work is None or not work.future.done() or not _wanted(work):
        return None
    return work.future.result()


def answer(key: Hashable, compute: Callable[[], Any], *, kind: str, label: str,
           imports: tuple[str, ...] = ()) -> Any | None:
    """``compute()``'s value for ``key``, or None while it is being computed (see the module docstring); an
    exception ``compute`` raised is raised here. ``kind`` names the computation (one estimate and one Cancel button
    per kind on a page), ``label`` is what the progress line says is being done ("Planning"). ``imports``: modules
    the computation imports that the server has not (a library's accountant: Opacus's takes 3-8 s), imported in
    the server before the work starts, so that a child forked later need not import them again."""
    try:  # the server's settings (an operator's mistake is said on the page, not in a traceback)
        wait, make_guard = inline_wait(), runner()
    except ValueError as error:
        st.error(str(error))
        st.stop()
    session, mine = _session(), f"background_{kind}"
    if st.session_state.get(f"{mine}_cancelled") == key:
        st.info(f"{label} stopped. Change an input to start again.")
        if st.button(f"{label}: start again", key=f"{mine}_again"):
            st.session_state.pop(f"{mine}_cancelled", None)
            st.rerun()
        return None
    previous = st.session_state.get(mine)
    if previous is not None and previous != key:
        _release(previous, session)
    st.session_state[mine] = key
    with _LOCK:
        work = _WORK.get(key)
        if not _wanted(work):
            work = _WORK[key] = _start(compute, kind, imports, make_guard)
        _WORK.move_to_end(key)
        work.sessions.add(session)
        work.seen = time.perf_counter()
        _forget_old()
    # the inline wait counts from the work's start: a rerun while it goes on (the progress line's, another box's)
    # does not wait again; a long wait (the page tests') keeps the work watched. Not at all when the last computation
    # of this kind took ten times the wait (a plan: seconds): the wait would only delay the progress line
    last = _LAST_SECONDS.get(kind)
    deadline = work.started + (0.0 if last is not None and last > 10 * wait else wait)
    while True:
        try:
            return work.future.result(timeout=max(0.0, min(1.0, deadline - time.perf_counter())))
        except FutureTimeout:
            work.seen = time.perf_counter()
            if work.seen >= deadline:
                break
    _progress(key, work, session, kind=kind, label=label)
    return None


def _progress(key: Hashable, work: _Work, session: str, *, kind: str, label: str) -> None:
    mine = f"background_{kind}"
    estimate = _LAST_SECONDS.get(kind)

    @st.fragment(run_every=POLL_SECONDS)
    def poll() -> None:
        if work.future.done() or _WORK.get(key) is not work:
            st.rerun()
        work.seen = time.perf_counter()
        elapsed = time.perf_counter() - work.started
        if estimate:
            text = f"{label}… {elapsed:.1f} s, about {estimate:.1f} s in all (the last one took that long)"
            share = min(elapsed / estimate, 0.99)
        else:
            text, share = f"{label}… {elapsed:.1f} s (the first one on this server: no estimate yet)", 0.0
        st.progress(share, text=text)
        if st.button("Cancel", key=f"{mine}_cancel"):
            st.session_state[f"{mine}_cancelled"] = key
            _release(key, session)
            st.rerun()

    poll()
