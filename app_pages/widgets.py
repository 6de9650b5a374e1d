"""The app's one way from widgets to a request (:mod:`fedplan.planner.tasks`), and bad input shown where it was typed.

A page draws the inputs of a request through a :class:`Form`: ``form.field(name, label)`` draws the widget of one
declared field (a text box for a count or a real, parsed like the command line so ``1e4`` works; a radio or a
select box for a choice; a checkbox for a flag; the field's help text as the widget's help) and keeps an
``st.empty()`` placeholder under it. ``form.build(**values)`` constructs the request from the widgets' values: the
request's ``ValueError`` (the same message the API and the CLI give) is shown with ``st.error`` under the widget of
the field it names, or at the top of the form, and ``build`` returns None. ``form.answer(request)`` runs a request
through :func:`report` (``st.cache_data`` keyed on the request's type and field values) and shows an error of the
run the same way.

This module is not a page (:mod:`fedplan.app` lists the pages); it holds no formula and no recipe.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import streamlit as st

from fedplan.app_pages import background
from fedplan.bounds.validation import check_int, check_real
from fedplan.planner.display import NO_GUARANTEE, failing_hypotheses
from fedplan.planner.export import FORMATS, SUFFIXES, refusal, render
from fedplan.planner.tasks.base import Option, Progress, Report, Request, options, parse_count

#: The field a message is about: its first word (``clients must be …``, ``upload_epsilon[1] must be …``,
#: ``r0 = 0.37 at …``); a ``give …`` message names its fields further on.
_FIRST_WORD = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)")
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MISSING = re.compile(r"\(missing ([^)]*)\)")
#: What st.markdown (and st.caption, st.write of a string) reads as markup: emphasis, code, links, math, tables.
_MARKUP = re.compile(r"([\\`*_\[\]<>#|~$])")
#: Where a label's detail starts: "Batch size B (q = B/N)" and "r0: r0(sigma), 1/e or a number" name their box by
#: "Batch size B" and "r0" in a message.
_LABEL_DETAIL = re.compile(r" \(|: ")


def literal(text: str) -> str:
    """``text`` escaped for ``st.markdown``/``st.caption``: it shows as typed (a statement's ``b*epsilon_k`` and
    ``theta*`` are no italics, ``$`` starts no formula)."""
    return _MARKUP.sub(r"\\\1", text)


def as_text(value: Any) -> str:
    """A declared default as a text box shows it: ``1e-06`` as ``1e-6``, ``50000.0`` as ``50000``."""
    if value is None or value is dataclasses.MISSING:
        return ""
    if isinstance(value, tuple | list):
        return " ".join(as_text(item) for item in value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return re.sub(r"e([+-])0*(\d)", lambda match: "e" + match.group(1).replace("+", "") + match.group(2),
                      repr(value))
    return str(value)


def parse(name: str, option: Option, text: str, *, optional: bool = False) -> Any:
    """The value of a text box for a field: a count by :func:`~fedplan.planner.tasks.base.parse_count`
    (``1e4`` is 10000), a real by ``float``; a ``ValueError`` naming the field if the text is not a number. An
    empty box of an ``optional`` field is None; a field taking several values reads them split by spaces or commas."""
    if optional and not text.strip():
        return None
    if option.multiple:
        return tuple(parse(name, dataclasses.replace(option, multiple=False), part)
                     for part in re.split(r"[\s,]+", text.strip()) or [""])
    if option.kind == "count":
        try:
            return parse_count(text.strip())
        except ValueError as error:
            raise ValueError(f"{name} {error}") from None
    if option.kind == "real":
        try:
            return float(text)
        except ValueError:
            raise ValueError(f"{name} must be a number; got {text!r}") from None
    return text


def named_field(message: str, names: Sequence[str]) -> str | None:
    """The field among ``names`` that an error message is about: its first word, or for ``give …`` messages the
    first of ``names`` its "(missing …)" part names (the box left empty), else the first it mentions; None if it
    names none of them."""
    first = _FIRST_WORD.match(message)
    if first and first.group(1) in names:
        return first.group(1)
    if message.startswith("give "):
        missing = _MISSING.search(message)
        for part in ((missing.group(1),) if missing else ()) + (message,):
            found = next((word for word in _WORDS.findall(part) if word in names), None)
            if found is not None:
                return found
    return None


def changed_field(current: Mapping, previous: Mapping | None) -> str | None:
    """The one field whose value differs between ``current`` and ``previous`` (the inputs the page last answered),
    or None if none or several did: the box a refusal naming several boxes belongs under (the one just changed)."""
    if previous is None:
        return None
    changed = [name for name, value in current.items() if name in previous and previous[name] != value]
    return changed[0] if len(changed) == 1 else None


def box_name(label: str) -> str:
    """A widget's label without its detail in parentheses or after a colon: how a message names the box."""
    return _LABEL_DETAIL.split(label, maxsplit=1)[0]


