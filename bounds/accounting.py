"""Tight privacy accounting of subsampled Gaussian schedules, and calibration.

Every number here names its assumptions:

* the **sampling** that runs (:mod:`bounds.sampling`): ``poisson`` (default; each example or client
  joins a step independently with probability ``sample_rate``), ``fixed_size`` (m = qN without
  replacement), ``with_replacement`` (s = qN draws; needs ``dataset_size``) or ``shuffle``
  (balls-in-bins, one batch per epoch);
* the **neighbouring relation**: ``add_or_remove_one`` (default) or ``replace_one``;
* the **Gaussian mechanism** on a sum of contributions clipped to norm C, ``noise_multiplier`` being
  the noise standard deviation divided by the clipping norm.

A combination without a sound method is refused with the list of supported ones; nothing falls back
to another sampling model.

A schedule is a sequence of segments ``(sample_rate, noise_multiplier, steps)`` composed in
order. Two accountants are offered:

* ``"pld"`` (default): dp-accounting's pessimistic connect-the-dots privacy-loss distribution,
  with the spacing chosen by Richardson control (:mod:`bounds.pld`) so that the reported ε is
  within 0.1 % of the tight value; it falls back to RDP if it would exceed its time budget or
  need an unreasonably fine grid, and says so in ``fallback_reason``.
* ``"rdp"``: Rényi DP over the dp-accounting/Opacus order grid with the improved conversion
  (:mod:`bounds.rdp`), a looser but very fast bound.

Both are upper bounds on the true ε: neither can report an ε below the mechanism's. Samplings without
an RDP bound (``poisson``/``replace_one``, ``with_replacement``) are PLD-only and raise instead of
falling back; ``shuffle`` is answered by the exact Gaussian profile (accountant ``"exact"``).
Calibration returns a value whose ε was computed (not interpolated) and is ≤ the target.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields

from fedplan.bounds import pld, rdp
from fedplan.bounds.sampling import Mechanism, chance_of_use, mechanism
from fedplan.bounds.sampling import clear_cache as clear_sampling_cache
from fedplan.bounds.search import NoBoundaryError, Point, find_boundary, log_log_slope
from fedplan.bounds.validation import check_choice, check_int, check_real

ACCOUNTANTS = ("pld", "rdp")
#: Seconds a PLD answer may take before we fall back to RDP (the fallback is reported).
DEFAULT_TIME_BUDGET = 30.0
#: A with_replacement step's PLD build (a binomial mixture of Gaussians whose loss is inverted point by point; no RDP
#: bound to fall back to): measured 19 ms here (40 sample rates, N = 10 000), taken as 30 ms. A calibration builds
#: each distinct sample rate at least 5 times (5-7 measured over 1-40 rates), so a schedule of R rates needs about
#: 5 R builds; one that cannot fit its time budget is refused before it starts (:func:`_check_pld_time`).
WITH_REPLACEMENT_BUILD_SECONDS, CALIBRATION_BUILDS_PER_SEGMENT = 0.03, 5
MAX_STEPS = 10**9
NOISE_MULTIPLIER_RANGE = (1e-2, 1e7)
MIN_SAMPLE_RATE = 1e-12
#: Above this ε PLD answers fall back to RDP (or are refused where there is no RDP bound). Until dp-accounting's
#: ε reader was replaced (bounds/pld.py ``epsilon_for_delta``) the limit was 100: its e^-loss underflows above 745, so
#: answers moved with the spacing (1154.450 at h = 0.025, 1154.462 at h/2). Now ε is monotone along the nested
#: spacings (1153.5117, 1153.4985, …, 1153.4939 from h = 0.0512 down to 0.0016) and benchmarks/accounting.py checks
#: answers up to 1e4 against the finer-spacing PLD and RDP; above 1e5 the grid would exceed its limit anyway.
PLD_EPSILON_LIMIT = 1e5
#: Largest data set (records or clients) a sampling that needs N accepts.
MAX_DATASET_SIZE = 10**12
#: Calibrated continuous values are searched on numbers with this many significant digits, so the
#: answer is a short number whose ε was computed (not rounded afterwards).
CALIBRATION_DIGITS = 6

def round_up(value: float, significant: int = 6) -> float:
    """``value`` rounded *up* to ``significant`` digits: a printed ε or δ is never below the bound.

    Takes the nearest short number and, only if it is below ``value``, the next one up (``ceil`` on
    a scaled float would turn 1e-5 into 1.01e-5).
    """
    if value <= 0 or not math.isfinite(value):
        return value
    nearest = float(f"{value:.{significant}g}")
    if nearest >= value:
        return nearest
    step = 10.0 ** (math.floor(math.log10(value)) - significant + 1)
    return float(f"{nearest + step:.{significant}g}")


def check_sample_rate(value) -> float:
    return check_real("sample_rate", value, low=0.0, high=1.0, low_open=True)


def check_noise_multiplier(value) -> float:
    return check_real("noise_multiplier", value, low=rdp.MIN_NOISE_MULTIPLIER, high=rdp.MAX_NOISE_MULTIPLIER)


def check_steps(value) -> int:
    return check_int("steps", value, low=1, high=MAX_STEPS)


@dataclass(frozen=True)
class Segment:
    """``steps`` consecutive steps with the same sample rate and noise multiplier."""

    sample_rate: float
    noise_multiplier: float
    steps: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "sample_rate", check_sample_rate(self.sample_rate))
        object.__setattr__(self, "noise_multiplier", check_noise_multiplier(self.noise_multiplier))
        object.__setattr__(self, "steps", check_steps(self.steps))

    def as_tuple(self) -> tuple[float, float, int]:
        return (self.sample_rate, self.noise_multiplier, self.steps)


def make_schedule(
    segments: Iterable | None = None,
    *,
    sample_rate: float | None = None,
    noise_multiplier: float | None = None,
    steps: int | None = None,
) -> tuple[Segment, ...]:
    """A validated schedule from either ``segments`` or the three single values (not both).

    Segments may be :class:`Segment` objects, ``(sample_rate, noise_multiplier, steps)`` tuples or
    mappings with those keys.
    """
    singles = (sample_rate, noise_multiplier, steps)
    if segments is not None:
        if any(value is not None for value in singles):
            raise ValueError("give either segments or sample_rate/noise_multiplier/steps, not both")
        if isinstance(segments, str | bytes | Mapping) or not isinstance(segments, Iterable):
            raise ValueError("segments must be a list of (sample_rate, noise_multiplier, steps) segments; got "
                             f"{type(segments).__name__} {str(segments)[:40]!r}")
        schedule = tuple(_as_segment(item) for item in segments)
        if not schedule:
            raise ValueError("segments must contain at least one segment; got an empty schedule")
        return schedule
    names = ("sample_rate", "noise_multiplier", "steps")
    missing = [name for name, value in zip(names, singles, strict=True) if value is None]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}: give all three single values or a list of segments")
    return (Segment(sample_rate, noise_multiplier, steps),)


def merged_segments(segments: Iterable) -> list[tuple[float, float, int]]:
    """``(sample_rate, noise_multiplier, steps)`` segments with consecutive equal (q, σ) merged into one (the same
    composition, accounted as one self-composition)."""
    merged: list[tuple[float, float, int]] = []
    for q, sigma, steps in segments:
        if merged and merged[-1][:2] == (q, sigma):
            merged[-1] = (q, sigma, merged[-1][2] + steps)
        else:
            merged.append((q, sigma, steps))
    return merged


def _as_segment(item) -> Segment:
    if isinstance(item, Segment):
        return item
    if isinstance(item, dict):
        unknown = set(item) - {"sample_rate", "noise_multiplier", "steps"}
        if unknown:
            raise ValueError(f"segment has unknown keys {sorted(unknown)}; "
                             "allowed: sample_rate, noise_multiplier, steps")
        return Segment(item.get("sample_rate"), item.get("noise_multiplier"), item.get("steps"))
    if isinstance(item, str | bytes) or not isinstance(item, Iterable):
        raise ValueError(f"a segment must be (sample_rate, noise_multiplier, steps); got {str(item)[:40]!r}")
    values = tuple(item)
    if len(values) != 3:
        raise ValueError(f"a segment must be (sample_rate, noise_multiplier, steps); got {item!r}")
    return Segment(*values)


class _NamedMethod:
    """What both results share: the method of their sampling, relation and accountant, and the fallback note."""

    @property
    def source(self) -> str:
        return mechanism(self.sampling, self.neighboring_relation).method(self.accountant)

    def _with_fallback(self, text: str) -> str:
        return text + (f" Fallback: {self.fallback_reason}." if self.fallback_reason else "")


@dataclass(frozen=True)
class AccountingResult(_NamedMethod):
    """ε and δ of a schedule, with the accountant that certified them and its assumptions."""

    epsilon: float
    delta: float
    accountant: str
    requested_accountant: str
    segments: tuple[Segment, ...]
    neighboring_relation: str = "add_or_remove_one"
    sampling: str = "poisson"
    dataset_size: int | None = None
    bound: str = "tight"
    client_sample_rate: float | None = None
    client_rounds: tuple[int, ...] | None = None
    client_tail: float | None = None
    participations: int | None = None
    #: The probability that a record is used at all (the participation bound answered: ε = 0 at δ ≥ it).
    chance_of_use: float | None = None
    pld_spacing: float | None = None
    discretization_error: float | None = None
    rdp_order: float | None = None
    fallback_reason: str | None = None

    def statement(self) -> str:
        """Plain-English privacy statement naming sampling, neighbouring relation and accountant."""
        steps = sum(segment.steps for segment in self.segments)
        text = (f"The schedule ({len(self.segments)} segment(s), {steps} steps) satisfies "
                f"({round_up(self.epsilon):.6g}, {round_up(self.delta, 3):.3g})-differential privacy for "
                f"{_assumptions(self.sampling, self.neighboring_relation)}, with Gaussian noise of the stated "
                f"noise multiplier (noise std / clipping norm). Accountant ({self.bound}): {self.source}.")
        if self.client_sample_rate is not None:
            text += (f" Two-stage sampling: each client takes part in a round with probability "
                     f"{self.client_sample_rate:g}; a record is accounted over the {sum(self.client_rounds)} rounds "
                     f"its client joins except with probability ≤ {self.client_tail:.3g} (charged to δ), with no "
                     "credit for client sampling otherwise (docs/SAMPLING.md §6).")
        if self.chance_of_use is not None:
            text += (f" A record is used at all with probability at most {self.chance_of_use:.3g} ≤ δ, so ε = 0 "
                     "(the participation bound; no accountant is needed).")
        if self.participations is not None:
            text += (f" Each record joins {self.participations} batches (one per started epoch), with no "
                     "amplification by shuffling credited.")
        return self._with_fallback(text)

    def to_dict(self) -> dict:
        data = {item.name: getattr(self, item.name) for item in fields(self)}  # asdict deep-copies every segment
        data["segments"] = [{"sample_rate": segment.sample_rate, "noise_multiplier": segment.noise_multiplier,
                             "steps": segment.steps} for segment in self.segments]
        data["source"] = self.source
        data["statement"] = self.statement()
        return data


@dataclass(frozen=True)
class CalibrationResult(_NamedMethod):
    """A calibrated parameter value and the ε it achieves (computed, ≤ target)."""

    parameter: str
    value: float
    epsilon: float
    target_epsilon: float
    target_delta: float
    accountant: str
    requested_accountant: str
    fixed: dict = field(default_factory=dict)
    rdp_value: float | None = None
    neighboring_relation: str = "add_or_remove_one"
    sampling: str = "poisson"
    dataset_size: int | None = None
    bound: str = "tight"
    client_sample_rate: float | None = None
    pld_spacing: float | None = None
    discretization_error: float | None = None
    evaluations: int = 0
    fallback_reason: str | None = None
    #: Set when the answer is the end of the parameter's range and still leaves budget: every value meets the target.
    range_note: str | None = None

    @property
    def batch_size(self) -> int | None:
        """Records (or clients) per step m = qN of a calibrated sample rate, when N is known."""
        if self.parameter != "sample_rate" or self.dataset_size is None:
            return None
        return round(self.value * self.dataset_size)

    def statement(self) -> str:
        fixed = ", ".join(f"{name}={value:g}" for name, value in self.fixed.items())
        batch = f" (batch size {self.batch_size} of N = {self.dataset_size})" if self.batch_size else ""
        text = (f"{self.parameter}={self.value:.8g}{batch} with {fixed} gives ε={round_up(self.epsilon):.6g} ≤ "
                f"target {self.target_epsilon:g} at δ={self.target_delta:g}, for "
                f"{_assumptions(self.sampling, self.neighboring_relation)}. Accountant ({self.bound}): "
                f"{self.source}.")
        if self.client_sample_rate is not None:
            text += (f" Two-stage sampling: clients take part in a round with probability "
                     f"{self.client_sample_rate:g}, and a record is accounted over the rounds its client joins "
                     f"(docs/SAMPLING.md §6).")
        if self.range_note:
            text += f" {self.range_note}"
        return self._with_fallback(text)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["batch_size"] = self.batch_size
        data["source"] = self.source
        data["statement"] = self.statement()
        return data


def _assumptions(sampling: str, neighboring_relation: str) -> str:
    relation = "add/remove-one" if neighboring_relation == "add_or_remove_one" else "replace-one"
    name = "Poisson" if sampling == "poisson" else sampling.replace("_", "-")
    return f"{relation} neighbouring data sets under {name} sampling"


class _Memo:
    """A small least-recently-used memo for accountant answers (fallback answers are not stored)."""

    def __init__(self, size: int = 256):
        self._size = size
        self._items: OrderedDict = OrderedDict()

    def get(self, key):
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        return None

    def put(self, key, value) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()


_MEMO = _Memo()


def clear_cache() -> None:
    """Forget memoised answers (used by benchmarks to time cold calls)."""
    _MEMO.clear()
    pld._single_step.cache_clear()
    clear_sampling_cache()


@dataclass(frozen=True)
class _Model:
    """The run being accounted: its sampling and neighbouring relation, and N where the sampling needs it."""

    mechanism: Mechanism
    dataset_size: int | None
    #: Two-stage sampling: the probability that a record's client takes part in a round (None: one stage).
    client_sample_rate: float | None = None

    @property
    def fields(self) -> dict:
        bound = self.mechanism.bound if self.client_sample_rate is None else "upper bound"
        return {"sampling": self.mechanism.sampling, "neighboring_relation": self.mechanism.neighboring_relation,
                "dataset_size": self.dataset_size, "bound": bound}

    @property
    def one_stage(self) -> _Model:
        return dataclasses.replace(self, client_sample_rate=None)

    def client_rounds(self, segments, tail: float) -> tuple[list[tuple[float, float, int]], float]:
        """Two-stage sampling (docs/SAMPLING.md §6): each segment's steps replaced by the rounds k* its client
        joins except with probability ≤ tail / len(segments); returns the inner segments and the tail charged."""
        share = tail / len(segments)
        inner = [(q, sigma, participation_bound(steps, self.client_sample_rate, share)) for q, sigma, steps in segments]
        return [segment for segment in inner if segment[2] > 0] or [(inner[0][0], inner[0][1], 1)], tail

    def snap(self, schedule: tuple[Segment, ...]) -> tuple[Segment, ...]:
        """The schedule with each rate m/N exactly, m the whole number of records per step, when the sampling
        counts records (not Poisson) and N is known; a rate that is not a whole count is refused."""
        if self.dataset_size is None or self.mechanism.sampling == "poisson":
            return schedule
        return tuple(Segment(self.mechanism.sample_size(segment.sample_rate, self.dataset_size) / self.dataset_size,
                             segment.noise_multiplier, segment.steps) for segment in schedule)


@functools.lru_cache(maxsize=256)
def participation_bound(rounds: int, client_sample_rate: float, tail: float) -> int:
    """The smallest k with P(Binomial(rounds, client_sample_rate) > k) ≤ tail (bisection on scipy's exact tail)."""
    if client_sample_rate >= 1.0:
        return int(rounds)
    from scipy import stats

    law = stats.binom(int(rounds), client_sample_rate)
    low, high = -1, int(rounds)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if law.sf(middle) <= tail else (middle, high)
    return high


#: Share of δ two-stage sampling may spend on a client joining more rounds than accounted.
CLIENT_TAIL_SHARE = 1e-3


def _check_common(accountant: str, neighboring_relation: str, time_budget: float | None, sampling: str = "poisson",
                  dataset_size: int | None = None, client_sample_rate: float | None = None) -> _Model:
    check_choice("accountant", accountant, ACCOUNTANTS)
    found = mechanism(sampling, neighboring_relation, accountant)
    if time_budget is not None:
        check_real("time_budget", time_budget, low=0.0, low_open=True)
    if dataset_size is not None:
        dataset_size = check_int("dataset_size", dataset_size, low=1, high=MAX_DATASET_SIZE)
    elif found.sampling == "with_replacement":
        raise ValueError("with_replacement sampling needs dataset_size (N, the number of records or clients "
                         "drawn from): a record's multiplicity among s = qN draws is Binomial(s, 1/N)")
    if client_sample_rate is not None:
        client_sample_rate = check_real("client_sample_rate", client_sample_rate, low=0.0, high=1.0, low_open=True)
    return _Model(found, dataset_size, client_sample_rate)


def _checked_options(accountant: str, neighboring_relation: str, time_budget: float | None,
                     relative_tolerance: float, sampling: str, dataset_size: int | None,
                     client_sample_rate: float | None) -> dict:
    """The accountant options of get_epsilon/get_delta, validated, as keyword arguments of :func:`_account`."""
    model = _check_common(accountant, neighboring_relation, time_budget, sampling, dataset_size, client_sample_rate)
    return {"accountant": accountant, "time_budget": time_budget, "model": model,
            "relative_tolerance": check_real("relative_tolerance", relative_tolerance, low=1e-6, high=0.1)}


def _deadline(time_budget: float | None) -> float | None:
    return None if time_budget is None else time.monotonic() + time_budget


def _no_fallback_message(failure: pld.PLDUnavailableError, found: Mechanism) -> str:
    remedy = "raise time_budget or shorten the schedule" if isinstance(failure, pld.OutOfTimeError) else \
        "add noise or take fewer steps"
    fallback = ("its RDP bound does not meet the target anywhere in the range either" if found.rdp_method else
                f"{found.sampling} sampling with {found.neighboring_relation} neighbours has no RDP bound to fall "
                "back to")
    return f"{failure}, and {fallback}; {remedy}"


def _fallback_reason(failure: pld.PLDUnavailableError, time_budget: float | None) -> str:
    if isinstance(failure, pld.OutOfTimeError):
        return f"PLD did not finish within the time budget of {time_budget:g} s; RDP answer reported"
    return f"{failure}; RDP answer reported"


@dataclass(frozen=True)
class _Query:
    """What is asked of the accountant: ε at a given δ, or δ at a given ε."""

    unknown: str  # "epsilon" or "delta"
    given: float

    def rdp_answer(self, model: _Model, segments) -> tuple[float, float]:
        if self.unknown == "epsilon":
            return model.mechanism.rdp_epsilon(segments, self.given)
        return model.mechanism.rdp_delta(segments, self.given)

    def exact_answer(self, model: _Model, segments) -> float:
        if self.unknown == "epsilon":
            return model.mechanism.exact_epsilon(segments, self.given, model.dataset_size)
        return model.mechanism.exact_delta(segments, self.given, model.dataset_size)

    def pld_answer(self, model: _Model, segments, spacing: float) -> float:
        if self.unknown == "epsilon":
            return model.mechanism.pld_epsilon(segments, self.given, spacing, model.dataset_size)
        return min(model.mechanism.pld_delta(segments, self.given, spacing, model.dataset_size), 1.0)

    def allowed_error(self, relative_tolerance: float) -> Callable[[float], float]:
        """ε: a fraction of ε. δ: a fraction of δ, but not below 1e-14 (the scale of PLD tail truncation)."""
        floor = 0.0 if self.unknown == "epsilon" else 1e-14
        return lambda value: max(relative_tolerance * value, floor)

    def epsilon_scale(self, rdp_value: float) -> float:
        """The ε the first PLD spacing is chosen for."""
        return rdp_value if self.unknown == "epsilon" else max(self.given, 0.1)

    def result(self, value: float, **fields) -> AccountingResult:
        pair = {"epsilon": value, "delta": self.given} if self.unknown == "epsilon" else {
            "epsilon": self.given, "delta": value}
        return AccountingResult(**pair, **fields)


def _account(query: _Query, schedule: tuple[Segment, ...], *, accountant: str, time_budget: float | None,
             relative_tolerance: float, model: _Model) -> AccountingResult:
    """RDP answer, then (for ``accountant="pld"``) the adaptive PLD answer, memoised; see :func:`get_epsilon`."""
    schedule = model.snap(schedule)
    key = (query, schedule, accountant, relative_tolerance, model)
    cached = _MEMO.get(key)
    if cached is not None:
        return cached
    untouched = _participation_answer(query, schedule, accountant, model)
    if untouched is not None:
        _MEMO.put(key, untouched)
        return untouched
    if model.client_sample_rate is not None:
        result = _account_two_stage(query, schedule, accountant=accountant, time_budget=time_budget,
                                    relative_tolerance=relative_tolerance, model=model)
        _MEMO.put(key, result)
        return result
    tuples = [segment.as_tuple() for segment in schedule]
    found = model.mechanism
    if found.exact_method:
        result = query.result(query.exact_answer(model, tuples), accountant="exact", requested_accountant=accountant,
                              segments=schedule, participations=found.participations(tuples, model.dataset_size),
                              **model.fields)
        _MEMO.put(key, result)
        return result
    rdp_result = None
    if found.rdp_method:
        rdp_value, order = query.rdp_answer(model, tuples)
        rdp_result = query.result(rdp_value, accountant="rdp", requested_accountant=accountant, segments=schedule,
                                  rdp_order=order, **{**model.fields, "bound": "upper bound"})
    if accountant == "rdp":
        _MEMO.put(key, rdp_result)
        return rdp_result
    total_steps = sum(segment.steps for segment in schedule)
    # The first spacing is chosen for the RDP ε where there is one, else for Poisson's at the same σ/2.
    guide = rdp_value if rdp_result else query.rdp_answer(_Model(_GUIDE, None), tuples)[0]
    scale = query.epsilon_scale(guide)
    grid = found.grid_segments(tuples, model.dataset_size)

    def pld_value(spacing: float) -> float:
        pld.check_grid_size(grid, spacing, scale)
        value = query.pld_answer(model, tuples, spacing)
        epsilon = value if query.unknown == "epsilon" else query.given
        if epsilon > PLD_EPSILON_LIMIT:
            raise pld.PLDUnavailableError(f"ε ≈ {epsilon:.4g} is above {PLD_EPSILON_LIMIT:g}, beyond the range "
                                          "fedplan's PLD is checked for")
        return value

    try:
        answer = pld.adaptive(pld_value, spacing=pld.first_spacing(total_steps, scale, relative_tolerance, grid,
                                                                     found.reference_spacing),
                              tolerance=query.allowed_error(relative_tolerance), deadline=_deadline(time_budget))
    except pld.PLDUnavailableError as failure:
        if rdp_result is None:
            raise ValueError(_no_fallback_message(failure, found)) from None
        return dataclasses.replace(rdp_result, fallback_reason=_fallback_reason(failure, time_budget))
    if rdp_result is not None and rdp_value < answer.value:
        result = dataclasses.replace(rdp_result,
                          fallback_reason=f"RDP ({rdp_value:.6g}) was tighter than PLD ({answer.value:.6g})")
    else:
        result = query.result(answer.value, accountant="pld", requested_accountant=accountant, segments=schedule,
                              pld_spacing=answer.spacing, discretization_error=answer.error_estimate, **model.fields)
    _MEMO.put(key, result)
    return result


def _participation_answer(query: _Query, schedule: tuple[Segment, ...], accountant: str,
                          model: _Model) -> AccountingResult | None:
    """ε = 0 when a record is used at all with probability p ≤ δ (:func:`bounds.sampling.chance_of_use`): the exact
    answer where RDP would report millions (q = 1e-12, T = 1e4, σ = 0.01, δ = 1e-5: p = 1e-8, RDP ε = 5.2e7)."""
    chance = chance_of_use([segment.as_tuple() for segment in schedule], model.mechanism.sampling)
    if query.unknown == "epsilon" and chance <= query.given:
        return AccountingResult(epsilon=0.0, delta=query.given, accountant="participation",
                                requested_accountant=accountant, segments=schedule, chance_of_use=chance,
                                **{**model.fields, "bound": "upper bound"})
    return None


def _account_two_stage(query: _Query, schedule: tuple[Segment, ...], *, model: _Model, **options) -> AccountingResult:
    """Clients join a round with probability ``client_sample_rate``, records inside by ``model``'s sampling.

    Conditioned on the rounds its client joins (independent of the data), a record faces the one-stage mechanism
    in those rounds and nothing in the others; so δ(ε) ≤ δ_inner(ε over k* rounds) + P(more than k* rounds)
    (joint convexity; docs/SAMPLING.md §6). The tail is 1e-3·δ for an ε, 1e-12 for a δ.
    """
    tail = CLIENT_TAIL_SHARE * query.given if query.unknown == "epsilon" else 1e-12
    inner, tail = model.client_rounds([segment.as_tuple() for segment in schedule], tail)
    inner_query = _Query("epsilon", query.given - tail) if query.unknown == "epsilon" else query
    result = _account(inner_query, tuple(Segment(*segment) for segment in inner), model=model.one_stage, **options)
    pair = {"delta": query.given} if query.unknown == "epsilon" else {"delta": min(result.delta + tail, 1.0)}
    return dataclasses.replace(result, segments=schedule, client_sample_rate=model.client_sample_rate,
                               client_rounds=tuple(steps for _, _, steps in inner), client_tail=tail,
                               bound="upper bound", **pair)


def get_epsilon(*, delta: float, segments: Iterable | None = None, sample_rate: float | None = None,
                noise_multiplier: float | None = None, steps: int | None = None, accountant: str = "pld",
                neighboring_relation: str = "add_or_remove_one", time_budget: float | None = DEFAULT_TIME_BUDGET,
                relative_tolerance: float = pld.DEFAULT_RELATIVE_TOLERANCE, sampling: str = "poisson",
                dataset_size: int | None = None, client_sample_rate: float | None = None) -> AccountingResult:
    """ε of a schedule at the given δ.

    Give either ``segments`` or ``sample_rate``, ``noise_multiplier`` and ``steps``. ``sampling`` and
    ``neighboring_relation`` name the run (:mod:`bounds.sampling`); ``dataset_size`` (N) is required for
    ``with_replacement`` and, when given, makes qN a whole number of records per step.
    ``client_sample_rate`` makes it two-stage: clients join a round with that probability and ``sampling``
    runs inside them (a record-level guarantee; docs/SAMPLING.md §6). With
    ``accountant="pld"`` the answer is the pessimistic PLD bound at a spacing fine enough that
    its estimated discretisation error is below ``relative_tolerance`` × ε; if RDP happens to be
    tighter, or PLD would exceed ``time_budget`` seconds, the RDP bound is reported instead and
    ``accountant``/``fallback_reason`` say so.
    """
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    schedule = make_schedule(segments, sample_rate=sample_rate, noise_multiplier=noise_multiplier, steps=steps)
    return _account(_Query("epsilon", delta), schedule, **_checked_options(
        accountant, neighboring_relation, time_budget, relative_tolerance, sampling, dataset_size, client_sample_rate))


def get_delta(*, epsilon: float, segments: Iterable | None = None, sample_rate: float | None = None,
              noise_multiplier: float | None = None, steps: int | None = None, accountant: str = "pld",
              neighboring_relation: str = "add_or_remove_one", time_budget: float | None = DEFAULT_TIME_BUDGET,
              relative_tolerance: float = pld.DEFAULT_RELATIVE_TOLERANCE, sampling: str = "poisson",
              dataset_size: int | None = None, client_sample_rate: float | None = None) -> AccountingResult:
    """δ of a schedule at the given ε (same conventions as :func:`get_epsilon`).

    The PLD spacing is refined until the estimated discretisation error of δ is below
    ``relative_tolerance`` × δ (or 1e-14 in absolute terms, the scale of PLD tail truncation).
    """
    epsilon = check_real("epsilon", epsilon, low=0.0)
    schedule = make_schedule(segments, sample_rate=sample_rate, noise_multiplier=noise_multiplier, steps=steps)
    return _account(_Query("delta", epsilon), schedule, **_checked_options(
        accountant, neighboring_relation, time_budget, relative_tolerance, sampling, dataset_size, client_sample_rate))


def epsilon_after_each_segment(*, delta: float, segments: Iterable, **options) -> tuple[AccountingResult, list[float]]:
    """ε (at ``delta``) after each segment of a schedule, by the accountant that answers for the whole schedule.

    Returns the whole schedule's :func:`get_epsilon` result and one ε per segment, the last equal to the result's.
    A PLD answer is composed once at the whole schedule's spacing (each prefix is a pessimistic bound at that
    spacing), RDP and the exact profile per prefix; two-stage sampling asks :func:`get_epsilon` per prefix.
    ``options`` are those of :func:`get_epsilon`.
    """
    whole = get_epsilon(delta=delta, segments=segments, **options)
    tuples = [segment.as_tuple() for segment in whole.segments]
    found = mechanism(whole.sampling, whole.neighboring_relation)
    if whole.client_sample_rate is not None:
        values = [get_epsilon(delta=delta, segments=tuples[:end], **options).epsilon for end in range(1, len(tuples))]
    elif whole.accountant == "pld":
        values = found.pld_epsilons_after_each(tuples, delta, whole.pld_spacing, whole.dataset_size)[:-1]
    elif whole.accountant == "exact":
        values = [found.exact_epsilon(tuples[:end], delta, whole.dataset_size) for end in range(1, len(tuples))]
    else:
        values = [found.rdp_epsilon(tuples[:end], delta)[0] for end in range(1, len(tuples))]
    return whole, [*values, whole.epsilon]


# --------------------------------------------------------------------------------------------
# Calibration
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Problem:
    """One calibration: which parameter moves, how ε depends on it, and its allowed range."""

    parameter: str
    schedule_at: Callable[[float], list[tuple[float, float, int]]]
    increasing: bool
    integer: bool
    lower: float
    upper: float
    start: float
    target_epsilon: float
    target_delta: float
    fixed: dict
    model: _Model
    #: The reported value of a search point (default: the point itself; the sample rate m/N for a batch size m).
    value_of: Callable[[float], float] | None = None
    #: What else tells two problems apart in the memo (the phases of a multi-phase schedule).
    identity: tuple = ()

    @property
    def fast_mechanism(self) -> Mechanism:
        """The mechanism whose RDP (or exact) curve brackets the search: the run's own where it has one,
        else the Poisson curve at σ/2 (:data:`_GUIDE`), which is only a guide and never reported."""
        found = self.model.mechanism
        return found if (found.rdp_method or found.exact_method) else _GUIDE

    def accounted(self, x: float) -> tuple[list[tuple[float, float, int]], float]:
        """The segments and δ the one-stage accountant sees: for two-stage sampling, the rounds a client joins
        (1e-3·δ charged to the tail, :func:`_account_two_stage`)."""
        segments = self.schedule_at(x)
        if self.model.client_sample_rate is None:
            return segments, self.target_delta
        inner, tail = self.model.client_rounds(segments, CLIENT_TAIL_SHARE * self.target_delta)
        return inner, self.target_delta - tail

    def unused(self, segments, delta: float) -> bool:
        """Whether a record is used at all with probability ≤ δ: then ε = 0 (:func:`_participation_answer`)."""
        return chance_of_use(segments, self.model.mechanism.sampling) <= delta

    def rdp_epsilon(self, x: float) -> float:
        """ε on the fast curve: RDP, or the exact profile for ``shuffle``, or the guide (0 by the participation
        bound where it applies)."""
        found, (segments, delta) = self.fast_mechanism, self.accounted(x)
        if self.unused(segments, delta):
            return 0.0
        if found.exact_method:
            return found.exact_epsilon(segments, delta, self.model.dataset_size)
        return found.rdp_epsilon(segments, delta)[0]

    def pld_epsilon(self, x: float, spacing: float) -> float:
        segments, delta = self.accounted(x)
        if self.unused(segments, delta):
            return 0.0
        pld.check_grid_size(self.model.mechanism.grid_segments(segments, self.model.dataset_size), spacing,
                            self.target_epsilon)
        return self.model.mechanism.pld_epsilon(segments, delta, spacing, self.model.dataset_size)

    def grid_segments(self, x: float):
        """The segments at ``x`` as the PLD grid sees them (:meth:`Mechanism.grid_segments`)."""
        return self.model.mechanism.grid_segments(self.accounted(x)[0], self.model.dataset_size)

    def total_steps(self, x: float) -> int:
        return sum(steps for _, _, steps in self.accounted(x)[0])

    def as_value(self, x: float) -> float | int:
        if self.value_of is not None:
            return self.value_of(x)
        return int(x) if self.integer else x

    def better(self, a: float, b: float) -> float:
        """The more useful of two safe values: more steps / larger rate / less noise."""
        return max(a, b) if self.increasing else min(a, b)


#: Poisson RDP at σ/2: the bracketing guide of samplings that have no RDP bound of their own.
_GUIDE = mechanism("fixed_size", "add_or_remove_one")


def _solve_rdp(problem: _Problem) -> Point:
    poisson_shaped = problem.fast_mechanism.sampling in ("poisson", "fixed_size") and \
        problem.fast_mechanism.neighboring_relation == "add_or_remove_one" and problem.model.client_sample_rate is None
    if problem.parameter == "steps" and poisson_shaped:
        (q, sigma, _), = problem.schedule_at(1)
        sigma = sigma if problem.fast_mechanism.sampling == "poisson" else sigma / 2
        steps = rdp.max_steps_for_epsilon(sample_rate=q, noise_multiplier=sigma, target_epsilon=problem.target_epsilon,
                                          target_delta=problem.target_delta)
        steps = min(steps, int(problem.upper))
        if steps < 1:
            raise NoBoundaryError(Point(1.0, problem.rdp_epsilon(1.0)))
        return Point(float(steps), problem.rdp_epsilon(float(steps)))
    found = find_boundary(problem.rdp_epsilon, target=problem.target_epsilon, increasing=problem.increasing,
                          start=problem.start, lower=problem.lower, upper=problem.upper, integer=problem.integer,
                          digits=CALIBRATION_DIGITS, first_step=1.0, ftol=1e-5, xtol=1e-7)
    return found.safe


def _solve_pld(problem: _Problem, rdp_answer: Point, tolerance: float, deadline: float | None):
    """Coarse-to-fine PLD calibration started from the RDP answer.

    1. Coarse search at twice the spacing :func:`bounds.pld.first_spacing` expects to suffice,
       started where the RDP curve, scaled by the PLD/RDP ratio seen at the RDP answer, meets the
       target (RDP-first bracketing: the RDP solves cost milliseconds); where that guess lies beyond
       :data:`_GUESS_REACH` of the RDP answer (PLD and RDP far apart), a scout search on a grid
       :data:`_SCOUT_FACTOR` times coarser finds the crossing first (:func:`_coarse_start`).
    2. Richardson from one more, cheaper evaluation at twice the coarse spacing:
       ε(h) = ε* + K h² gives K and the spacing that meets the tolerance.
    3. Fine search at that spacing (never coarser than the first spacing, so on the ladder and at
       most dp-accounting's 1e-4), started where K and the coarse slope predict the crossing, with
       that slope as its first step.
    Returns (safe point, spacing, estimated discretisation error, number of PLD evaluations).
    """
    target = problem.target_epsilon
    if target > PLD_EPSILON_LIMIT:
        raise pld.PLDUnavailableError(f"target ε {target:g} is above {PLD_EPSILON_LIMIT:g}, beyond the range "
                                      "fedplan's PLD is checked for")
    first_spacing = pld.first_spacing(problem.total_steps(rdp_answer.x), target, tolerance,
                                      problem.grid_segments(rdp_answer.x), problem.model.mechanism.reference_spacing)
    coarse_spacing = min(2 * first_spacing, pld.MAX_SPACING)
    limits = dict(target=target, increasing=problem.increasing, lower=problem.lower, upper=problem.upper,
                  integer=problem.integer, digits=CALIBRATION_DIGITS,
                  before_evaluation=lambda: pld.check_deadline(deadline))

    def coarse_epsilon(x: float) -> float:
        return problem.pld_epsilon(x, coarse_spacing)

    pld.check_deadline(deadline)
    at_rdp_answer = Point(rdp_answer.x, coarse_epsilon(rdp_answer.x))
    start, first_step = _coarse_start(problem, rdp_answer, at_rdp_answer)
    known, slope, scouted = (at_rdp_answer,), _rdp_slope(problem, rdp_answer), 0
    scout_spacing = min(_SCOUT_FACTOR * coarse_spacing, pld.MAX_SPACING)
    if first_step > _NEAR_STEP and scout_spacing > coarse_spacing:
        # far from the RDP answer: find the crossing roughly on a grid 8× coarser (an 8th of the cost per
        # evaluation; its ε is larger, so its crossing lies on the safe side of the coarse one)
        scout = find_boundary(lambda x: problem.pld_epsilon(x, scout_spacing), start=start, slope=slope,
                              first_step=first_step, ftol=1e-2, xtol=1e-3, approximate=True, **limits)
        scouted += scout.evaluations
        known, start, first_step = (at_rdp_answer,), scout.safe.x, _NEAR_STEP
        slope = _slope_near(scout.points, scout.safe) or slope
    coarse = find_boundary(coarse_epsilon, start=start, known=known, slope=slope, first_step=first_step, ftol=2e-3,
                           xtol=1e-4, approximate=True, **limits)
    anchor = coarse.safe
    slope = _slope_near(coarse.points, anchor)

    pld.check_deadline(deadline)
    wide_spacing = 2 * coarse_spacing
    k_coefficient = pld.quadratic_coefficient(problem.pld_epsilon(anchor.x, wide_spacing), wide_spacing,
                                              anchor.value, coarse_spacing)
    fine_spacing = first_spacing  # never coarser: on the ladder, at most dp-accounting's 1e-4 (bounds/pld.py)
    if k_coefficient > 0:
        wanted = pld.spacing_for_error(k_coefficient, tolerance * target)
        fine_spacing = min(first_spacing, max(pld.MIN_SPACING, wanted))
    error = k_coefficient * fine_spacing**2
    # The search stops within ftol of the target: 3e-5, or the estimated discretisation error where that is larger
    # (at most 1e-4). The fine ε jitters by about that error from one x to the next (q = 1.8976e-4, σ = 0.4829,
    # T = 60 843: ±5e-5 relative between q's 1e-5 apart), so a narrower band only costs evaluations.
    ftol = min(_FINE_FTOL_MAX, max(_FINE_FTOL, error / target))
    if fine_spacing == coarse_spacing:
        known, start = coarse.points, anchor.x
    else:
        # Half the offset the Richardson model predicts: the model overstated it 2× at q = 1.9e-4, σ = 0.483,
        # T = 60 843 (so the first fine point overshot by 33 steps, two evaluations more); a point short of the
        # crossing is safe (the fine grid is nested in the coarse one), and the next step along the slope closes in.
        predicted = anchor.value - 0.5 * k_coefficient * (coarse_spacing**2 - fine_spacing**2)
        # aim at the middle of the band the search accepts, so that one evaluation often ends it; an integer
        # parameter has no band: start at the last integer on the safe side of the predicted crossing, so that two
        # evaluations (it and the next) end the search when the prediction holds
        known = ()
        if problem.integer:
            crossing = _predicted_crossing(Point(anchor.x, predicted), slope, target)
            start = math.floor(crossing) if problem.increasing else math.ceil(crossing)
        else:
            start = _predicted_crossing(Point(anchor.x, predicted), slope, target * (1 - ftol / 2))
    fine = find_boundary(lambda x: problem.pld_epsilon(x, fine_spacing), start=start, known=known, slope=slope,
                         first_step=0.01, ftol=ftol, xtol=1e-6, **limits)
    return fine.safe, fine_spacing, error, 1 + scouted + coarse.evaluations + 1 + fine.evaluations


#: How far (a factor in x) from the RDP answer the coarse PLD search may start. Where PLD and RDP differ by orders of
#: magnitude (q·T ≪ 1 at small σ: PLD/RDP = 0.0055 at q = 1e-5, σ = 0.5276, T = 559, δ = 1e-5) one ratio sends the
#: RDP-shaped start to the end of the range (q = 1, or T = 8.8e6 where the answer is 555), whose PLD alone took
#: 0.6–1.5 s; beyond this reach the search starts at the reach instead and takes long steps along the PLD's own slope.
_GUESS_REACH = 4.0
#: First step of the coarse search when it starts at the RDP-shaped guess (close), and the grid factor of the scout
#: search that runs first when the guess is beyond reach.
_NEAR_STEP = 0.02
_SCOUT_FACTOR = 8
#: Band below the target in which the fine search stops (relative): at least 3e-5, at most 1e-4 (:func:`_solve_pld`).
_FINE_FTOL, _FINE_FTOL_MAX = 3e-5, 1e-4


def _coarse_start(problem: _Problem, rdp_answer: Point, at_rdp_answer: Point) -> tuple[float, float]:
    """(start, first step) of the coarse PLD search: the RDP-shaped guess if it lies within :data:`_GUESS_REACH` of
    the RDP answer (short first step: the guess is close), else the reach in its direction (long first step)."""
    guess = _rdp_shaped_guess(problem, rdp_answer, at_rdp_answer)
    if rdp_answer.x <= 0 or guess <= 0:
        return guess, _NEAR_STEP
    if min(rdp_answer.value, at_rdp_answer.value) > 0:
        if abs(math.log(guess / rdp_answer.x)) <= math.log(_GUESS_REACH):
            return guess, _NEAR_STEP
        up = guess > rdp_answer.x
    else:  # ε = 0 by the participation bound: no ratio to scale by; move towards more ε
        up = problem.increasing == (at_rdp_answer.value < problem.target_epsilon)
    return rdp_answer.x * (_GUESS_REACH if up else 1 / _GUESS_REACH), 1.0


def _rdp_shaped_guess(problem: _Problem, rdp_answer: Point, at_rdp_answer: Point) -> float:
    """Where PLD should meet the target if PLD/RDP stays at the ratio seen at the RDP answer."""
    if rdp_answer.value <= 0:
        return rdp_answer.x
    ratio = at_rdp_answer.value / rdp_answer.value
    if not (math.isfinite(ratio) and ratio > 0):
        return rdp_answer.x
    scaled = dataclasses.replace(problem, target_epsilon=problem.target_epsilon * (1 - 1e-3) / ratio)
    try:
        return _solve_rdp(scaled).x
    except NoBoundaryError:
        return rdp_answer.x


def _rdp_slope(problem: _Problem, rdp_answer: Point) -> float | None:
    """d log ε / d log x of the RDP curve at the RDP answer: the shape PLD's curve roughly shares."""
    step = 1.0 if problem.integer else rdp_answer.x * 1e-3
    nudged = rdp_answer.x + step if rdp_answer.x + step <= problem.upper else rdp_answer.x - step
    return log_log_slope(rdp_answer, Point(nudged, problem.rdp_epsilon(nudged)))


def _slope_near(points: tuple[Point, ...], anchor: Point) -> float | None:
    """Log-log slope between the anchor and the evaluated point nearest to it."""
    others = [point for point in points if point.x != anchor.x]
    if not others:
        return None
    nearest = min(others, key=lambda point: abs(math.log(point.x / anchor.x)))
    return log_log_slope(anchor, nearest)


def _predicted_crossing(anchor: Point, slope: float | None, aim: float) -> float:
    """Where a curve through ``anchor`` with log-log ``slope`` reaches ``aim``."""
    if slope is None or slope == 0 or anchor.value <= 0:
        return anchor.x
    return anchor.x * math.exp((math.log(aim) - math.log(anchor.value)) / slope)


def _calibrate(problem: _Problem, **options) -> CalibrationResult:
    """:func:`_search` with a note when the whole range meets the target (the answer is its useful end and leaves
    budget), or when ε = 0 because a record is used with probability ≤ δ."""
    result = _search(problem, **options)
    end = problem.upper if problem.increasing else problem.lower
    if result.epsilon == 0 and problem.value_of is None and problem.unused(*problem.accounted(result.value)):
        note = (f"ε = 0: at this {problem.parameter} a record is used at all with probability ≤ δ, and one step "
                "further would use it more.")
        return dataclasses.replace(result, range_note=note, accountant="participation", bound="upper bound",
                                   fallback_reason=None)
    if problem.as_value(end) == result.value and result.epsilon < problem.target_epsilon * (1 - 1e-3):
        note = (f"Every {problem.parameter} in its range meets the target: even the end of the range, "
                f"{result.value:g}, spends only ε = {round_up(result.epsilon):.6g} of {problem.target_epsilon:g}.")
        return dataclasses.replace(result, range_note=note)
    return result


def _search(problem: _Problem, *, accountant: str, time_budget: float | None,
            relative_tolerance: float) -> CalibrationResult:
    key = ("calibrate", problem.parameter, tuple(sorted(problem.fixed.items())), problem.identity,
           problem.target_epsilon, problem.target_delta, accountant, relative_tolerance, problem.model)
    cached = _MEMO.get(key)
    if cached is not None:
        return cached
    found = problem.model.mechanism
    rdp_meets_target = True
    try:
        rdp_point = _solve_rdp(problem)
    except NoBoundaryError as failure:
        rdp_point = _pld_at_the_end(problem, failure.point, accountant, relative_tolerance)
        rdp_meets_target = False
    common = dict(parameter=problem.parameter, target_epsilon=problem.target_epsilon,
                  target_delta=problem.target_delta, requested_accountant=accountant, fixed=problem.fixed,
                  client_sample_rate=problem.model.client_sample_rate, **problem.model.fields)
    if found.exact_method:
        result = CalibrationResult(value=problem.as_value(rdp_point.x), epsilon=rdp_point.value, accountant="exact",
                                   **common)
        _MEMO.put(key, result)
        return result
    rdp_result = None
    if found.rdp_method and rdp_meets_target:
        rdp_result = CalibrationResult(value=problem.as_value(rdp_point.x), epsilon=rdp_point.value,
                                       accountant="rdp", rdp_value=problem.as_value(rdp_point.x),
                                       **{**common, "bound": "upper bound"})
    if accountant == "rdp":
        _MEMO.put(key, rdp_result)
        return rdp_result

    if rdp_result is None:
        _check_pld_time(problem, rdp_point.x, found, time_budget)
    deadline = _deadline(time_budget)
    try:
        try:
            with pld.deadline_for(deadline):
                point, spacing, error, evaluations = _solve_pld(problem, rdp_point, relative_tolerance, deadline)
        except NoBoundaryError as missed:  # e.g. δ below the PLD's truncated tail mass: ε = ∞ at every point
            raise pld.PLDUnavailableError(
                f"the PLD does not reach ε ≤ {problem.target_epsilon:g} anywhere in {problem.parameter}'s range (ε = "
                f"{missed.point.value:g} at {problem.parameter} = {missed.point.x:g}; a δ below about 1e-13 is under "
                "the PLD's truncated tail mass)") from None
    except pld.PLDUnavailableError as failure:
        if rdp_result is None:
            raise ValueError(_no_fallback_message(failure, found)) from None
        return dataclasses.replace(rdp_result, fallback_reason=_fallback_reason(failure, time_budget))
    if rdp_result is not None and point.x != rdp_point.x and problem.better(point.x, rdp_point.x) == rdp_point.x:
        result = dataclasses.replace(rdp_result, fallback_reason="RDP gave the better value here")
    else:
        result = CalibrationResult(value=problem.as_value(point.x), epsilon=point.value, accountant="pld",
                                   rdp_value=problem.as_value(rdp_point.x) if rdp_result else None,
                                   pld_spacing=spacing, discretization_error=error, evaluations=evaluations, **common)
    _MEMO.put(key, result)
    return result


def _check_pld_time(problem: _Problem, x: float, found: Mechanism, time_budget: float | None) -> None:
    """Refuse, before any PLD build, a calibration with no RDP fallback whose builds alone would outlast
    ``time_budget`` (with_replacement: :data:`WITH_REPLACEMENT_BUILD_SECONDS` per build; an increasing-sizes plan of
    290 sample sizes took 30 s and then failed)."""
    if time_budget is None or found.sampling != "with_replacement":
        return
    rates = len({(q, sigma) for q, sigma, _ in problem.accounted(x)[0]})
    seconds = rates * CALIBRATION_BUILDS_PER_SEGMENT * WITH_REPLACEMENT_BUILD_SECONDS
    if seconds > time_budget:
        raise ValueError(f"with_replacement sampling has no RDP bound to fall back to, and its PLD needs about "
                         f"{CALIBRATION_BUILDS_PER_SEGMENT} builds of each of this schedule's {rates} distinct sample "
                         f"rates, an estimated {seconds:.3g} s, over the time budget of {time_budget:g} s; choose "
                         f"sampling poisson or fixed_size, give fewer distinct sample rates, or raise time_budget")


def _pld_at_the_end(problem: _Problem, end: Point, accountant: str, relative_tolerance: float) -> Point:
    """The RDP curve misses the target even at the end of the range; the (tighter) PLD may not. Returns the end
    as the search's anchor if PLD meets the target there, else raises the infeasibility ValueError."""
    if accountant != "pld" or problem.model.mechanism.exact_method:
        raise ValueError(_infeasible_message(problem, end, "exact" if problem.fast_mechanism.exact_method else "rdp"))
    spacing = pld.first_spacing(problem.total_steps(end.x), problem.target_epsilon, relative_tolerance,
                                problem.grid_segments(end.x), problem.model.mechanism.reference_spacing)
    try:
        value = problem.pld_epsilon(end.x, spacing)
    except pld.PLDUnavailableError:
        raise ValueError(_infeasible_message(problem, end, "rdp")) from None
    if value > problem.target_epsilon:
        raise ValueError(_infeasible_message(problem, Point(end.x, value), "pld"))
    return end


def _infeasible_message(problem: _Problem, point: Point, accountant: str) -> str:
    bound = "upper" if (problem.increasing is False) else "lower"
    return (f"target_epsilon={problem.target_epsilon:g} cannot be met: even {problem.parameter}="
            f"{problem.as_value(point.x):g} (the {bound} end of its allowed range) gives ε={point.value:.6g} "
            f"({accountant.upper()}) at δ={problem.target_delta:g}")


def _check_targets(target_epsilon: float, target_delta: float) -> tuple[float, float]:
    return (check_real("target_epsilon", target_epsilon, low=0.0, low_open=True),
            check_real("target_delta", target_delta, low=0.0, high=1.0, low_open=True, high_open=True))


def calibrate_noise_multiplier(*, target_epsilon: float, target_delta: float, sample_rate: float | None = None,
                               steps: int | None = None, phases: Sequence[tuple[float, int]] | None = None,
                               accountant: str = "pld", neighboring_relation: str = "add_or_remove_one",
                               time_budget: float | None = DEFAULT_TIME_BUDGET,
                               relative_tolerance: float = pld.DEFAULT_RELATIVE_TOLERANCE, sampling: str = "poisson",
                               dataset_size: int | None = None,
                               client_sample_rate: float | None = None) -> CalibrationResult:
    """Smallest noise multiplier σ (6 significant digits) with ε(σ) ≤ target_epsilon (sampling and
    ``dataset_size`` as in :func:`get_epsilon`).

    The schedule is ``steps`` steps at ``sample_rate``, or ``phases``: a list of ``(sample_rate, steps)`` run in
    order with one common σ (a plan whose sample rate changes, e.g. van Dijk's increasing sample sizes).
    """
    target_epsilon, target_delta = _check_targets(target_epsilon, target_delta)
    model = _check_common(accountant, neighboring_relation, time_budget, sampling, dataset_size, client_sample_rate)
    shape = _phases(sample_rate, steps, phases, model)
    total = sum(t for _, t in shape)
    # Start from the Gaussian-approximation σ ≈ √(2 Σ q_i² T_i ln(1/δ)) / ε (moments-accountant scaling).
    spread = math.sqrt(sum(q * q * t for q, t in shape))
    start = max(0.3, spread * math.sqrt(-2 * math.log(target_delta)) / target_epsilon)
    if len(shape) == 1:
        fixed = {"sample_rate": shape[0][0], "steps": total}
    else:
        fixed = {"phases": len(shape), "steps": total, "first_sample_rate": shape[0][0],
                 "last_sample_rate": shape[-1][0]}
    problem = _Problem(parameter="noise_multiplier", schedule_at=lambda sigma: [(q, sigma, t) for q, t in shape],
                       increasing=False, integer=False, lower=NOISE_MULTIPLIER_RANGE[0],
                       upper=NOISE_MULTIPLIER_RANGE[1], start=start, target_epsilon=target_epsilon,
                       target_delta=target_delta, fixed=fixed, model=model, identity=tuple(shape))
    return _calibrate(problem, accountant=accountant, time_budget=time_budget, relative_tolerance=relative_tolerance)


def _phases(sample_rate, steps, phases, model: _Model) -> tuple[tuple[float, int], ...]:
    """``(sample_rate, steps)`` pairs of the schedule to calibrate, checked and snapped to m/N (one of the two
    spellings; consecutive phases with the same rate merged)."""
    if phases is None:
        if sample_rate is None or steps is None:
            raise ValueError("give sample_rate and steps, or phases (a list of (sample_rate, steps))")
        pairs = [(sample_rate, steps)]
    else:
        if sample_rate is not None or steps is not None:
            raise ValueError("give phases or sample_rate and steps, not both")
        try:
            pairs = [tuple(pair) for pair in phases]
        except TypeError:
            raise ValueError(f"phases must be a list of (sample_rate, steps) pairs; got {phases!r}") from None
        if not pairs or any(len(pair) != 2 for pair in pairs):
            raise ValueError(f"phases must be a non-empty list of (sample_rate, steps) pairs; got {phases!r}")
    snapped = model.snap(tuple(Segment(q, 1.0, t) for q, t in pairs))
    merged = [(q, t) for q, _, t in merged_segments(segment.as_tuple() for segment in snapped)]
    if sum(t for _, t in merged) > MAX_STEPS:
        raise ValueError(f"phases hold {sum(t for _, t in merged)} steps in all; at most {MAX_STEPS} are accounted")
    return tuple(merged)


def calibrate_steps(*, target_epsilon: float, target_delta: float, sample_rate: float, noise_multiplier: float,
                    accountant: str = "pld", neighboring_relation: str = "add_or_remove_one",
                    time_budget: float | None = DEFAULT_TIME_BUDGET,
                    relative_tolerance: float = pld.DEFAULT_RELATIVE_TOLERANCE,
                    max_steps: int = MAX_STEPS, sampling: str = "poisson",
                    dataset_size: int | None = None, client_sample_rate: float | None = None) -> CalibrationResult:
    """Largest number of steps T (an integer ≤ max_steps) with ε(T) ≤ target_epsilon."""
    target_epsilon, target_delta = _check_targets(target_epsilon, target_delta)
    q, sigma = check_sample_rate(sample_rate), check_noise_multiplier(noise_multiplier)
    max_steps = check_int("max_steps", max_steps, low=1, high=MAX_STEPS)
    model = _check_common(accountant, neighboring_relation, time_budget, sampling, dataset_size, client_sample_rate)
    q = model.snap((Segment(q, sigma, 1),))[0].sample_rate
    problem = _Problem(parameter="steps", schedule_at=lambda t: [(q, sigma, int(t))], increasing=True, integer=True,
                       lower=1, upper=max_steps, start=1, target_epsilon=target_epsilon,
                       target_delta=target_delta, fixed={"sample_rate": q, "noise_multiplier": sigma}, model=model)
    return _calibrate(problem, accountant=accountant, time_budget=time_budget, relative_tolerance=relative_tolerance)


def calibrate_sample_rate(*, target_epsilon: float, target_delta: float, noise_multiplier: float, steps: int,
                          accountant: str = "pld", neighboring_relation: str = "add_or_remove_one",
                          time_budget: float | None = DEFAULT_TIME_BUDGET,
                          relative_tolerance: float = pld.DEFAULT_RELATIVE_TOLERANCE, sampling: str = "poisson",
                          dataset_size: int | None = None,
                          client_sample_rate: float | None = None) -> CalibrationResult:
    """Largest sample rate q (6 significant digits) in (0, 1] with ε(q) ≤ target_epsilon.

    With ``dataset_size`` N the search runs over whole batch sizes m = 1 … N and reports q = m/N.
    """
    target_epsilon, target_delta = _check_targets(target_epsilon, target_delta)
    sigma, t = check_noise_multiplier(noise_multiplier), check_steps(steps)
    model = _check_common(accountant, neighboring_relation, time_budget, sampling, dataset_size, client_sample_rate)
    start = min(1.0, target_epsilon * sigma / math.sqrt(-2 * t * math.log(target_delta)))
    fixed = {"noise_multiplier": sigma, "steps": t}
    if model.dataset_size is None:
        problem = _Problem(parameter="sample_rate", schedule_at=lambda q: [(q, sigma, t)], increasing=True,
                           integer=False, lower=MIN_SAMPLE_RATE, upper=1.0, start=start,
                           target_epsilon=target_epsilon, target_delta=target_delta, fixed=fixed, model=model)
    else:
        size = model.dataset_size
        problem = _Problem(parameter="sample_rate", schedule_at=lambda m: [(m / size, sigma, t)], increasing=True,
                           integer=True, lower=1, upper=size, start=max(1.0, round(start * size)),
                           target_epsilon=target_epsilon, target_delta=target_delta,
                           fixed={**fixed, "dataset_size": size}, model=model, value_of=lambda m: int(m) / size)
    return _calibrate(problem, accountant=accountant, time_budget=time_budget, relative_tolerance=relative_tolerance)


def calibrate(parameter: str, **kwargs) -> CalibrationResult:
    """Dispatch to the calibration of ``parameter`` ∈ {noise_multiplier, steps, sample_rate}."""
    solvers: dict[str, Callable[..., CalibrationResult]] = {
        "noise_multiplier": calibrate_noise_multiplier,
        "steps": calibrate_steps,
        "sample_rate": calibrate_sample_rate,
    }
    check_choice("parameter", parameter, solvers)
    return solvers[parameter](**kwargs)


def epsilon_curve(*, sample_rate: float, noise_multiplier: float, steps: Sequence[int], delta: float,
                  sampling: str = "poisson", neighboring_relation: str = "add_or_remove_one",
                  dataset_size: int | None = None) -> list[float]:
    """The fast accountant's ε after each number of steps in ``steps``: RDP (the one-step RDP computed once for
    Poisson), or the exact profile for ``shuffle``. Samplings without an RDP bound raise (use PLD points)."""
    q, sigma = check_sample_rate(sample_rate), check_noise_multiplier(noise_multiplier)
    delta = check_real("delta", delta, low=0.0, high=1.0, low_open=True, high_open=True)
    model = _check_common("rdp", neighboring_relation, None, sampling, dataset_size)
    if model.mechanism.sampling == "poisson":
        one_step = rdp.rdp_poisson_gaussian(sample_rate=q, noise_multiplier=sigma)
        return [rdp.epsilon_from_rdp(rdp=check_steps(t) * one_step, orders=rdp.RDP_ORDERS, delta=delta)[0]
                for t in steps]
    found = model.mechanism
    if found.exact_method:
        return [found.exact_epsilon([(q, sigma, check_steps(t))], delta, model.dataset_size) for t in steps]
    return [found.rdp_epsilon([(q, sigma, check_steps(t))], delta)[0] for t in steps]
