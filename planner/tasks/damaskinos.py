"""The Damaskinos thesis: DP-SCD's σ for a target (ε, δ), AdaSGD's staleness dampening, Byzantine capacity.

``fedplan dpscd calibrate``, ``fedplan staleness beta`` and ``fedplan byzantine max-f|min-n`` run these; the
work is done by :mod:`fedplan.planner.dpscd` and :mod:`fedplan.planner.damaskinos`.

    fedplan dpscd calibrate --target-epsilon 0.1 --target-delta 1e-3 --batch-size 1000 --examples 347786 \\
        --epochs 50
    fedplan staleness beta --staleness-threshold 12 --staleness-values 0 6 12 48
    fedplan byzantine max-f --rule bulyan --workers 19
    fedplan byzantine min-n --rule kardam --faults 3
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from fedplan.bounds import byzantine
from fedplan.planner import damaskinos
from fedplan.planner.dpscd import plan_dpscd
from fedplan.planner.export import FORMATS, check_schedule_file, write_schedule
from fedplan.planner.tasks.accounting import target_delta_field, target_epsilon_field
from fedplan.planner.tasks.base import Report, Request, choice, count, flag, real, text

ACCOUNTANTS = ("ma128", "pld", "rdp")


@dataclass(frozen=True, kw_only=True)
class DpscdCalibrate(Request):
    """σ with MA(δ, σ, L/N, ⌊E·N/L⌋) ≤ ε (thesis Eq. 6.2), next to the other accountant's σ."""

    command: ClassVar = ("dpscd", "calibrate")
    summary: ClassVar = "σ with MA(δ, σ, L/N, floor(E·N/L)) ≤ target ε (thesis Eq. 6.2)"

    target_epsilon: float = target_epsilon_field(deprecated=("--epsilon",))
    target_delta: float = target_delta_field(help="target δ in (0, 1) (thesis: 1e-3)", deprecated=("--delta",))
    batch_size: int = count(..., help="mini-batch size L (≤ examples)", low=1, deprecated=("--batch",))
    examples: int = count(..., help="number of training examples N", low=1)
    epochs: float = real(..., help="passes over the data E; T = floor(E·N/L)", low=0.0, low_open=True)
    accountant: str = choice("ma128", help="ma128: the authors' moments accountant (orders 1..128); pld/rdp: tight",
                             choices=ACCOUNTANTS)
    clipping_norm: float | None = real(None, help="update scaling bound C (reports the noise std √2·C·σ)",
                                       low=0.0, low_open=True)
    no_compare: bool = flag(help="skip the other accountant's σ")
    out: str | None = text(None, help=f"write the schedule ({', '.join(FORMATS)})", metavar="FILE")

    def check(self) -> None:
        if self.batch_size > self.examples:
            raise ValueError(f"batch_size must be an integer in [1, {self.examples}] (at most examples); got "
                             f"{self.batch_size}")
        if self.out is not None:
            check_schedule_file(self.out)  # a bad file name or folder is refused before calibrating

    def run(self, *, progress=None) -> Report:
        plan = plan_dpscd(target_epsilon=self.target_epsilon, target_delta=self.target_delta, examples=self.examples,
                          batch_size=self.batch_size, epochs=self.epochs, accountant=self.accountant,
                          clipping_norm=self.clipping_norm, compare=not self.no_compare)
        summary = plan.summary()
        if self.out is not None:
            path = write_schedule(plan.schedule(), self.out)
            summary = {"out": str(path), **summary,
                       "statement": f"wrote {plan.steps} iterations to {path}. " + summary["statement"]}
        return Report(values=summary, result=plan)


@dataclass(frozen=True, kw_only=True)
class StalenessBeta(Request):
    """AdaSGD's β = 2 ln(1 + τ_thres/2)/τ_thres and the dampening it gives."""

    command: ClassVar = ("staleness", "beta")
    summary: ClassVar = "β = 2 ln(1 + τ_thres/2)/τ_thres and the dampening it gives (AdaSGD, L612)"

    staleness_threshold: float = real(..., help="staleness threshold τ_thres (the s-th percentile of staleness, "
                                      "Damaskinos L612)", low=0.0, low_open=True, deprecated=("--tau-thres",))
    staleness_values: tuple[float, ...] | None = real(None, help="staleness values τ to report Λ(τ) at (default 0, "
                                                      "τ_thres/2, τ_thres, 4τ_thres)", low=0.0, multiple=True,
                                                      deprecated=("--tau",))
    staleness_mean: float | None = real(None, help="mean of the Gaussian staleness law (default τ_thres/2)",
                                        low=0.0, deprecated=("--mean",))
    staleness_std: float | None = real(None, help="std of the Gaussian staleness law (default τ_thres/6)", low=0.0,
                                       low_open=True, deprecated=("--std",))

    def check(self) -> None:
        mean, std = damaskinos.staleness_law(staleness_threshold=self.staleness_threshold,
                                             staleness_mean=self.staleness_mean, staleness_std=self.staleness_std)
        if mean + 3 * std > damaskinos.MAX_STALENESS:
            raise ValueError(f"staleness_mean + 3 staleness_std (the largest staleness of the law) must be <= "
                             f"{damaskinos.MAX_STALENESS:g}; got {mean:g} + 3 * {std:g} (staleness_mean defaults to "
                             "staleness_threshold/2, staleness_std to staleness_threshold/6)")

    def run(self, *, progress=None) -> Report:
        values = damaskinos.staleness_dampening(
            staleness_threshold=self.staleness_threshold, staleness_values=self.staleness_values,
            staleness_mean=self.staleness_mean, staleness_std=self.staleness_std)
        return Report(values=values)


def rule_field():
    return choice(..., help="Byzantine-resilient aggregation rule (averaging is not resilient)",
                  choices=byzantine.RULES)


@dataclass(frozen=True, kw_only=True)
class ByzantineMaxF(Request):
    """The largest number of Byzantine workers n workers tolerate."""

    command: ClassVar = ("byzantine", "max-f")
    summary: ClassVar = "largest number of Byzantine workers n workers tolerate"

    rule: str = rule_field()
    workers: int = count(..., help="number of workers n", low=1)

    def run(self, *, progress=None) -> Report:
        return Report(values=damaskinos.byzantine_capacity(workers=self.workers, rule=self.rule))


@dataclass(frozen=True, kw_only=True)
class ByzantineMinN(Request):
    """The smallest number of workers that tolerates f Byzantine ones."""

    command: ClassVar = ("byzantine", "min-n")
    summary: ClassVar = "smallest number of workers that tolerates f Byzantine ones"

    rule: str = rule_field()
    faults: int = count(..., help="number of Byzantine workers f the rule must tolerate", low=0)

    def run(self, *, progress=None) -> Report:
        return Report(values=damaskinos.byzantine_min_workers(faults=self.faults, rule=self.rule))


TASKS = (DpscdCalibrate, StalenessBeta, ByzantineMaxF, ByzantineMinN)
