"""Accounting requests: ε or δ of a schedule, and the calibration of σ, T or q for a target (ε, δ).

``fedplan epsilon|delta|calibrate noise|calibrate steps|calibrate sample-rate`` and the Accountant page run these.
Every answer names its sampling (poisson, fixed_size, with_replacement, shuffle) and neighbouring relation
(add_or_remove_one, replace_one): they are fields, checked together at construction, so a run that samples
otherwise cannot silently get a Poisson number (``bounds/sampling.py`` lists the supported combinations).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from fedplan.bounds import accounting, rdp, sampling
from fedplan.planner.limits import check_segments
from fedplan.planner.schedule_io import read_schedule
from fedplan.planner.tasks.base import Report, Request, api_value, choice, count, real, text

_SINGLES = ("sample_rate", "noise_multiplier", "steps")


def sample_rate_field(default=None):
    return real(default, help="share q of the data per step, in (0, 1]: the Poisson probability, or m/N "
                "(fixed_size), s/N (with_replacement), batch size/N (shuffle)", low=0.0,
                high=1.0, low_open=True, flags=("-q",), deprecated=("--sampling-probability",))


def noise_multiplier_field(default=None):
    return real(default, help="noise multiplier σ = noise std / clipping norm", low=rdp.MIN_NOISE_MULTIPLIER,
                high=rdp.MAX_NOISE_MULTIPLIER, deprecated=("--sigma",))


def steps_field(default=None):
    return count(default, help="number of steps (rounds) T", low=1, high=accounting.MAX_STEPS,
                 deprecated=("--rounds",))


def accountant_field():
    return choice("pld", help="pld (the tight accountant; shuffle is answered exactly either way) or rdp (fast, "
                  "looser; not for every sampling)", choices=accounting.ACCOUNTANTS)


def time_budget_field():
    return real(accounting.DEFAULT_TIME_BUDGET, help="seconds PLD may take; past them the RDP answer is reported "
                "(an error for samplings without an RDP bound)", low=0.0, low_open=True, metavar="SECONDS")


def sampling_field(default="poisson", note=""):
    return choice(default, help="how records join a step: " + "; ".join(
        f"{name} ({text})" for name, text in sampling.SAMPLING_HELP.items()) + note, choices=sampling.SAMPLINGS)


def neighboring_relation_field(default="add_or_remove_one", note=""):
    return choice(default, help="neighbouring data sets: " + "; ".join(
        f"{name} ({text})" for name, text in sampling.RELATION_HELP.items()) + note,
        choices=sampling.NEIGHBORING_RELATIONS)


#: The sampling model of a run when neither the user nor a schedule file names it.
DEFAULT_MODEL = {"sampling": "poisson", "neighboring_relation": "add_or_remove_one", "dataset_size": None,
                 "client_sample_rate": None}
_FROM_FILE = " (default: the schedule file's, else {})"


def dataset_size_field():
    return count(None, help="number N of records (or clients) a step samples from: needed for with_replacement; "
                 "with it, q·N must be a whole number per step", low=1, high=accounting.MAX_DATASET_SIZE,
                 metavar="N")


def client_sample_rate_field():
    return real(None, help="two-stage sampling: probability that a record's client takes part in a round (records "
                "inside are sampled by --sampling); a record-level guarantee", low=0.0, high=1.0, low_open=True)


class _SamplingFields:
    """The run's sampling model, checked as a whole (supported combination, N where needed)."""

    def check_sampling(self) -> None:
        sampling.mechanism(self.sampling, self.neighboring_relation, self.accountant)
        if self.sampling == "with_replacement" and self.dataset_size is None:
            raise ValueError("sampling=with_replacement needs dataset_size (N): a record's multiplicity among "
                             "s = qN draws is Binomial(s, 1/N)")

    def model(self) -> dict:
        return {"sampling": self.sampling, "neighboring_relation": self.neighboring_relation,
                "dataset_size": self.dataset_size, "client_sample_rate": self.client_sample_rate}


def _segments(name: str, value) -> tuple[accounting.Segment, ...]:
    try:
        return accounting.make_schedule(value)
    except TypeError:
        raise ValueError(f"{name} must be a list of (sample_rate, noise_multiplier, steps) segments; "
                         f"got {value!r}") from None