def labelled(message: str, labels: dict[str, str]) -> str:
    """``message`` (a request's ``ValueError``: field name, value, allowed range) in the page's words: each field of
    ``labels`` it names is replaced by its box's label (``n_samples must be …`` → ``Examples must be …``, an item
    ``upload_epsilon[1]`` → ``ε per upload (value 2)``). A field name is replaced where it can be nothing else: it
    has an underscore, it starts the message, it is followed by ``must`` or ``=``, it follows "raise", "lower", a
    comma or "or" (a remedy's list: "lower batch_size, clients or epochs"), or the message is a ``give …`` list of
    fields; so "steps" stays a word in "… is 10⁹ steps" and "clients" in "use fewer clients"."""
    if not labels:
        return message
    listing = message.startswith("give ")
    remedy = ("raise ", "lower ", ", ", " or ")
    pattern = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, sorted(labels, key=len, reverse=True)))
                         + r")(?:\[(\d+)\])?(?![A-Za-z0-9_])(\s*=(?!=)\s*)?(?=(\s+must\b)?)")

    def name(match: re.Match) -> str:
        field, index, assigned, must = match.groups()
        listed = message[:match.start()].endswith(remedy)
        if not ("_" in field or match.start() == 0 or assigned or must or listing or listed):
            return match.group(0)
        return labels[field] + ("" if index is None else f" (value {int(index) + 1})") + (" = " if assigned else "")

    return pattern.sub(name, message)


def kept_value(key: str | None, default: Any) -> Any:
    """The value a widget shows: what its session-state key holds (an earlier run's value, or a one-click fix's),
    else ``default``. Every run passes it to the widget as its default (``value=``, ``index=``): a widget drawn
    without one after its first run reached the browser with an empty default, and a tab that had not kept the first
    run's value (a rerun overtook the first run's drawing) showed its box empty while the server held the value; the
    next change then sent ``''`` for it (tests/test_browser_errors.py). When a one-click fix has set the key, Streamlit
    would log that the widget "was created with a default value but also had its value set via the Session State
    API": ``global.disableWidgetStateDuplicationWarning`` (.streamlit/config.toml) turns that off, the state's value
    being the one passed."""
    return st.session_state[key] if key is not None and key in st.session_state else default


@st.cache_data(show_spinner=False, max_entries=128)
def _cached_report(kind: str, fields: tuple, data: tuple, _request: Request) -> Report:
    return _request.run()


def report(request: Request, *, progress: Progress | None = None) -> Report:
    """``request.run()``, cached on the request's type and field values (and the arrays or segments an API-only
    field holds: a request holding arrays compares by identity). With ``progress`` it runs uncached."""
    if progress is not None:
        return request.run(progress=progress)
    return _cached_report(_type_name(request), tuple(request.inputs().items()), _api_data(request), request)


def _type_name(request: Request) -> str:
    kind = type(request)
    return f"{kind.__module__}.{kind.__qualname__}"


