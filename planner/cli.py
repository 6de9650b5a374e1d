"""The ``fedplan`` command line, generated from the request classes of :mod:`fedplan.planner.tasks`.

Each request class is one command (its ``command`` words); each declared field is one option (``--field-name``,
help from the declaration, the default from the dataclass). A command builds the request from the options that
were given, runs it and prints its :class:`~fedplan.planner.tasks.base.Report` as a readable table, or as one
JSON object with ``--json``. Bad input is reported on one line on stderr with exit code 2 (never a traceback).
This module holds no logic of any command.

    fedplan epsilon --sample-rate 0.01 --noise-multiplier 1.1 --steps 1e4 --delta 1e-5
    fedplan calibrate noise --target-epsilon 2 --target-delta 1e-5 --sample-rate 0.01 --steps 10000
    fedplan app                       # the Streamlit app (needs fedplan[app])
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import importlib.util
import os
import sys
import time
from collections.abc import Sequence

from fedplan.planner import limits
from fedplan.planner.tasks.base import Option, Request, flag_name, options, parse_count
from fedplan.planner.tasks.registry import GROUPS, TASKS

#: The release that drops the deprecated spellings.
DEPRECATED_UNTIL = "0.3"
DEPRECATED_DEST = "deprecated:"


class _OneLineParser(argparse.ArgumentParser):
    """argparse that reports usage errors on a single line with exit code 2."""

    def error(self, message: str):  # noqa: D401 - argparse API
        self.exit(2, f"{self.prog}: error: {message}\n")


def version() -> str:
    """The installed fedplan's version (``unknown`` in a checkout that was never installed)."""
    try:
        return importlib.metadata.version("fedplan")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def count_argument(text: str) -> int | float:
    """:func:`~fedplan.planner.tasks.base.parse_count` for argparse (its message becomes argparse's)."""
    try:
        return parse_count(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def real_argument(text: str) -> float:
    """A real number as users type it (``0.5``, ``1e-5``); other text gets a message that says what is expected."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number such as 0.5 or 1e-5; got {text!r}") from None


def size_argument(text: str) -> int:
    """A memory or file size as users type it (``2GiB``, ``512M``, ``1e9``)."""
    try:
        return limits.parse_size("size", text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a size such as 512MiB or 2GiB; got {text!r}") from None


def whole_argument(text: str) -> int:
    """A whole number of runs or seconds as users type it (``1e4``)."""
    try:
        return limits.parse_count("the value", text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


#: The limit options every command takes (planner/limits.py): how each is parsed and what it bounds.
LIMIT_OPTIONS = {
    "memory": (size_argument, "largest memory the command may allocate, e.g. 8GiB (default 2GiB, or "
                              "FEDPLAN_MAX_MEMORY)"),
    "file_size": (size_argument, "largest input file, e.g. 256MiB (default 64MiB, or FEDPLAN_MAX_FILE_SIZE)"),
    "runs": (whole_argument, "most runs (cells × seeds) of a sweep (default 10000, or FEDPLAN_MAX_RUNS)"),
    "segments": (whole_argument, "most distinct (sample_rate, noise_multiplier) pairs of a schedule (default 2000, "
                                 "or FEDPLAN_MAX_SEGMENTS)"),
    "seconds": (whole_argument, "longest estimated time of a simulation, in seconds (default 3600, or "
                               "FEDPLAN_MAX_SECONDS)"),
}
LIMIT_DEST = "limit:"


PARSERS = {"count": count_argument, "real": real_argument, "choice": str, "text": str}


def _help(option: Option, default) -> str:
    """The option's help with its default; ``%`` escaped (argparse formats help strings with ``%``)."""
    shown = default not in (None, False, dataclasses.MISSING) and not option.positional
    if shown and isinstance(default, tuple):
        default = " ".join(str(item) for item in default)
    text = f"{option.help} (default {default})" if shown else option.help
    return text.replace("%", "%%")


def add_request(parser: argparse.ArgumentParser, request_type: type[Request]) -> None:
    """One option per declared field of ``request_type`` (defaults stay with the request: an option that is not
    given is not passed)."""
    defaults = {item.name: item.default for item in dataclasses.fields(request_type)}
    for name, option in options(request_type).items():
        if not option.cli:
            continue
        settings: dict = {"help": _help(option, defaults[name])}
        if option.kind == "flag":
            settings["action"] = "store_true"
        else:
            settings["type"] = PARSERS[option.kind]
            if option.choices is not None:
                settings["choices"] = option.choices
            if option.multiple:
                settings["nargs"] = "+"
            if option.metavar is not None:
                settings["metavar"] = option.metavar
        if option.positional:
            parser.add_argument(name, **settings)
            continue
        if defaults[name] is dataclasses.MISSING:  # checked after old spellings are resolved (main)
            settings["help"] += " (required)"
        parser.add_argument(flag_name(name), *option.flags, dest=name, default=argparse.SUPPRESS, **settings)
        for old in option.deprecated:
            parser.add_argument(old, dest=f"{DEPRECATED_DEST}{old}:{name}", default=argparse.SUPPRESS,
                                **{**settings, "help": argparse.SUPPRESS})
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    group = parser.add_argument_group("limits (checked before any work starts)")
    for limit, (parse, text) in LIMIT_OPTIONS.items():
        group.add_argument(limits.OPTIONS[limit], dest=LIMIT_DEST + limit, type=parse, default=argparse.SUPPRESS,
                           metavar="SIZE" if parse is size_argument else "N", help=text.replace("%", "%%"))
    parser.set_defaults(request_type=request_type, command_parser=parser)


def build_parser() -> argparse.ArgumentParser:
    parser = _OneLineParser(prog="fedplan", description="Plan differentially private federated training.")
    parser.add_argument("--version", action="version", version=f"fedplan {version()}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)
    groups: dict[tuple[str, ...], argparse._SubParsersAction] = {(): commands}
    for request_type in TASKS:
        *path, leaf = request_type.command
        for depth in range(len(path)):
            prefix = tuple(path[:depth + 1])
            if prefix not in groups:
                group = groups[prefix[:-1]].add_parser(prefix[-1], help=GROUPS[prefix])
                groups[prefix] = group.add_subparsers(dest="_".join(prefix) + "_command", required=True,
                                                      parser_class=_OneLineParser)
        summary = request_type.summary.replace("%", "%%")
        sub = groups[tuple(path)].add_parser(leaf, help=summary, description=summary)
        add_request(sub, request_type)
    app = commands.add_parser("app", help="start the Streamlit app (needs fedplan[app]); further arguments go to "
                                          "streamlit run, e.g. --server.port 8502")
    app.add_argument("streamlit_arguments", nargs="*", help="options of streamlit run, e.g. --server.port 8502")
    return parser


def request_arguments(args: argparse.Namespace, notes: list[str]) -> dict:
    """The given options as request fields; a deprecated spelling is moved to its field and a note about it is
    appended to ``notes`` (printed once the command has succeeded, so that an error stays one line)."""
    given = {name: value for name, value in vars(args).items()
             if name not in ("command", "request_type", "command_parser", "json") and not name.endswith("_command")
             and not name.startswith(LIMIT_DEST)}
    for dest in [name for name in given if name.startswith(DEPRECATED_DEST)]:
        old, name = dest[len(DEPRECATED_DEST):].split(":")
        if name in given:
            raise ValueError(f"give {flag_name(name)} once ({old} is its deprecated spelling)")
        given[name] = given.pop(dest)
        args.old_spellings = {**getattr(args, "old_spellings", {}), name: old}
        notes.append(f"fedplan: note: {old} is deprecated here, use {flag_name(name)} (the old spelling goes in "
                     f"fedplan {DEPRECATED_UNTIL})")
    missing = [flag_name(item.name) for item in dataclasses.fields(args.request_type)
               if item.default is dataclasses.MISSING and item.name not in given]
    if missing:  # argparse's own words, from the command's parser (exit 2)
        args.command_parser.error(f"the following arguments are required: {', '.join(missing)}")
    return given


#: Seconds between two redraws of a :class:`ProgressBar` (its first and last states are always drawn).
BAR_REDRAW_SECONDS = 0.1


class ProgressBar:
    """A one-line bar on stderr: done of total, elapsed seconds and the time left at the current pace."""

    def __init__(self, label: str, unit: str = "rounds", stream=None):
        self.label, self.unit, self.stream = label, unit, stream or sys.stderr
        self.start = self.last = time.monotonic()
        self.open = False  # a bar is drawn and its line not ended

    def close(self) -> None:
        """End a bar's line that was left open (before an error message)."""
        if self.open:
            self.stream.write("\n")
            self.open = False

    def __call__(self, done: int, total: int) -> None:
        now, total = time.monotonic(), max(int(total), 1)
        if 0 < done < total and now - self.last < BAR_REDRAW_SECONDS:
            return
        self.last = now
        elapsed = now - self.start
        # the pace of the first second includes start-up: no estimate before it
        left = f", ~{elapsed * (total - done) / done:.1f} s left" if 0 < done < total and elapsed >= 1 else ""
        filled = 30 * min(done, total) // total
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] {done}/{total} {self.unit}, "
                          f"{elapsed:.1f} s{left}   ")
        self.open = done < total
        if not self.open:
            self.stream.write("\n")
        self.stream.flush()


