"""The task layer's two types: a :class:`Request` per user action and the :class:`Report` it answers with.

A request is a frozen, keyword-only dataclass. Each field is declared with one of :func:`count`, :func:`real`,
:func:`choice`, :func:`flag` or :func:`text`, which carry the field's help text, its allowed range and how the
command line spells it. Construction is the one validation point: every field is checked against its declared
range (a ``ValueError`` names the parameter, the value and the range, the same words in the API, the CLI and the
app), then the request's own :meth:`Request.check` tests the relations between fields. ``run()`` does the work and
returns a :class:`Report`.

The command line (:mod:`fedplan.planner.cli`) is generated from these declarations, the app's pages build the same
requests from widgets, and a sweep cell is ``dataclasses.replace(request, **point)``.
"""

from __future__ import annotations

import abc
import dataclasses
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field
from typing import Any, ClassVar

from fedplan.bounds.theorem import Hypothesis
from fedplan.bounds.validation import check_choice, check_int, check_real
from fedplan.planner.display import GUARANTEE, NO_GUARANTEE, failing_hypotheses, guarantee_fields, guarantee_text

#: ``progress(done, total)``: called by long requests (simulations, validations, sweeps) as work completes.
Progress = Callable[[int, int], None]

KINDS = ("count", "real", "choice", "flag", "text", "object")


@dataclass(frozen=True)
class Option:
    """How one request field is checked and spelled on the command line.

    ``kind`` is ``count`` (a whole number; ``1e4`` is accepted everywhere), ``real``, ``choice``, ``flag`` (a
    boolean switch), ``text`` or ``object`` (API only: a value such as a list of segments or an array, checked by
    ``checker(name, value)``). ``multiple`` takes one or more values (a tuple). ``flags`` are further spellings
    with the same meaning (e.g. ``-q``); ``deprecated`` are old spellings kept for one release, with a note on
    stderr when used. ``positional`` makes the field a positional argument. ``cli=False`` keeps a field out of
    the command line (e.g. arrays the app passes in).
    """

    kind: str
    help: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] | None = None
    multiple: bool = False
    flags: tuple[str, ...] = ()
    deprecated: tuple[str, ...] = ()
    positional: bool = False
    metavar: str | None = None
    cli: bool = True
    checker: Callable[[str, Any], Any] | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise TypeError(f"option kind must be one of {KINDS}; got {self.kind!r}")
        if self.kind == "object" and (self.cli or self.checker is None):
            raise TypeError("an object option is API-only (cli=False) and needs a checker")
        if not self.help.strip():
            raise TypeError("every option needs help text")

    def check(self, name: str, value: Any) -> Any:
        """``value`` converted to the field's type, or a ``ValueError`` naming ``name``, the value and the range."""
        if self.multiple:
            values = list(value) if isinstance(value, list | tuple) else [value]
            if not values:
                raise ValueError(f"{name} needs at least one value")
            return tuple(self._check_one(name if len(values) == 1 else f"{name}[{i}]", item)
                         for i, item in enumerate(values))
        return self._check_one(name, value)

    def _check_one(self, name: str, value: Any) -> Any:
        if self.kind == "count":
            return check_int(name, value, low=_whole(self.low), high=_whole(self.high))
        if self.kind == "real":
            return check_real(name, value, low=self.low, high=self.high, low_open=self.low_open,
                              high_open=self.high_open)
        if self.kind == "choice":
            return check_choice(name, value, self.choices)
        if self.kind == "object":
            return self.checker(name, value)
        if self.kind == "flag":
            if not isinstance(value, bool):
                raise ValueError(f"{name} must be true or false; got {value!r}")
            return value
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name} must be a non-empty string; got {value!r}")
        return value


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _explaining(run):
    """``run`` with its ``ValueError`` passed through :meth:`Request.explained`."""
    def explaining_run(self, *, progress: Progress | None = None) -> Report:
        try:
            return run(self, progress=progress)
        except ValueError as error:
            raise self.explained(error) from None

    explaining_run.explains_errors = True
    explaining_run.__doc__, explaining_run.__name__, explaining_run.__qualname__ = run.__doc__, run.__name__, \
        run.__qualname__
    return explaining_run


def _shown_value(value) -> str:
    text = " ".join(str(item) for item in value) if isinstance(value, tuple) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _whole(bound: float | None) -> int | None:
    return None if bound is None else int(bound)


def _declare(kind: str, default: Any, help: str, **settings) -> Any:
    if default is ...:  # ``count(..., help=...)`` reads as "required"
        default = MISSING
    if isinstance(default, list):
        default = tuple(default)
    return field(default=default, metadata={"option": Option(kind=kind, help=help, **settings)})


#: The largest value of a count field that declares no bound of its own: no run has 10¹² workers, rounds or
#: seeds, and an exact 309-digit answer to ``--workers 1e308`` helps no one.
MAX_COUNT = 10**12


