"""Run one fuzz input in a forked child under a memory cap and a time cap, and judge what it did.

fedplan is imported once, by the test process; each input runs in ``os.fork()``'s child (a few milliseconds,
instead of the ~2 s a new interpreter costs), which:

* starts its own process group (anything it starts is killed with it), chdirs into the input's folder,
* reads stdin from /dev/null and writes stdout and stderr to files (UTF-8, as a terminal would),
* shows Python warnings as a plain ``python`` would (pytest's recording of warnings is undone),
* caps its address space at its size at the fork plus :data:`MEMORY_CAP`, the size of a file it writes at
  :data:`FILE_SIZE_CAP`, and its time at :data:`TIME_CAP` (``faulthandler`` then dumps where it is stuck and
  exits; ``SIGALRM`` a little later is the backstop, and the parent kills the group after :data:`GRACE` more),
* runs the target (``fedplan.planner.cli.main(argv)``, or a request's construction and ``run()``), catching
  every ``BaseException`` with its traceback, and writes a small JSON result before ``os._exit``.

The parent waits for the child on a pidfd with a wall-clock timeout, reads what it left and judges it:
:func:`judge_cli` and :func:`judge_api` return the ways an input failed (none for a pass).
"""

from __future__ import annotations

import contextlib
import dataclasses
import faulthandler
import io
import json
import math
import os
import re
import resource
import secrets
import select
import shlex
import signal
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedplan.planner import cli
from fedplan.planner.tasks.base import Report, flag_name, options

#: Seconds one input may run (override: FEDPLAN_FUZZ_TIME_CAP).
TIME_CAP = float(os.environ.get("FEDPLAN_FUZZ_TIME_CAP") or 45.0)
#: The time limit fedplan itself is given in a child (FEDPLAN_MAX_SECONDS): a third of the cap, since its
#: estimates are pessimistic by about two and start-up and data loading come on top.
PRODUCT_SECONDS = TIME_CAP / 3
#: Bytes of address space a child may add to what it inherits at the fork.
MEMORY_CAP = 2 * 2**30
#: Largest file a child may write (a bigger write kills it with SIGXFSZ).
FILE_SIZE_CAP = 2**30
#: Seconds past the cap before the parent kills a child that faulthandler did not stop.
GRACE = 10.0
#: Inputs per command and test (override: FEDPLAN_FUZZ_EXAMPLES).
EXAMPLES = int(os.environ.get("FEDPLAN_FUZZ_EXAMPLES") or 3)
#: The random test's seed: FEDPLAN_FUZZ_SEED replays one; otherwise a new one each session.
RANDOM_SEED = int(os.environ.get("FEDPLAN_FUZZ_SEED") or secrets.randbelow(2**32))
#: A file to append every failure to as one JSON line (for collecting them across commands).
LOG = os.environ.get("FEDPLAN_FUZZ_LOG")

REPO = Path(__file__).resolve().parents[2]
FEDPLAN_ERROR = "fedplan: error: "
ARGPARSE_ERROR = re.compile(r"^fedplan( [\w-]+)+: error: ")
PROGRESS_BAR = re.compile(r"^\r.*\[[#.]+\] \d+/\d+ ")
WARNING = re.compile(r"\b[A-Z]\w*Warning\b")
#: An internal exception named in an error message: the command line's safety net (it turns an ArithmeticError into
#: one line) caught what no validation foresaw.
LEAKED = re.compile(r"\b(?:ZeroDivision|Overflow|FloatingPoint|Arithmetic|Type|Key|Index|Attribute|Recursion|Memory|"
                    r"Name|Assertion|UnboundLocal)Error\b")
#: How argparse's own usage errors begin (the top-level parser's prog is plain ``fedplan``).
ARGPARSE_MESSAGES = ("unrecognized arguments: ", "the following arguments are required: ", "argument ",
                     "ambiguous option: ", "one of the arguments ")
HARNESS_FILES = ("tests/fuzz/harness.py", "tests/fuzz/driver.py")


