"""σ of a library export re-calibrated so that the library's own accountant reports ε ≤ the target (issue 20).

fedplan calibrates σ with its tight accountant (PLD): the plan's ε is within 1 % below the target. The training
libraries' accountants bound the same run from above and report more, so a training loop that prints the library's
ε shows the budget exceeded although it is not. At the Planner's default plan (van Dijk's increasing sample sizes,
ε = 1, δ = 1e-6, 193 phases at σ = 1.27439) Opacus's RDPAccountant reports 1.286 and its PRVAccountant 1.0099; at
the federated page's default (1000 clients, 50 per round, 200 rounds, ε = 3) Flower's RdpAccountant reports 6.069.
With ``library_accountant`` the export instead carries the smallest σ (6 significant digits, one factor for the
whole schedule) for which that accountant, run on the export as the library runs it, reports ε ≤ the target:

* Opacus ``rdp`` / ``prv``: ``RDPAccountant`` / ``PRVAccountant`` with ``history`` = the export's
  ``ACCOUNTANT_HISTORY`` and ``get_epsilon(delta)`` with Opacus's defaults (what ``PrivacyEngine.get_epsilon``
  prints: RDP on its default orders; PRV's upper estimate, Gopi, Lee and Wutschitz 2021, arXiv:2106.02848, Thm 5.5:
  ε at δ − δ/1000 plus eps_error = 0.01);
* Flower ``rdp``: ``flwr.serverapp.RdpAccountant`` composing the export's ``[tool.fedplan.flower-accountant]``
  event (σ/2 under replace-one: docs/ERRATA.md ACC-7).

The search runs on a fast predictor of the library's answer (fedplan's RDP for the RDP accountants, which agrees
with Opacus's and Flower's to 1e-6; fedplan's PLD at δ − δ/1000 plus 0.01 for Opacus's PRV) and calls the library
only to check: its answer moves the aim by the predictor's miss (then by a secant step through the last two calls)
until the library reports ε in [(1 − ``BAND``)·target, target] (one call when the predictor is right, which is the
rule). A check above the target
after ``ATTEMPTS`` calls is an error, never a fallback. TF-Privacy's accountant needs TensorFlow, which fedplan
cannot load to check against: its export keeps ``fedplan`` only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from fedplan.bounds.imports import import_lazily
from fedplan.planner import limits
from fedplan.planner.schedule import Schedule

__all__ = ["ATTEMPTS", "BAND", "LIBRARY_ACCOUNTANTS", "OPTIONS", "calibrated", "check_library_accountant",
           "flower_event", "library_epsilon", "opacus_history"]

LIBRARY_ACCOUNTANTS = ("fedplan", "rdp", "prv")
#: The accountants each library export can be calibrated for.
OPTIONS = {"opacus": ("fedplan", "rdp", "prv"), "flower": ("fedplan", "rdp"), "tf-privacy": ("fedplan",)}
#: The library's ε of a calibrated export lies in [(1 − BAND)·target, target].
BAND = 0.01
#: Calls of the library's accountant before the calibration gives up (with an error).
ATTEMPTS = 4


def opacus_history(schedule: Schedule) -> list[tuple[float, float, int]]:
    """Opacus's ``accountant.history`` of the schedule: ``(noise_multiplier, sample_rate, steps)`` per phase, in
    order. Both Opacus accountants compose the list entry by entry (RDP sums them, PRV convolves them), so phases
    of different sample rates stay separate entries: merging them would change ε."""
    return [(sigma, q, steps) for q, sigma, steps in schedule.segments()]


def flower_event(schedule: Schedule) -> dict:
    """The dp-accounting event Flower's ``RdpAccountant`` composes for this run, in the export's TOML names.

    Flower's strategies add noise σC to the sum of m client updates clipped to C; its accountant reads σ as noise /
    replace-sensitivity. Replace-one moves the sum by 2C: sampling without replacement at σ/2; add/remove-one is
    bounded by the Poisson event at σ/2 (bounds/sampling.py; docs/SAMPLING.md §1, §5; docs/ERRATA.md ACC-7).
    """
    privacy = schedule.privacy
    clients = privacy.get("dataset_size")
    if clients is None:
        raise ValueError("the Flower export needs the number of clients N (dataset_size)")
    (q, sigma, rounds), = schedule.segments()
    relation = privacy["neighboring_relation"]
    return {"noise-multiplier": sigma / 2, "sample-size": round(q * clients), "population-size": clients,
            "rounds": rounds, "neighboring-relation": relation.upper(),
            "sampling-method": "WITHOUT_REPLACEMENT" if relation == "replace_one" else "POISSON",
            "delta": privacy["delta"]}


@dataclass(frozen=True)
class _Accountant:
    """A library's accountant: how to import it, what it is called, and fedplan's predictor of its answer."""

    library: str
    accountant: str
    name: str
    package: str
    module: str
    epsilon: Callable  # (module, schedule) -> the library's ε
    predictor: str  # fedplan's accountant that predicts it
    delta_factor: float = 1.0  # the predictor's δ = delta_factor · δ
    offset: float = 0.0  # the predictor's expected miss (added to its ε)
    #: Seconds of one call per history entry, pessimistic: at the 193-entry default plan one call took 3-6 s (RDP)
    #: and 16-32 s (PRV) on this 2-core machine, 30 s and 500 s at nice 19 behind a benchmark on both cores.
    seconds_per_entry: float = 0.2


def _opacus_epsilon(kind: str) -> Callable:
    def epsilon(module, schedule: Schedule) -> float:
        accountant = module.RDPAccountant() if kind == "rdp" else module.PRVAccountant()
        accountant.history = opacus_history(schedule)
        return float(accountant.get_epsilon(delta=schedule.privacy["delta"]))

    return epsilon


def _flower_epsilon(module, schedule: Schedule) -> float:
    return flower_epsilon(module, flower_event(schedule))


def flower_epsilon(module, event: dict) -> float:
    """What Flower's ``RdpAccountant`` (``module``: ``flwr.serverapp``) reports for an export's event, composed as
    Flower composes it (also the interoperability tests' way to ask Flower)."""
    config = module.PrivacyConfig(
        target_delta=event["delta"], population_size=event["population-size"],
        neighboring_relation=module.NeighboringRelation[event["neighboring-relation"]],
        sampling_method=module.SamplingMethod[event["sampling-method"]])
    accountant = module.RdpAccountant(config)
    accountant.compose(module.GaussianPrivacyEvent(noise_multiplier=event["noise-multiplier"],
                                                   sample_size=event["sample-size"],
                                                   population_size=event["population-size"]),
                       count=event["rounds"])
    return float(accountant.get_epsilon(event["delta"]))


#: Opacus's PRVAccountant.get_epsilon defaults: eps_error = 0.01, delta_error = δ/1000 (opacus/accountants/prv.py).
_PRV_EPS_ERROR, _PRV_DELTA_ERROR = 0.01, 1e-3

_ACCOUNTANTS = {
    ("opacus", "rdp"): _Accountant("opacus", "rdp", "Opacus RDPAccountant", "opacus", "opacus.accountants",
                                   _opacus_epsilon("rdp"), predictor="rdp"),
    ("opacus", "prv"): _Accountant("opacus", "prv", "Opacus PRVAccountant", "opacus", "opacus.accountants",
                                   _opacus_epsilon("prv"), predictor="pld", delta_factor=1 - _PRV_DELTA_ERROR,
                                   offset=_PRV_EPS_ERROR, seconds_per_entry=2.0),
    ("flower", "rdp"): _Accountant("flower", "rdp", "Flower RdpAccountant", "flwr", "flwr.serverapp",
                                   _flower_epsilon, predictor="rdp"),
}


def check_library_accountant(library_accountant: str, fmt: str | None) -> None:
    """Refuse a ``library_accountant`` the export format ``fmt`` has no accountant for, or whose library is not
    installed (checked before any work)."""
    if library_accountant not in LIBRARY_ACCOUNTANTS:
        raise ValueError(f"library_accountant must be one of {', '.join(LIBRARY_ACCOUNTANTS)}; got "
                         f"{library_accountant!r}")
    if library_accountant == "fedplan":
        return
    if fmt not in OPTIONS:
        raise ValueError(f"library_accountant={library_accountant} calibrates σ for a library's export (format "
                         f"{' or '.join(name for name, options in OPTIONS.items() if len(options) > 1)}); "
                         f"got format {fmt}")
    if library_accountant not in OPTIONS[fmt]:
        why = " (TF-Privacy's accountant needs TensorFlow, which fedplan does not load)" if fmt == "tf-privacy" else ""
        raise ValueError(f"library_accountant for the {fmt} export must be one of {', '.join(OPTIONS[fmt])}{why}; "
                         f"got {library_accountant}")
    _load(_ACCOUNTANTS[fmt, library_accountant])


def library_module(fmt: str, library_accountant: str) -> str | None:
    """The module the library accountant's check imports (None for ``fedplan`` or a pair without one)."""
    spec = _ACCOUNTANTS.get((fmt, library_accountant))
    return None if spec is None else spec.module


def _load(spec: _Accountant):
    try:
        return import_lazily(spec.module)
    except ImportError:
        raise ValueError(f"library_accountant={spec.accountant} checks σ with {spec.name}, which needs the package "
                         f"{spec.package}: it is not installed (pip install {spec.package}, or "
                         "library_accountant=fedplan)") from None


def library_epsilon(schedule: Schedule, fmt: str, library_accountant: str) -> float:
    """The ε that the library's accountant reports for the export of ``schedule``."""
    check_library_accountant(library_accountant, fmt)
    spec = _ACCOUNTANTS[fmt, library_accountant]
    return spec.epsilon(_load(spec), schedule)


def _with_noise(schedule: Schedule, sigma: float) -> Schedule:
    points = tuple((start, {**values, "noise_multiplier": sigma}) for start, values in schedule.change_points)
    return replace(schedule, change_points=points)


def _slope(tried: list[tuple[float, float]]) -> float:
    """d(library ε)/d(predicted ε) through the last two calls (a secant step); 1 after one call (the predictor off by
    a constant), and where the two calls do not rise together."""
    if len(tried) < 2 or tried[-1][0] == tried[-2][0]:
        return 1.0
    (predicted, reported), (before, then) = tried[-1], tried[-2]
    slope = (reported - then) / (predicted - before)
    return slope if slope > 0 else 1.0


def calibrated(schedule: Schedule, fmt: str, library_accountant: str) -> Schedule:
    """``schedule`` with the σ for which the library's accountant reports ε ≤ the plan's target, its privacy block's
    ε the tight ε of that σ, and ``metadata["library_accountant"]`` saying which accountant σ was calibrated for and
    what each reports. ``fedplan`` returns the schedule as it is."""
    started = time.perf_counter()
    if library_accountant == "fedplan":
        return schedule
    from fedplan.bounds import accounting

    privacy = schedule.privacy
    target = privacy.get("target_epsilon")
    if target is None:
        raise ValueError(f"library_accountant={library_accountant} calibrates σ to the plan's target ε; this plan "
                         "was given its σ (no target_epsilon): plan with a target, or library_accountant=fedplan")
    segments = schedule.segments()
    if len({sigma for _, sigma, _ in segments}) > 1:
        raise ValueError(f"library_accountant={library_accountant} calibrates one noise_multiplier for the whole "
                         f"schedule; this one has {len({sigma for _, sigma, _ in segments})} different ones")
    check_library_accountant(library_accountant, fmt)
    spec = _ACCOUNTANTS[fmt, library_accountant]
    # a calibration calls the library once, twice where the predictor misses
    limits.check_seconds(2 * spec.seconds_per_entry * len(segments), because=f"library_accountant="
                         f"{library_accountant} calls {spec.name} on {len(segments)} history entries")
    module = _load(spec)
    model = {key: value for key, value in schedule.accounting_options().items() if key != "client_sample_rate"}
    phases = [(q, steps) for q, _, steps in segments]
    goal = target * (1 - BAND / 4)
    aim, tried = goal - spec.offset, []  # tried: (predicted ε, library ε) of each call
    while True:
        if aim <= 0:
            raise ValueError(f"{spec.name} reports ε = {tried[-1][1]:.6g} where fedplan's {spec.predictor} predicts "
                             f"{tried[-1][0]:.6g}: no σ brings it to the target ε = {target:g}")
        found = accounting.calibrate_noise_multiplier(target_epsilon=aim, target_delta=privacy["delta"] *
                                                      spec.delta_factor, phases=phases, accountant=spec.predictor,
                                                      time_budget=None, **model)
        candidate = _with_noise(schedule, found.value)
        reported = spec.epsilon(module, candidate)
        tried.append((found.epsilon, reported))
        if (1 - BAND) * target <= reported <= target or (reported <= target and len(tried) == ATTEMPTS):
            break
        if len(tried) == ATTEMPTS:
            raise ValueError(f"{spec.name} still reports ε = {reported:.6g} above the target {target:g} at σ = "
                             f"{found.value:g} after {ATTEMPTS} calibrations: export with library_accountant=fedplan")
        aim = found.epsilon + (goal - reported) / _slope(tried)
    tight = accounting.get_epsilon(delta=privacy["delta"], segments=candidate.segments(), **model)
    record = {"calibrated_for": spec.name, "library": fmt, "accountant": library_accountant,
              "noise_multiplier": found.value, "fedplan_noise_multiplier": segments[0][1],
              "target_epsilon": target, "library_epsilon": reported, "fedplan_epsilon": tight.epsilon,
              "fedplan_accountant": tight.accountant, "library_calls": len(tried),
              "seconds": round(time.perf_counter() - started, 1)}
    return replace(candidate, metadata={**schedule.metadata, "library_accountant": record},
                   privacy={**privacy, "epsilon": tight.epsilon, "accountant": tight.accountant,
                            "bound": tight.bound})