def _api_data(request: Request) -> tuple:
    """The values of the request's API-only fields (arrays, segments: no widget and no command-line option)."""
    return tuple(getattr(request, name) for name, option in options(type(request)).items() if not option.cli)


class Form:
    """The widgets of one request type's fields, their values, and errors shown under them.

    ``request_type`` gives the declarations (help, default, choices); a page may build another request type from
    the same widgets (``build(OtherType)``) when it shares the fields. A message is shown in the page's words
    (:func:`labelled`): each field it names by the label of the box the form drew for it, or by ``labels`` (a
    field the page names without a box, e.g. the parameter a calibration solves for).
    """

    def __init__(self, request_type: type[Request], *, labels: dict[str, str] | None = None):
        self.request_type = request_type
        self.top = st.empty()
        self.slots: dict[str, Any] = {}
        self.values: dict[str, Any] = {}
        self.problems: dict[str, str] = {}
        self.labels: dict[str, str] = dict(labels or {})

    def field(self, name: str, label: str, *, default: Any = None, request_type: type[Request] | None = None,
              choices: Sequence | None = None, widget: str = "radio", format_func: Callable = str,
              limit: tuple[float, float] | None = None, key: str | None = None) -> Any:
        """Draw the widget of field ``name`` with ``label`` (``default``: the page's, else the declared one) and
        return its value (None if its text is not a number: :meth:`build` then shows why). ``choices`` turns a
        text field into a choice among them; ``widget`` is ``radio`` or ``selectbox`` for a choice; ``limit`` is
        the page's own, narrower range of a number (e.g. so that a simulation finishes in seconds)."""
        kind = request_type or self.request_type
        option = options(kind)[name]
        declared = next(item.default for item in dataclasses.fields(kind) if item.name == name)
        shown = declared if default is None else default
        choices = list(option.choices if choices is None else choices) if option.kind == "choice" or choices else None
        self.problems.pop(name, None)
        self.labels[name] = box_name(label)
        if choices is not None:
            draw = st.radio if widget == "radio" else st.selectbox
            extra = {"horizontal": True} if widget == "radio" else {}
            index = next((choices.index(value) for value in (kept_value(key, shown), shown) if value in choices), 0)
            value = draw(label, choices, help=option.help, format_func=format_func, key=key, index=index, **extra)
        elif option.kind == "flag":
            value = st.checkbox(label, help=option.help, key=key, value=bool(kept_value(key, shown)))
        else:
            text = st.text_input(label, help=option.help, key=key,
                                 value=kept_value(key, shown if isinstance(shown, str) else as_text(shown)))
            try:
                value = parse(name, option, text, optional=declared is None)
                if limit is not None and value is not None:
                    check = check_int if option.kind == "count" else check_real
                    value = check(name, value, low=limit[0], high=limit[1])
            except ValueError as error:
                self.problems[name], value = str(error), None
        self.slots[name] = st.empty()
        self.values[name] = value
        return value

    def count(self, name: str, label: str, default: str, *, help: str, low: int | None = None,
              high: int | None = None, key: str | None = None) -> int | None:
        """A page's own whole number that is no request field (e.g. how many seeds to run), parsed like a count and
        checked in [low, high]; None if refused (:meth:`build` then shows why)."""
        text = st.text_input(label, help=help, key=key, value=kept_value(key, default))
        self.labels[name] = box_name(label)
        try:
            value = check_int(name, parse(name, Option(kind="count", help=help), text), low=low, high=high)
        except ValueError as error:
            self.problems[name], value = str(error), None
        self.slots[name] = st.empty()
        return value

    def error(self, message: str, *, field: str | None = None, otherwise: str | None = None) -> None:
        """Show ``message`` in the page's words (:func:`labelled`) with ``st.error`` under the widget of ``field``
        (or of the field it names, or else of ``otherwise``: the box just changed, :func:`changed_field`), else at the
        top of the form."""
        name = field if field in self.slots else named_field(message, list(self.slots))
        if name is None and otherwise in self.slots:
            name = otherwise
        (self.slots[name] if name is not None else self.top).error(labelled(message, self.labels))

    def show_problems(self, skip=()) -> bool:
        """Show every text of this form that is not a number (or outside the page's limit) under its box; True if
        there was one (nothing is built from a form with a refused box)."""
        problems = [name for name in self.problems if name not in skip]
        for name in problems:
            self.slots[name].error(labelled(self.problems[name], self.labels))
        return bool(problems)

    def build(self, request_type: type[Request] | None = None, /, **values) -> Request | None:
        """The request from the widgets of its fields and ``values`` (which win), or None after showing why not."""
        kind = request_type or self.request_type
        names = options(kind)
        if self.show_problems(skip=values):
            return None
        given = {name: value for name, value in self.values.items() if name in names}
        try:
            return kind(**{**given, **values})
        except ValueError as error:
            self.error(str(error))
            return None

    def vary(self, request: Request) -> Request | None:
        """``request`` with the fields this form drew set to their widgets' values (a chart's own K, say), or None
        after showing why not."""
        if self.show_problems():
            return None
        try:
            return dataclasses.replace(request, **self.values)
        except ValueError as error:
            self.error(str(error))
            return None

    def answer(self, request: Request | None, *, progress: Progress | None = None) -> Report | None:
        """:func:`report` of ``request`` (None passes through), or None after showing the run's ``ValueError``."""
        if request is None:
            return None
        try:
            return report(request, progress=progress)
        except ValueError as error:
            self.error(str(error))
            return None