# -- running one input -----------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What a child did. ``status``: returned, exit (SystemExit), exception, hang, signal or lost (it exited
    without a result)."""

    status: str
    value: Any = None
    exception: str | None = None
    message: str | None = None
    traceback: str | None = None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    max_rss: int = 0
    signal: int | None = None
    exit_status: int | None = None
    value_error: bool = False


def _vm_size() -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


def _python_warnings() -> None:
    """Warnings as a plain ``python`` shows them: Python's default filters, printed on stderr."""
    warnings.resetwarnings()
    for category in (ResourceWarning, ImportWarning, PendingDeprecationWarning, DeprecationWarning):
        warnings.simplefilter("ignore", category)
    warnings.filterwarnings("default", category=DeprecationWarning, module="__main__")

    def show(message, category, filename, lineno, file=None, line=None):
        (file or sys.stderr).write(warnings.formatwarning(message, category, filename, lineno, line))

    warnings.showwarning = show


def _plain_logging() -> None:
    """No pytest log capture: a library's warning reaches stderr through logging's last-resort handler."""
    import logging

    logging.root.handlers = []
    logging.root.setLevel(logging.WARNING)


def _child(target: Callable[[], Any], workdir: Path, files: dict[str, Path], cap: float, memory: int) -> None:
    """Never returns: runs ``target`` and ``os._exit``s."""
    try:
        os.setpgid(0, 0)
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM):
            signal.signal(number, signal.SIG_DFL)
        os.chdir(workdir)
        # fedplan's own up-front time limit (planner/limits.py), well inside the cap: a simulation estimated to
        # run longer is refused by name before it starts, which is what a user with that limit should see
        os.environ["FEDPLAN_MAX_SECONDS"] = str(int(PRODUCT_SECONDS))
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        for fd, name in ((1, "stdout"), (2, "stderr")):
            os.dup2(os.open(files[name], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), fd)
        sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8")
        sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8")
        sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                      errors="backslashreplace", line_buffering=True)
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
        _python_warnings()
        _plain_logging()
        with contextlib.suppress(ImportError):
            from threadpoolctl import threadpool_limits

            threadpool_limits(1)
        limit = _vm_size() + memory
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_CAP, FILE_SIZE_CAP))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        hang = open(files["hang"], "w")  # noqa: SIM115 - open until os._exit
        faulthandler.enable(file=hang)
        faulthandler.dump_traceback_later(cap, exit=True, file=hang)
        signal.alarm(int(math.ceil(cap)) + 5)
    except BaseException:  # the set-up itself failed: say so, as a result
        Path(files["result"]).write_text(json.dumps({"status": "setup", "traceback": traceback.format_exc()}))
        os._exit(70)
    result: dict[str, Any]
    try:
        value = target()
        result = {"status": "returned", "value": value if isinstance(value, int | str | None) else repr(value)}
    except SystemExit as error:
        result = {"status": "exit", "value": error.code if isinstance(error.code, int | None) else repr(error.code)}
    except BaseException as error:
        result = _exception_result(error)
    try:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    except BaseException as error:  # e.g. output that UTF-8 cannot encode
        result = _exception_result(error)
    try:
        faulthandler.cancel_dump_traceback_later()
        signal.alarm(0)
        temporary = files["result"] + ".part"
        with open(temporary, "w") as handle:
            json.dump(result, handle)
        os.replace(temporary, files["result"])
    finally:
        os._exit(0)


def _exception_result(error: BaseException) -> dict:
    try:
        message = str(error)[:4000]
    except BaseException as inner:  # noqa: BLE001 - a __str__ that fails is reported, not raised
        message = f"<str() failed: {type(inner).__name__}>"
    return {"status": "exception", "exception": type(error).__qualname__, "message": message,
            "value_error": isinstance(error, ValueError), "traceback": traceback.format_exc()[-12_000:]}