@dataclass(frozen=True, kw_only=True)
class _ScheduleRequest(_SamplingFields, Request):
    """A schedule given as three values, a segments file or fedplan export (CLI), or a list of segments (API).

    A fedplan export names the sampling model and δ it was planned for: they are used unless given here, and a
    different value given here is refused (the plan was accounted for the file's model).
    """

    sample_rate: float | None = sample_rate_field()
    noise_multiplier: float | None = noise_multiplier_field()
    steps: int | None = steps_field()
    schedule: str | None = text(None, help="CSV or JSON file of segments (sample_rate, noise_multiplier, steps), or a "
                                "schedule exported by fedplan (csv, json, yaml: its sampling and δ are used), "
                                "instead of the three values", metavar="FILE")
    segments: tuple | None = api_value(help="list of (sample_rate, noise_multiplier, steps) segments",
                                       checker=_segments)
    accountant: str = accountant_field()
    time_budget: float = time_budget_field()
    sampling: str | None = sampling_field(None, _FROM_FILE.format("poisson"))
    neighboring_relation: str | None = neighboring_relation_field(None, _FROM_FILE.format("add_or_remove_one"))
    dataset_size: int | None = dataset_size_field()
    client_sample_rate: float | None = client_sample_rate_field()

    def check(self) -> None:
        given = [name for name in _SINGLES if self.given(name)]
        sources = [name for name in ("schedule", "segments") if self.given(name)]
        if len(sources) > 1:
            raise ValueError("give schedule (a file) or segments (a list), not both")
        if sources and given:
            raise ValueError(f"{sources[0]} cannot be combined with {', '.join(given)}")
        if not sources and len(given) < len(_SINGLES):
            missing = [name for name in _SINGLES if name not in given]
            raise ValueError("give a schedule file, or all of sample_rate, noise_multiplier, steps "
                             f"(missing {', '.join(missing)})")
        if self.given("schedule") or self.given("segments"):
            name = f"schedule file {Path(self.schedule).name!r}" if self.schedule else "segments"
            check_segments(name, [segment.as_tuple() for segment in self.schedule_arguments()["segments"]])
        self.model()
        self.check_sampling()

    @functools.cached_property
    def file(self) -> tuple[tuple, dict | None] | None:
        """The segments and privacy block of the schedule file (None without a file), read once per request."""
        return None if self.schedule is None else read_schedule(self.schedule)

    def planned(self) -> dict | None:
        """The privacy block of a fedplan export given as the schedule (None otherwise)."""
        found = self.file
        return None if found is None else found[1]

    def model(self) -> dict:
        """Sampling, relation, N and client rate: given here, else the schedule file's, else the defaults; a given
        value that contradicts the file's is refused."""
        planned = self.planned() or {}
        if planned.get("mechanism") == "laplace":
            return dict(DEFAULT_MODEL)
        resolved = {}
        for name, default in DEFAULT_MODEL.items():
            mine, theirs = getattr(self, name), planned.get(name)
            if name in planned and mine is not None and mine != theirs:
                raise ValueError(f"{name}={mine} contradicts the schedule file, which was planned for {name}="
                                 f"{theirs}; leave {name} out to account the file's model")
            resolved[name] = mine if mine is not None else (theirs if name in planned else default)
        return resolved

    def check_sampling(self) -> None:
        model = self.model()
        sampling.mechanism(model["sampling"], model["neighboring_relation"], self.accountant)
        if model["sampling"] == "with_replacement" and model["dataset_size"] is None:
            raise ValueError("sampling=with_replacement needs dataset_size (N): a record's multiplicity among "
                             "s = qN draws is Binomial(s, 1/N)")

    def schedule_arguments(self) -> dict:
        if self.schedule is not None:
            return {"segments": self.file[0]}
        if self.segments is not None:
            return {"segments": self.segments}
        return {name: getattr(self, name) for name in _SINGLES}

    def common(self) -> dict:
        return {"accountant": self.accountant, "time_budget": self.time_budget, **self.model()}

    def planned_delta(self) -> float | None:
        planned = self.planned()
        return None if planned is None else planned.get("delta")


@dataclass(frozen=True, kw_only=True)
class Epsilon(_ScheduleRequest):
    """ε of a schedule at a given δ."""

    command: ClassVar = ("epsilon",)
    summary: ClassVar = "ε of a schedule at a given δ"

    delta: float | None = real(None, help="δ at which ε is reported, in (0, 1) (default: a fedplan schedule file's "
                               "δ)", low=0.0, high=1.0, low_open=True, high_open=True)

    def check(self) -> None:
        super().check()
        if self.delta is None and self.planned_delta() is None:
            raise ValueError("give delta (the schedule names none)")

    def run(self, *, progress=None) -> Report:
        delta = self.delta if self.delta is not None else self.planned_delta()
        planned = self.planned()
        if planned is not None and planned["mechanism"] == "laplace":
            values = laplace_epsilon(planned, delta)
            return Report(values=values, result=values)
        result = accounting.get_epsilon(delta=delta, **self.schedule_arguments(), **self.common())
        return Report(values=result.to_dict(), result=result)