def _background_key(request: Request) -> tuple | None:
    """What a request's report depends on, as a key of :mod:`fedplan.app_pages.background`; None for a request holding
    data (arrays, segments: compared by identity, so they are run in the script instead)."""
    if any(value is not None for value in _api_data(request)):
        return None
    return ("form", _type_name(request), tuple(request.inputs().items()))


@dataclasses.dataclass(frozen=True)
class Background:
    """A request's report computed in the background: the report (None while it is computed or when it was
    refused), whether it is still being computed, and the refusal (a ``ValueError``)."""

    report: Report | None
    pending: bool = False
    error: ValueError | None = None

    @property
    def failure(self) -> str | None:
        """The refusal's message, or None."""
        return None if self.error is None else str(self.error)


def answer_in_background(form: Form, request: Request | None, label: str, *, role: str = "",
                         show_error: bool = True) -> Background:
    """``form.answer(request)`` computed in a child process (:func:`fedplan.app_pages.background.answer`: a script run
    waits 0.1 s for it, then shows a progress line with Cancel and ends). ``role`` tells apart two requests of one
    type a page computes side by side (each has its own progress line; the same one would stop the other's work).
    A request holding data (:func:`_background_key`) is run in the script, under a spinner. A refusal is shown
    under the form unless ``show_error`` is False (the page words it itself)."""
    if request is None:
        return Background(None)
    key = _background_key(request)
    try:
        if key is None:
            with st.spinner(f"{label}…"):
                return Background(report(request))
        found = background.answer(key, request.run, kind=f"form_{key[1]}{role}", label=label)
    except ValueError as error:
        if show_error:
            form.error(str(error))
        return Background(None, error=error)
    return Background(found, pending=found is None)


def earlier_answer(request: Request) -> Report:
    """The report of a request answered before (held by the background, else :func:`report`'s cache): the answer a
    page keeps on screen while a new one is computed or after a refused value."""
    key = _background_key(request)
    return (None if key is None else background.known(key)) or report(request)


def kept_answer(key: str, found, request, *, pending: bool, where, earlier: Callable = earlier_answer):
    """``(found, request)`` when the inputs were answered (``found`` not None; remembered under the session-state
    ``key``); else ``earlier(last)`` of the last answered inputs, under a note in ``where`` saying why they are
    shown (the new answer is being computed, or a value was refused: its error stays under its box), or
    ``(None, None)`` when nothing was answered yet."""
    if found is not None:
        st.session_state[key] = request
        return found, request
    last = st.session_state.get(key)
    if last is None:
        return None, None
    where.info("The answer below is for the earlier inputs: the new one is being computed (above)." if pending else
               "The answer below is for the last valid inputs: correct the box marked in red to update it.")
    return earlier(last), last