def _wait(pid: int, timeout: float) -> tuple[int, Any, bool]:
    """``(status, rusage, timed_out)`` of child ``pid``, killing its process group after ``timeout`` seconds."""
    timed_out = False
    try:
        handle = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd: poll
        deadline = time.monotonic() + timeout
        while True:
            done, status, usage = os.wait4(pid, os.WNOHANG)
            if done:
                return status, usage, False
            if time.monotonic() > deadline:
                timed_out = True
                break
            time.sleep(0.01)
    else:
        try:
            poller = select.poll()
            poller.register(handle, select.POLLIN)
            timed_out = not poller.poll(timeout * 1000)
        finally:
            os.close(handle)
    if timed_out:
        _kill_group(pid)
    _, status, usage = os.wait4(pid, 0)
    return status, usage, timed_out


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _read(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8", errors="backslashreplace")
    except OSError:
        return ""


def run_isolated(target: Callable[[], Any], workdir: Path, *, cap: float = TIME_CAP, memory: int = MEMORY_CAP,
                 grace: float = GRACE) -> Outcome:
    """Run ``target()`` in a forked child in ``workdir`` under the caps; what it did."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    scratch = workdir.parent / f".{workdir.name}.harness"
    scratch.mkdir(exist_ok=True)
    files = {name: str(scratch / name) for name in ("stdout", "stderr", "hang", "result")}
    for name in files.values():
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        _child(target, workdir, files, cap, memory)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)
    try:
        status, usage, timed_out = _wait(pid, cap + grace)
    except BaseException:
        _kill_group(pid)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        raise
    seconds = time.monotonic() - start
    _kill_group(pid)  # whatever it started and left behind
    outcome = Outcome(status="lost", stdout=_read(Path(files["stdout"])), stderr=_read(Path(files["stderr"])),
                      seconds=seconds, max_rss=usage.ru_maxrss * 1024)
    if os.WIFSIGNALED(status):
        outcome.signal = os.WTERMSIG(status)
    elif os.WIFEXITED(status):
        outcome.exit_status = os.WEXITSTATUS(status)
    hang = _read(Path(files["hang"]))
    try:
        result = json.loads(Path(files["result"]).read_text())
    except (OSError, ValueError):
        result = None
    if result is not None:
        outcome.status = result["status"]
        outcome.value = result.get("value")
        outcome.exception = result.get("exception")
        outcome.message = result.get("message")
        outcome.traceback = result.get("traceback")
        outcome.value_error = bool(result.get("value_error"))
    elif timed_out or "Timeout (" in hang or outcome.signal == signal.SIGALRM:
        outcome.status = "hang"
        outcome.traceback = hang
    elif outcome.signal is not None:
        outcome.status = "signal"
        outcome.traceback = hang  # faulthandler's dump of a fatal signal, if any
    return outcome


# -- targets ---------------------------------------------------------------------------------------------------


def cli_target(argv: list[str]) -> Callable[[], int]:
    """``fedplan ARGV`` in-process: the exit code ``main`` returns (argparse's SystemExit is caught by the child)."""
    return lambda: cli.main(list(argv))


def api_target(request_type: type, kwargs: dict) -> Callable[[], str]:
    """``request_type(**kwargs).run()``; the report's JSON goes to stdout (and its table is rendered)."""

    def run() -> str:
        report = request_type(**kwargs).run()
        if not isinstance(report, Report):
            raise TypeError(f"run() returned a {type(report).__name__}, not a Report")
        text = report.to_json()
        report.to_table()
        sys.stdout.write(text)
        return "report"

    return run


# -- judging ---------------------------------------------------------------------------------------------------


@dataclass
class Failure:
    """One way an input failed: ``kind`` (traceback, hang, crash, exit code, stderr, message, warning, epsilon,
    output), a one-line ``detail``, a ``key`` that groups the same bug, the ``replay`` and diagnostics."""

    kind: str
    detail: str
    key: str
    replay: str = ""
    seconds: float = 0.0
    max_rss: int = 0
    extra: str = ""
    files: str = ""
    count: int = 1


def _frame(text: str, deepest: bool = True) -> str:
    """``path:line in function`` of the deepest (or, for faulthandler's most-recent-first dumps, the first) frame
    in this repository, else of any frame."""
    frames = re.findall(r'File "([^"]+)", line (\d+)(?:, in | in )(\S+)', text or "")
    if not deepest:
        frames = frames[::-1]
    ours = [item for item in frames if str(REPO) in item[0] and not item[0].endswith(HARNESS_FILES)] or frames
    if not ours:
        return "?"
    path, line, function = ours[-1]
    with contextlib.suppress(ValueError):
        path = str(Path(path).relative_to(REPO))
    return f"{path}:{line} in {function}"


def _entry(text: str) -> str:
    """The two outermost frames of fedplan below the command line and the request base in a faulthandler dump
    (most recent call first): what a run that hung was doing, whichever line it was on at the time."""
    frames = re.findall(r'File "([^"]+)", line (\d+)(?:, in | in )(\S+)', text or "")[::-1]
    ours = [f"{Path(path).relative_to(REPO)} in {function}" for path, _, function in frames
            if path.startswith(str(REPO)) and "/tests/" not in path and not path.endswith(("planner/cli.py",
                                                                                             "tasks/base.py"))]
    return " > ".join(ours[:2]) or "?"


def _main_thread_dump(text: str) -> str:
    """The first thread of a faulthandler dump (the one that was running: the main thread here)."""
    blocks = re.split(r"\n(?=(?:Current thread|Thread) 0x)", text or "")
    current = [block for block in blocks if block.startswith("Current thread")]
    threads = [block for block in blocks if block.startswith("Thread")]
    return (current or threads[-1:] or [text or ""])[0]


def _normalised(message: str) -> str:
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", message)
    text = re.sub(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", "#", text)
    return text[:90]


def _last_line(text: str | None) -> str:
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def _mib(size: int) -> str:
    return f"{size / 2**20:.0f} MiB"


def _names_one(message: str, names: Iterable[str]) -> bool:
    for name in names:
        if not name:
            continue
        if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", message):
            return True
    return False


def _file_names(paths: Iterable[str]) -> set[str]:
    found = set()
    for path in paths:
        base = os.path.basename(path.rstrip("/")) or path
        found |= {path, base, repr(base)[1:-1], repr(path)[1:-1]}
    return {name for name in found if name.strip()}


def bad_epsilons(value: Any, path: str = "", under: bool = False) -> list[str]:
    """``key=value`` of every number under a key containing ``epsilon`` that is NaN, infinite or negative."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            found += bad_epsilons(item, f"{path}.{key}" if path else str(key), under or "epsilon" in str(key).lower())
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found += bad_epsilons(item, f"{path}[{index}]", under)
    elif under and isinstance(value, int | float) and not isinstance(value, bool):
        if not (math.isfinite(value) and value >= 0):
            found.append(f"{path}={value!r}")
    return found


def _common(outcome: Outcome, make: Callable[..., Failure]) -> list[Failure]:
    """Failures that do not depend on how the target is judged: crashes, hangs, warnings."""
    failures = []
    if outcome.status == "hang":
        dump = _main_thread_dump(outcome.traceback or "")
        where = _frame(dump, deepest=False)
        failures.append(make("hang", f"still running after the time cap, at {where}", f"hang@{_entry(dump)}",
                             extra="\n".join(dump.splitlines()[:12])))  # innermost frames first
    elif outcome.status == "signal":
        name = signal.Signals(outcome.signal).name if outcome.signal else "?"
        why = {"SIGXFSZ": " (wrote a file over the file-size cap)", "SIGKILL": " (killed)"}.get(name, "")
        failures.append(make("crash", f"killed by {name}{why}", f"signal@{name}@{_frame(outcome.traceback or '')}",
                             extra=(outcome.traceback or "")[-3000:]))
    elif outcome.status in ("lost", "setup"):
        failures.append(make("crash", f"exited with status {outcome.exit_status} without a result",
                             f"lost@{outcome.exit_status}", extra=(outcome.traceback or outcome.stderr)[-3000:]))
    for line in outcome.stderr.splitlines():
        match = WARNING.search(line)
        if match:
            location = re.match(r"(.*?):(\d+): ", line)
            where = f"{location.group(1)}:{location.group(2)}" if location else ""
            with contextlib.suppress(ValueError):
                where = str(Path(where.rsplit(":", 1)[0]).relative_to(REPO)) + ":" + where.rsplit(":", 1)[1]
            failures.append(make("warning", f"{match.group(0)} on stderr: {line.strip()[:200]}",
                                 f"warning@{match.group(0)}@{where or _normalised(line)}"))
            break
    return failures


def _exception(outcome: Outcome, make: Callable[..., Failure]) -> Failure:
    where = _frame(outcome.traceback or "")
    message = _last_line(outcome.message)[:200]
    return make("traceback", f"{outcome.exception}: {message} (at {where})", f"traceback@{outcome.exception}@{where}",
                extra=(outcome.traceback or "")[-4000:])


def _check_json(outcome: Outcome, make: Callable[..., Failure]) -> list[Failure]:
    try:
        data = json.loads(outcome.stdout)
    except ValueError as error:
        return [make("output", f"the JSON output does not parse: {error}", "output@json",
                     extra=outcome.stdout[:1000])]
    bad = bad_epsilons(data)
    if bad:
        keys = sorted({re.sub(r"\[\d+\]", "[]", item.split("=")[0]) for item in bad})
        return [make("epsilon", f"epsilon not finite and ≥ 0: {', '.join(bad[:5])}", f"epsilon@{','.join(keys)}")]
    return []


@dataclass
class CliCase:
    """One command-line input: ``argv`` (after ``fedplan``), the files to write in its folder (relative path ->
    bytes, or None for a folder) and the file paths it names (its messages may name a file instead of an
    option)."""

    argv: list[str]
    files: dict[str, bytes | None] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)

    def replay(self) -> str:
        return "fedplan " + shlex.join(self.argv)

    def described_files(self) -> str:
        return describe_files(self.files)


@dataclass
class ApiCase:
    """One API input: a request class and the keyword arguments of its construction."""

    request_type: type
    kwargs: dict[str, Any]
    files: dict[str, bytes | None] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)

    def replay(self) -> str:
        text = ", ".join(f"{name}={_short_repr(value)}" for name, value in self.kwargs.items())
        return f"{self.request_type.__module__}.{self.request_type.__qualname__}({text}).run()"

    def described_files(self) -> str:
        return describe_files(self.files)


def _short_repr(value: Any, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"…<{len(text)} chars>"


def describe_files(files: dict[str, bytes | None]) -> str:
    return "; ".join(f"{name}: folder" if content is None else f"{name} = {_short_repr(content, 160)}"
                     for name, content in files.items())


def materialise(workdir: Path, files: dict[str, bytes | None]) -> None:
    """Write a case's files into its folder (paths are relative and stay inside it)."""
    for name, content in files.items():
        path = workdir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content is None:
            path.mkdir(exist_ok=True)
        else:
            path.write_bytes(content)


def _maker(case: CliCase | ApiCase, outcome: Outcome) -> Callable[..., Failure]:
    def make(kind: str, detail: str, key: str, extra: str = "") -> Failure:
        return Failure(kind=kind, detail=detail, key=key, replay=case.replay(), seconds=outcome.seconds,
                       max_rss=outcome.max_rss, extra=extra, files=case.described_files())

    return make


def cli_names(request_type: type) -> set[str]:
    """Every spelling of the command's options: field names, ``--flags``, further and deprecated flags."""
    names = set()
    for name, option in options(request_type).items():
        if option.cli:
            names |= {name, flag_name(name), *option.flags, *option.deprecated}
    return names


def judge_cli(case: CliCase, outcome: Outcome, request_type: type) -> list[Failure]:
    """The ways ``fedplan ARGV`` failed (see the module docstring of the fuzz tests for the rules)."""
    make = _maker(case, outcome)
    failures = _common(outcome, make)
    if outcome.status == "exception":
        return [_exception(outcome, make), *failures]
    if outcome.status not in ("returned", "exit"):
        return failures
    code = outcome.value
    if code not in (0, 2):
        failures.append(make("exit code", f"exit code {code!r} (only 0 or 2 are allowed)", f"exit@{code!r}",
                             extra=outcome.stderr[-2000:]))
        return failures
    if code == 2:
        # progress bars and "fedplan: note:" lines (a deprecated spelling that was accepted) are not the error
        lines = [line for line in outcome.stderr.split("\n")
                 if line and not PROGRESS_BAR.match(line) and not line.startswith("fedplan: note:")]
        if len(lines) != 1:
            failures.append(make("stderr", f"{len(lines)} lines on stderr with exit 2 (one expected)",
                                 f"stderr@{len(lines) > 1}@{_normalised(lines[0] if lines else '')[:40]}",
                                 extra=outcome.stderr[-2000:]))
        elif not lines[0].startswith("fedplan"):
            failures.append(make("message", f"exit 2 message does not start with 'fedplan': {lines[0][:200]}",
                                 f"prefix@{_normalised(lines[0])}"))
        else:
            message = lines[0][len(FEDPLAN_ERROR):] if lines[0].startswith(FEDPLAN_ERROR) else lines[0]
            leaked = LEAKED.search(message)
            if ARGPARSE_ERROR.match(lines[0]) or message.startswith(ARGPARSE_MESSAGES):
                pass  # argparse's usage errors name the argument
            elif leaked:
                failures.append(make("message", f"exit 2 message reports an unforeseen {leaked.group(0)} (a check is "
                                                f"missing): {lines[0][:240]}", f"leaked@{leaked.group(0)}@"
                                                                               f"{_normalised(message[leaked.end():])[:50]}"))
            elif not _names_one(message, cli_names(request_type)) and not any(
                    name in message for name in _file_names(case.paths)):
                failures.append(make("message", f"exit 2 message names no parameter: {lines[0][:240]}",
                                     f"unnamed@{_normalised(message)}"))
    elif "--json" in case.argv:
        failures += _check_json(outcome, make)
    return failures


def judge_api(case: ApiCase, outcome: Outcome) -> list[Failure]:
    """The ways ``RequestType(**kwargs).run()`` failed: anything but a Report or a ValueError naming a parameter."""
    make = _maker(case, outcome)
    failures = _common(outcome, make)
    if outcome.status == "exit":
        return [make("exit code", f"SystemExit({outcome.value!r}) from the API", f"exit@{outcome.value!r}"),
                *failures]
    if outcome.status == "exception":
        if not outcome.value_error:
            return [_exception(outcome, make), *failures]
        names = {item.name for item in dataclasses.fields(case.request_type)}
        message = outcome.message or ""
        if not _names_one(message, names) and not any(name in message for name in _file_names(case.paths)):
            failures.append(make("message", f"{outcome.exception} names no parameter: {message[:240]}",
                                 f"unnamed@{outcome.exception}@{_normalised(message)}"))
        return failures
    if outcome.status == "returned":
        failures += _check_json(outcome, make)
    return failures


# -- collecting and reporting ----------------------------------------------------------------------------------


@dataclass
class FailureLog:
    """Distinct failures of one test (grouped by key), with the number of inputs run."""

    label: str
    seed: int | None
    failures: dict[str, Failure] = field(default_factory=dict)
    inputs: int = 0
    seconds: float = 0.0

    def add(self, found: list[Failure]) -> None:
        for failure in found:
            if failure.key in self.failures:
                known = self.failures[failure.key]
                known.count += 1
                if len(failure.replay) < len(known.replay):  # keep the shortest replay
                    failure.count = known.count
                    self.failures[failure.key] = failure
            else:
                self.failures[failure.key] = failure
            if LOG:
                with open(LOG, "a") as handle:
                    handle.write(json.dumps({"test": self.label, "seed": self.seed, **dataclasses.asdict(failure)})
                                 + "\n")

    def report(self, replay_hint: str) -> str:
        lines = [f"{self.label}: {len(self.failures)} distinct failure(s) in {self.inputs} input(s), "
                 f"{self.seconds:.1f} s; {replay_hint}"]
        for failure in sorted(self.failures.values(), key=lambda item: (item.kind, item.key)):
            lines.append(f"[{failure.kind}] {failure.detail}  (x{failure.count})")
            lines.append(f"    replay: {failure.replay}")
            if failure.files:
                lines.append(f"    files (in the input's folder): {failure.files}")
            lines.append(f"    {failure.seconds:.2f} s, max RSS {_mib(failure.max_rss)}")
            if failure.extra:
                lines += ["    | " + line for line in failure.extra.strip().splitlines()[-12:]]
        return "\n".join(lines)