#: Streamlit's server options for the app, the same as the checkout's ``.streamlit/config.toml`` (a test compares
#: them): uploads within fedplan's input-file limit (64 MiB, planner/limits.py), no usage statistics, and no
#: watching of source files. Streamlit's watcher resolves the path of every imported module (torch, dask, opacus,
#: ...) on the server's event loop after every script run: 1.4 s of a 2.4 s warm page load, measured with py-spy
#: (issue 20). Nor a full garbage collection after every script run (``runner.postScriptGC``): with torch, dask and
#: opacus imported it took 0.28 s of each run, holding the interpreter lock that the event loop needs; Python's own
#: generational collection still runs. Nor the log line of a keyed widget given a value its key also holds (every
#: keyed widget is given its value, app_pages/widgets.py ``kept_value``). Nor "magic" (no page draws a bare
#: expression; rewriting each script's syntax tree took 6-14 ms of a page's first run after the last session closed,
#: when Streamlit empties its script cache). A user's option of the same name wins.
APP_SERVER_OPTIONS = {"global.disableWidgetStateDuplicationWarning": "true", "server.maxUploadSize": "64",
                      "server.fileWatcherType": "none", "browser.gatherUsageStats": "false",
                      "runner.postScriptGC": "false", "runner.magicEnabled": "false"}