def form_page(inputs: Callable[[], tuple[Form, Request | None]], *, spinner: str = "Computing…",
              keep: str | None = None):
    """The layout of a task page: the form on the left, the request's report on the right, computed in the
    background (:func:`answer_in_background`) so that the page answers its widgets while it runs.

    Returns the report (None when a value was refused, with the message under its widget, or while it is being
    computed), the right column and the request (None likewise). With ``keep`` (a session-state key) a refused
    value, or inputs still being computed, leave the answer of the last valid inputs on the page, under a note
    saying so (:func:`kept_answer`), instead of none.
    """
    left, right = st.columns([1, 2])
    with left:
        form, request = inputs()
    with right:
        computed = answer_in_background(form, request, spinner.rstrip("…"))
    if keep is None:
        return computed.report, right, request
    answer, kept_request = kept_answer(keep, computed.report, request, pending=computed.pending, where=right)
    return answer, right, kept_request if answer is not None else request


def theorem_metric(column, label: str, value: str, hypotheses, *, help: str | None = None) -> None:
    """``st.metric`` of a theorem-backed number in ``column`` and, where a hypothesis of its theorem fails, "no
    guarantee" with the failing ones right under it: the label stays as short as its column (a label with
    :func:`~fedplan.planner.display.theorem_label`'s " — no guarantee" was cut off in its column)."""
    column.metric(label, value, help=help)
    failing = failing_hypotheses(hypotheses)
    if failing:
        column.caption(f"**{NO_GUARANTEE}**: fails {literal('; '.join(failing))}")


@st.cache_data(show_spinner=False, max_entries=64)
def _rendered(key: str, fmt: str, _schedule) -> str:
    """The schedule whose JSON is ``key`` in ``fmt``, rendered when its button is clicked (a CSV's cumulative ε
    composes the schedule again: 0.35 s for the default plan's 193 phases) and kept for the next click."""
    return render(_schedule, fmt)


#: A download button's label per export format: short, so that six fit in a row ("Download opacus" was cut).
FORMAT_LABELS = {"csv": "CSV", "json": "JSON", "yaml": "YAML", "opacus": "Opacus", "flower": "Flower",
                 "tf-privacy": "TF-Privacy"}


def download_name(stem: str, fmt: str) -> str:
    """The file a format downloads to: ``stem.csv`` for fedplan's own formats, ``stem_opacus.py`` for a library's
    (the Opacus and TF-Privacy files are both Python: one name would overwrite the other)."""
    own = fmt in ("csv", "json", "yaml")
    return f"{stem}{'' if own else '_' + fmt.replace('-', '_')}{SUFFIXES[fmt][0]}"


def downloads(schedule, stem: str) -> tuple[str, ...]:
    """A download per format the plan runs in, each rendered when clicked (:func:`_rendered`); the formats it does
    not run in, with the reason (:func:`~fedplan.planner.export.refusal`). Returns the formats offered."""
    st.caption("Download the plan as:")
    columns, refused, offered = st.columns(len(FORMATS)), [], []
    key = render(schedule, "json")  # 3 ms for 193 phases: what the rendered texts are kept under
    for column, fmt in zip(columns, FORMATS, strict=True):
        why = refusal(schedule, fmt)
        if why is not None:
            refused.append(f"{fmt}: {why}")
            continue
        column.download_button(FORMAT_LABELS[fmt], functools.partial(_rendered, key, fmt, schedule),
                               file_name=download_name(stem, fmt), on_click="ignore")
        offered.append(fmt)
    if refused:
        st.caption("Not offered: " + "; ".join(refused))
    return tuple(offered)