def count(default: Any = MISSING, *, help: str, low: int | None = None, high: int | None = MAX_COUNT,
          **settings) -> Any:
    """A whole-number field in ``[low, high]`` (``high`` at most :data:`MAX_COUNT` unless declared); ``10000``,
    ``1e4`` and ``10000.0`` all mean 10 000."""
    return _declare("count", default, help, low=low, high=high, **settings)


def real(default: Any = MISSING, *, help: str, low: float | None = None, high: float | None = None,
         low_open: bool = False, high_open: bool = False, **settings) -> Any:
    """A finite real field in the interval ``low``..``high`` (each end closed unless ``*_open``)."""
    return _declare("real", default, help, low=low, high=high, low_open=low_open, high_open=high_open, **settings)


def choice(default: Any = MISSING, *, help: str, choices: tuple[str, ...], **settings) -> Any:
    """One of ``choices``."""
    return _declare("choice", default, help, choices=tuple(choices), **settings)


def flag(*, help: str, **settings) -> Any:
    """A boolean switch, off by default (``--name`` turns it on)."""
    return _declare("flag", False, help, **settings)


def text(default: Any = MISSING, *, help: str, **settings) -> Any:
    """A free string: a file name, a data-set name, an expression such as ``1/e``."""
    return _declare("text", default, help, **settings)


def api_value(default: Any = None, *, help: str, checker: Callable[[str, Any], Any]) -> Any:
    """An API-only field (not on the command line), converted or refused by ``checker(name, value)``."""
    return field(default=default, compare=False,
                 metadata={"option": Option(kind="object", help=help, cli=False, checker=checker)})


@dataclass(frozen=True)
class OneOf:
    """Fields that exclude each other; with ``required``, exactly one of them must be given."""

    names: tuple[str, ...]
    required: bool = True


def option_of(item: dataclasses.Field) -> Option | None:
    return item.metadata.get("option")


def options(request_type: type[Request]) -> dict[str, Option]:
    """The declared fields of a request type, by name, in declaration order."""
    return {item.name: option_of(item) for item in dataclasses.fields(request_type) if option_of(item) is not None}


def flag_name(name: str) -> str:
    """The command-line spelling of a field: ``noise_multiplier`` -> ``--noise-multiplier``."""
    return "--" + name.replace("_", "-")


@dataclass(frozen=True, kw_only=True)
class Request(abc.ABC):
    """One user action: declared fields, validated once at construction, and :meth:`run`.

    Subclasses set ``command`` (the words of its ``fedplan`` command, e.g. ``("calibrate", "noise")``),
    ``summary`` (one line of help), optionally ``one_of`` (exclusive fields), ``progress_unit`` and ``check()``
    (relations between fields), and implement ``run(progress=None) -> Report``; a long request calls
    ``progress(done, total)`` as it goes.
    """

    command: ClassVar[tuple[str, ...]] = ()
    summary: ClassVar[str] = ""
    one_of: ClassVar[tuple[OneOf, ...]] = ()
    #: What a progress bar counts for this request (``rounds``, ``runs``, ``seeds``…).
    progress_unit: ClassVar[str] = "rounds"

    def __post_init__(self) -> None:
        for item in dataclasses.fields(self):
            option = option_of(item)
            value = getattr(self, item.name)
            if option is None or (value is None and item.default is None):
                continue
            object.__setattr__(self, item.name, option.check(item.name, value))
        for group in self.one_of:
            given = [name for name in group.names if self.given(name)]
            if len(given) > 1 or (group.required and not given):
                raise ValueError(f"give {'exactly' if group.required else 'at most'} one of "
                                 f"{', '.join(group.names)}; got {', '.join(given) if given else 'none'}")
        try:
            self.check()
        except ValueError as error:
            raise self.explained(error) from None

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "run" in cls.__dict__ and not getattr(cls.run, "explains_errors", False):
            cls.run = _explaining(cls.run)

    def explained(self, error: ValueError) -> ValueError:
        """``error`` as the user should read it: a message that names one of this request's fields is kept; one
        about internal quantities only (``rate must be …``, from the formulas the request calls) gets the inputs
        that led to it appended, so that it names what the user gave. The exception's type (e.g.
        :class:`~fedplan.planner.limits.LimitError`) is kept."""
        message = str(error)
        fields = {item.name for item in dataclasses.fields(self)}
        if fields & set(_IDENTIFIER.findall(message)) or "(inputs: " in message:
            return error
        defaults = {item.name: item.default for item in dataclasses.fields(self)}
        given = [f"{name}={_shown_value(value)}" for name, value in self.inputs().items()
                 if defaults[name] is MISSING or value != defaults[name]]
        return type(error)(f"{message} (inputs: {', '.join(given) if given else 'the defaults'})")

    def given(self, name: str) -> bool:
        """True if the field holds a value (not None, not an unset flag)."""
        value = getattr(self, name)
        return value is not None and value is not False

    def check(self) -> None:  # noqa: B027 - an optional hook: most requests need no relation checked
        """Relations between fields (one field's range is checked by its declaration); raise ``ValueError``."""

    @abc.abstractmethod
    def run(self, *, progress: Progress | None = None) -> Report:
        """Do the work and answer; a long request calls ``progress(done, total)`` as it goes."""

    def inputs(self) -> dict:
        """The request's fields as plain values (for reports, exports and sweep rows)."""
        return {item.name: getattr(self, item.name) for item in dataclasses.fields(self)
                if option_of(item) is not None and option_of(item).cli}