def laplace_epsilon(planned: dict, delta: float) -> dict:
    """ε of a Laplace plan's releases at δ: the exact pure-ε total (basic composition) at δ = 0, the optimal
    composition (Kairouz et al. 2015, Thm 3.3) at δ > 0."""
    from fedplan.bounds.composition import optimal_composition_epsilon

    per_release, releases = planned.get("epsilon_per_release"), planned.get("releases")
    if per_release is None or releases is None:
        raise ValueError("a Laplace schedule needs epsilon_per_release and releases in its privacy block")
    if delta == 0:
        epsilon, method = per_release * releases, "basic composition (exact for pure ε)"
    else:
        epsilon = optimal_composition_epsilon(epsilon=per_release, count=int(releases), delta=delta)
        method = "optimal composition (Kairouz, Oh, Viswanath 2015)"
    return {"epsilon": epsilon, "delta": delta, "mechanism": "laplace", "unit": planned["unit"],
            "epsilon_per_release": per_release, "releases": releases, "accountant": method,
            "statement": f"{releases} Laplace releases of ε = {per_release:.6g} each per {planned['unit']} compose to "
                         f"(ε = {epsilon:.6g}, δ = {delta:g}) by {method}."}


@dataclass(frozen=True, kw_only=True)
class Delta(_ScheduleRequest):
    """δ of a schedule at a given ε."""

    command: ClassVar = ("delta",)
    summary: ClassVar = "δ of a schedule at a given ε"

    epsilon: float = real(help="ε at which δ is reported, ε ≥ 0", low=0.0)

    def run(self, *, progress=None) -> Report:
        if (self.planned() or {}).get("mechanism") == "laplace":
            raise ValueError("delta of a Laplace schedule: use fedplan epsilon (its ε at the file's δ)")
        result = accounting.get_delta(epsilon=self.epsilon, **self.schedule_arguments(), **self.common())
        return Report(values=result.to_dict(), result=result)


#: The smallest target ε a request takes: below it no run is useful (σ beyond 10⁴ at any q, T) and the searches
#: spend tens of seconds on denormal targets such as 5e-324.
MIN_TARGET_EPSILON = 1e-9


def target_epsilon_field(default=..., help="target ε > 0", **settings):
    return real(default, help=help, low=MIN_TARGET_EPSILON, **settings)


def target_delta_field(default=..., help="target δ in (0, 1)", **settings):
    return real(default, help=help, low=0.0, high=1.0, low_open=True, high_open=True, **settings)


@dataclass(frozen=True, kw_only=True)
class _Calibration(_SamplingFields, Request):
    """Solve for one parameter so that ε ≤ target at the target δ (the answer's ε is computed, not assumed)."""

    parameter: ClassVar[str] = ""

    target_epsilon: float = target_epsilon_field()
    target_delta: float = target_delta_field()
    accountant: str = accountant_field()
    time_budget: float = time_budget_field()
    sampling: str = sampling_field()
    neighboring_relation: str = neighboring_relation_field()
    dataset_size: int | None = dataset_size_field()
    client_sample_rate: float | None = client_sample_rate_field()

    def check(self) -> None:
        self.check_sampling()

    def fixed(self) -> dict:
        return {name: getattr(self, name) for name in _SINGLES if name != self.parameter}

    def run(self, *, progress=None) -> Report:
        result = accounting.calibrate(self.parameter, target_epsilon=self.target_epsilon,
                                      target_delta=self.target_delta, **self.fixed(), accountant=self.accountant,
                                      time_budget=self.time_budget, **self.model())
        return Report(values={**result.to_dict(), self.parameter: result.value}, result=result)


@dataclass(frozen=True, kw_only=True)
class CalibrateNoise(_Calibration):
    """Smallest noise multiplier σ with ε ≤ target."""

    command: ClassVar = ("calibrate", "noise")
    summary: ClassVar = "smallest noise multiplier σ with ε ≤ target"
    parameter: ClassVar = "noise_multiplier"

    sample_rate: float = sample_rate_field(...)
    steps: int = steps_field(...)


@dataclass(frozen=True, kw_only=True)
class CalibrateSteps(_Calibration):
    """Largest number of steps T with ε ≤ target."""

    command: ClassVar = ("calibrate", "steps")
    summary: ClassVar = "largest number of steps T with ε ≤ target"
    parameter: ClassVar = "steps"

    sample_rate: float = sample_rate_field(...)
    noise_multiplier: float = noise_multiplier_field(...)


@dataclass(frozen=True, kw_only=True)
class CalibrateSampleRate(_Calibration):
    """Largest sample rate q with ε ≤ target."""

    command: ClassVar = ("calibrate", "sample-rate")
    summary: ClassVar = "largest sample rate q with ε ≤ target"
    parameter: ClassVar = "sample_rate"

    noise_multiplier: float = noise_multiplier_field(...)
    steps: int = steps_field(...)


TASKS = (Epsilon, Delta, CalibrateNoise, CalibrateSteps, CalibrateSampleRate)
