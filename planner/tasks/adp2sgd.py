"""Xu et al.'s A(DP)2SGD: Theorem 2 (noise ↔ ε, its floor) next to tight accountants, and the schedule export.

``fedplan adp2sgd sigma|epsilon|min-epsilon|schedule`` run these (the A(DP)2SGD page can build the same requests).
The noise is Xu's z (``noise_to_sensitivity``: noise std / (2G/B) on each worker's averaged minibatch gradient,
replace-one neighbours) or the absolute std σ (``noise_std``, on the mean or on the sum with ``noise_on``).

    fedplan adp2sgd sigma --workers 16 --examples-per-worker 3125 --batch-size 256 --steps 58594 \\
        --target-delta 1e-5 --target-epsilon 10
    fedplan adp2sgd epsilon --workers 16 --examples-per-worker 3125 --batch-size 256 --steps 58594 --delta 1e-5 \\
        --noise-to-sensitivity 2 --json
    fedplan adp2sgd min-epsilon --workers 16 --examples-per-worker 3125 --batch-size 256 --steps 58594 --delta 1e-5
    fedplan adp2sgd schedule ... --target-delta 1e-5 --target-epsilon 10 --out plan.json
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from fedplan.bounds import accounting, rdp
from fedplan.bounds import adp2sgd as xu
from fedplan.planner.adp2sgd import plan_adp2sgd
from fedplan.planner.export import FORMATS, check_schedule_file, write_schedule
from fedplan.planner.tasks.accounting import target_delta_field, target_epsilon_field
from fedplan.planner.tasks.base import OneOf, Report, Request, choice, count, real, text

#: Xu's z is checked in the noise multiplier's range (the accountants evaluate 2z there).
NOISE_RANGE = (rdp.MIN_NOISE_MULTIPLIER, rdp.MAX_NOISE_MULTIPLIER)
#: T is refused above the accountants' range: every plan also accounts T steps of the Poisson reference
#: (:func:`fedplan.bounds.adp2sgd.poisson_reference`), which refused T > 1e9 only after the tight accounting had run.
MAX_STEPS = accounting.MAX_STEPS


def noise_to_sensitivity_field():
    return real(None, help="Xu's z: noise std / (2G/B), the replace-one sensitivity of the averaged minibatch "
                "gradient (xu L518); the noise multiplier of the same noise is 2z", low=NOISE_RANGE[0],
                high=NOISE_RANGE[1], deprecated=("--noise-multiplier", "-z"))


def noise_std_field():
    return real(None, help="absolute noise std σ (added where noise_on says)", low=0.0, low_open=True,
                deprecated=("--sigma",))


def noise_on_field():
    return choice("mean", help="noise_std is added to each worker's averaged minibatch gradient (mean, the paper's "
                  "proof, xu L518) or to the summed one (sum, Algorithm 1 as written, xu L109)",
                  choices=("mean", "sum"))


def variant_field():
    return choice("corrected", help="corrected: monotone envelope of Theorem 2's certificate; paper: the raw value",
                  choices=xu.VARIANTS)


@dataclass(frozen=True, kw_only=True)
class _Adp2sgdRequest(Request):
    """K workers, n₍₁₎ records on the smallest, batch B, T iterations, clipping G (xu L171-175)."""

    workers: int = count(..., help="number of workers K", low=1, high=xu.MAX_WORKERS, deprecated=("-K",))
    examples_per_worker: int = count(..., help="records of the smallest worker n₍₁₎ (xu L175)", low=1,
                                     high=xu.MAX_EXAMPLES_PER_WORKER, deprecated=("-n",))
    batch_size: int = count(..., help="minibatch size B per update (B ≤ examples_per_worker)", low=1,
                            deprecated=("-B",))
    steps: int = count(..., help="total iterations T (all workers)", low=1, high=MAX_STEPS, deprecated=("-T",))
    worker_steps: int | None = count(None, help="most updates one worker makes, for the per-worker accountant "
                                     "(default ceil(T/K))", low=1, high=MAX_STEPS)
    clipping_norm: float = real(1.0, help="per-example gradient clipping norm G", low=0.0, low_open=True,
                                deprecated=("-G",))
    reference_accountant: str = choice("rdp", help="accountant of the Poisson add/remove-one reference shown next "
                                       "to the paper's number", choices=("rdp", "pld"))

    def privacy_delta(self) -> float:
        return self.delta

    def setting(self) -> xu.Setting:
        return xu.Setting(workers=self.workers, examples_per_worker=self.examples_per_worker,
                          batch_size=self.batch_size, steps=self.steps, delta=self.privacy_delta(),
                          worker_steps=self.worker_steps)

    def noise(self) -> float | None:
        """z: ``noise_to_sensitivity`` as given, or ``noise_std`` converted (refused by name outside the range)."""
        if getattr(self, "noise_std", None) is None:
            return getattr(self, "noise_to_sensitivity", None)
        z = xu.noise_to_sensitivity_of_std(std=self.noise_std, clipping_norm=self.clipping_norm,
                                       batch_size=self.batch_size, noise_on=self.noise_on)
        if not NOISE_RANGE[0] <= z <= NOISE_RANGE[1]:
            raise ValueError(f"noise_std = {self.noise_std:g} is noise_to_sensitivity z = {z:g} (noise_on "
                             f"{self.noise_on}, clipping_norm {self.clipping_norm:g}, batch_size {self.batch_size}), "
                             f"outside [{NOISE_RANGE[0]:g}, {NOISE_RANGE[1]:g}]")
        return z

    def check(self) -> None:
        self.setting()
        self.noise()

    def common(self) -> dict:
        return {"setting": self.setting(), "clipping_norm": self.clipping_norm,
                "reference_accountant": self.reference_accountant}


@dataclass(frozen=True, kw_only=True)
class Sigma(_Adp2sgdRequest):
    """Least noise for a target ε: Theorem 2 (best μ) and the tight accountant."""

    command: ClassVar = ("adp2sgd", "sigma")
    summary: ClassVar = "least noise for a target ε: Theorem 2 (best μ) and the tight accountant"

    target_epsilon: float = target_epsilon_field(help="target ε > 0", deprecated=("--epsilon",))
    target_delta: float = target_delta_field(deprecated=("--delta",))

    def privacy_delta(self) -> float:
        return self.target_delta

    def run(self, *, progress=None) -> Report:
        plan = plan_adp2sgd(target_epsilon=self.target_epsilon, **self.common())
        return Report(values=plan.summary(), result=plan)


@dataclass(frozen=True, kw_only=True)
class Epsilon(_Adp2sgdRequest):
    """ε of a noise level: Theorem 2 (best μ) and the tight accountant."""

    command: ClassVar = ("adp2sgd", "epsilon")
    summary: ClassVar = "ε of a noise level: Theorem 2 (best μ) and the tight accountant"
    one_of: ClassVar = (OneOf(("noise_to_sensitivity", "noise_std")),)

    delta: float = real(..., help="δ at which ε is reported, in (0, 1)", low=0.0, high=1.0, low_open=True,
                        high_open=True)
    noise_to_sensitivity: float | None = noise_to_sensitivity_field()
    noise_std: float | None = noise_std_field()
    noise_on: str = noise_on_field()
    variant: str = variant_field()

    def run(self, *, progress=None) -> Report:
        plan = plan_adp2sgd(noise_to_sensitivity=self.noise(), variant=self.variant, **self.common())
        return Report(values=plan.summary(), result=plan)


@dataclass(frozen=True, kw_only=True)
class MinEpsilon(_Adp2sgdRequest):
    """The smallest ε Theorem 2 can certify and its noise band."""

    command: ClassVar = ("adp2sgd", "min-epsilon")
    summary: ClassVar = "smallest ε Theorem 2 can certify and its noise band"

    delta: float = real(..., help="δ at which ε is reported, in (0, 1)", low=0.0, high=1.0, low_open=True,
                        high_open=True)

    def run(self, *, progress=None) -> Report:
        setting = self.setting()
        floor = xu.epsilon_floor(setting=setting)
        plan = plan_adp2sgd(noise_to_sensitivity=floor.noise_to_sensitivity, **self.common())
        summary = plan.summary()
        summary["analytic_lower_bound"] = floor.analytic_lower_bound
        summary["statement"] = (f"Theorem 2 cannot certify epsilon below {floor.epsilon:.6g} at delta = "
                                f"{setting.delta:g} (reached at z = {floor.noise_to_sensitivity:.6g}; it "
                                f"certifies nothing outside z in [{floor.band[0]:.6g}, {floor.band[1]:.6g})). "
                                + summary["statement"])
        return Report(values=summary, result=plan)


@dataclass(frozen=True, kw_only=True)
class Schedule(_Adp2sgdRequest):
    """Write the schedule of a target ε or a noise level to CSV, JSON or YAML."""

    command: ClassVar = ("adp2sgd", "schedule")
    summary: ClassVar = "write the schedule to CSV, JSON or YAML"
    one_of: ClassVar = (OneOf(("target_epsilon", "noise_to_sensitivity", "noise_std")),)

    target_epsilon: float | None = target_epsilon_field(None, help="target ε > 0 (or give the noise)",
                                                        deprecated=("--epsilon",))
    target_delta: float = target_delta_field(deprecated=("--delta",))
    noise_to_sensitivity: float | None = noise_to_sensitivity_field()
    noise_std: float | None = noise_std_field()
    noise_on: str = noise_on_field()
    variant: str = variant_field()
    noise_source: str = choice("auto", help="with target_epsilon: Theorem 2's noise (paper), the tight "
                               "accountant's (tight), or paper when it can certify the target (auto)",
                               choices=("auto", "paper", "tight"))
    learning_rate: float | None = real(None, help="learning rate η written into the schedule", low=0.0,
                                       low_open=True)
    out: str = text(..., help=f"output file ({', '.join(FORMATS)})", metavar="FILE")

    def privacy_delta(self) -> float:
        return self.target_delta

    def check(self) -> None:
        check_schedule_file(self.out)  # a bad file name or folder is refused before the accounting
        super().check()

    def run(self, *, progress=None) -> Report:
        plan = plan_adp2sgd(target_epsilon=self.target_epsilon, noise_to_sensitivity=self.noise(),
                            noise_source=self.noise_source, learning_rate=self.learning_rate, variant=self.variant,
                            **self.common())
        path = write_schedule(plan.schedule(), self.out)
        summary = plan.summary()
        summary["statement"] = f"wrote {plan.setting.steps} iterations to {path}. " + summary["statement"]
        return Report(values={"out": str(path), **summary}, result=plan)


TASKS = (Sigma, Epsilon, MinEpsilon, Schedule)