def parse_count(text: str) -> int | float:
    """A whole number as users type it: ``10000``, ``1e4`` or ``10000.0`` (a fraction is left for the request
    to refuse by name)."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"must be a whole number such as 10000 or 1e4; got {text!r}") from None
    # beyond 2^53 a float is not the integer typed (1e23 -> 99999999999999991611392): left for check_int to refuse
    return int(value) if math.isfinite(value) and value.is_integer() and abs(value) <= 2**53 else value



def rounds_progress(progress: Progress | None, total: int) -> Callable[[int], None] | None:
    """An engine's ``progress(done)`` callback that reports ``progress(done, total)``."""
    if progress is None:
        return None
    return lambda done: progress(done, total)


@dataclass(frozen=True)
class Report:
    """A request's answer: the output mapping, the rich result behind it and how it reads as a table.

    ``values`` is the JSON output (numbers, the ``statement`` in plain English and, for theorem-backed numbers,
    ``hypotheses`` and ``source``); ``table`` is what the readable table shows when it differs from ``values``;
    ``result`` is the object the numbers came from (a plan, an accounting result, a simulation), for the app's
    charts and for API users.

    Values that carry ``hypotheses`` get ``valid`` (every hypothesis holds) and ``guarantee`` ("guarantee" or "no
    guarantee") here, for every request at once (:func:`~fedplan.planner.display.guarantee_fields`); the table then
    shows a ``guarantee  no guarantee (failing: …)`` line when a hypothesis fails. Values whose own ``guarantee``
    says something else (a plan's: the unit its tight ε protects, which holds whatever the paper's hypotheses) keep
    it, and the verdict on the paper's numbers is ``paper_guarantee``.
    """

    values: Mapping
    result: Any = field(default=None, compare=False, repr=False)
    table: Mapping | None = None

    def __post_init__(self) -> None:
        if "hypotheses" in self.values:
            fields = guarantee_fields(self.values["hypotheses"])
            object.__setattr__(self, "values", {**self.values, "valid": fields["valid"],
                                                self._verdict_key(): fields["guarantee"]})

    def _verdict_key(self) -> str:
        """``guarantee``, or ``paper_guarantee`` when the values' own ``guarantee`` is not a theorem's verdict."""
        own = self.values.get("guarantee", GUARANTEE)
        return "guarantee" if own in (GUARANTEE, NO_GUARANTEE) else "paper_guarantee"

    def __getitem__(self, key: str) -> Any:
        return self.values[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    @property
    def statement(self) -> str:
        return self.values.get("statement", "")

    @property
    def source(self) -> str:
        return self.values.get("source", "")

    @property
    def hypotheses(self) -> tuple[Hypothesis, ...]:
        return tuple(Hypothesis(**item) for item in self.values.get("hypotheses", ()))

    def to_dict(self) -> dict:
        return dict(self.values)

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    def to_table(self) -> str:
        """Aligned ``key  value`` lines (first ``guarantee  no guarantee (failing: …)`` when a hypothesis fails), the
        hypotheses (holds / FAILS) and the statement last."""
        shown = self.values if self.table is None else self.table
        skip = {"segments", "statement", "fixed", "source", "value", "hypotheses"}
        rows = []
        if "hypotheses" in self.values:  # the verdict once, first, and only when a hypothesis fails
            verdict = self._verdict_key()
            skip |= {"valid", verdict}
            if failing_hypotheses(self.values["hypotheses"]):
                rows.append((verdict, guarantee_text(self.values["hypotheses"])))
        for key, value in shown.items():
            if key in skip or value is None:
                continue
            if isinstance(value, Mapping):
                rows += [(f"{key} {inner}", item) for inner, item in value.items()]
            else:
                rows.append((key, value))
        rows += [(f"fixed {key}", value) for key, value in shown.get("fixed", {}).items()]
        width = max((len(key) for key, _ in rows), default=0)
        lines = [f"{key.ljust(width)}  {_table_value(value)}" for key, value in rows]
        checks = [f"{'holds' if h['holds'] else 'FAILS'}  {h['name']}: {h['detail']} ({h['source']})"
                  for h in shown.get("hypotheses", [])]
        if checks:
            lines += ["", "hypotheses:"] + [f"  {line}" for line in checks]
        return "\n".join(lines + ["", shown.get("statement", self.statement)])


def _table_value(value: Any) -> str:
    """Numbers in full (repr): rounding a printed ε could show less than the certified bound."""
    return repr(value) if isinstance(value, float) else str(value)