def start_app(arguments: Sequence[str]) -> int:
    """Replace this process by ``streamlit run`` on the packaged app (never returns when streamlit is there)."""
    if importlib.util.find_spec("streamlit") is None:
        raise ValueError("the app needs Streamlit: pip install 'fedplan[app]'")
    entry = importlib.util.find_spec("fedplan.app").origin
    given = {argument.split("=")[0][2:] for argument in arguments if argument.startswith("--")}
    defaults = [f"--{name}={value}" for name, value in APP_SERVER_OPTIONS.items() if name not in given]
    os.execv(sys.executable, [sys.executable, "-m", "streamlit", "run", entry, *defaults, *arguments])
    return 0  # pragma: no cover - execv does not return


def _run(args: argparse.Namespace, bar: ProgressBar | None, notes: list[str]):
    if args.command == "app":
        return start_app(args.streamlit_arguments)
    changed = {name[len(LIMIT_DEST):]: value for name, value in vars(args).items() if name.startswith(LIMIT_DEST)}
    with limits.using(**changed):
        request = args.request_type(**request_arguments(args, notes))
        if bar is not None:
            bar.label, bar.unit = " ".join(request.command[1:] or request.command), request.progress_unit
        return request.run(progress=bar)


def _with_spelling(message: str, old_spellings: dict[str, str]) -> str:
    """A message about a field the user gave by its deprecated spelling says so: ``noise_std (given as --sigma)
    must be …``."""
    for name, old in old_spellings.items():
        if message.startswith(name + " "):
            return f"{name} (given as {old}){message[len(name):]}"
    return message


def _error_line(message: str) -> None:
    """``fedplan: error: message`` on stderr as one line: a line break inside it (a file named ``line⏎break.csv``
    that the message quotes) is written ``\\n``."""
    one_line = message.replace("\r", "\\r").replace("\n", "\\n")
    print(f"fedplan: error: {one_line}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    if argv[:1] == ["app"] and not {"-h", "--help"} & set(argv[1:]):
        # everything after ``app`` belongs to ``streamlit run`` (argparse would take its --options as ours)
        args = argparse.Namespace(command="app", streamlit_arguments=argv[1:], json=False)
    else:
        args = parser.parse_args(argv)
    bar, notes = (None if args.json else ProgressBar(" ".join(argv[:1]))), []
    try:
        report = _run(args, bar, notes)
    except ValueError as error:
        if bar is not None:
            bar.close()
        _error_line(_with_spelling(str(error), getattr(args, "old_spellings", {})))
        return 2
    except (ModuleNotFoundError, ArithmeticError, OSError) as error:
        if bar is not None:
            bar.close()
        if isinstance(error, ArithmeticError):  # an overflow no validation foresaw: still one line, no traceback
            words = getattr(getattr(args, "request_type", None), "command", ()) or tuple(argv[:1])
            inputs = " ".join(argv[len(words):]) or "(defaults)"
            error = (f"the inputs {inputs} are outside the range the formulas of fedplan {' '.join(words)} can "
                     f"evaluate ({type(error).__name__}: {error}); a range check is missing, please report this "
                     "command line")
        elif isinstance(error, OSError):
            # a file that vanished or could not be written during the run (requests check paths up front)
            error = f"{error.strerror or error}" + (f": {error.filename}" if error.filename else "")
        # ModuleNotFoundError: an optional dependency (planner/extras.py names the extra to install)
        _error_line(str(error))
        return 2
    for note in notes:
        print(note, file=sys.stderr)
    try:
        print(report.to_json() if args.json else report.to_table())
        sys.stdout.flush()
    except BrokenPipeError:  # e.g. `fedplan ... | head`: the reader has gone, which is not an error
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - keeps Python's exit-time flush quiet
    return 0


if __name__ == "__main__":
    sys.exit(main())
