"""Plan an A(DP)²SGD run (Xu et al.): noise from Theorem 2 with its feasibility, next to tight accountants.

From (K workers, n_k records each, batch B, T iterations, δ, and a target ε or a noise level, clipping norm G)
to one plan:

* the paper's answer: Theorem 2 with the best μ (ε → least σ, or σ → certified ε), whether its hypotheses
  hold, and the smallest ε it can certify at all (the floor) with its noise band;
* the tight answer for the very same schedule and model: sampling without replacement at rate
  γ = B/(K n₍₁₎), replace-one neighbours (Wang-Balle-Kasiviswanathan 2019, Thm 27);
* the conservative per-worker answer (no amplification by worker selection);
* the familiar reference: Poisson sampling at rate γ, add/remove-one neighbours (:mod:`bounds.accounting`);
* a schedule (:class:`planner.export.Schedule`) with the chosen noise, exported as CSV/JSON/YAML.

The noise is added to each worker's averaged minibatch gradient (std 2Gz/B; B times that on the sum,
erratum XU-1), see :mod:`bounds.adp2sgd`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fedplan.bounds import accounting
from fedplan.bounds import adp2sgd as xu
from fedplan.bounds.theorem import all_hold
from fedplan.bounds.validation import check_choice, check_real
from fedplan.planner.display import theorem_fields
from fedplan.planner.export import Schedule, package_versions
from fedplan.planner.schedule import with_gaussian_privacy

NOISE_SOURCES = ("auto", "paper", "tight")
PAPER = "Xu, Zhang, Wang: A(DP)2SGD, asynchronous decentralized parallel SGD with differential privacy"


@dataclass(frozen=True)
class ADP2SGDPlan:
    """One A(DP)²SGD plan: the chosen noise, the paper's certificate and the tight accountants' answers."""

    setting: xu.Setting
    clipping_norm: float
    target_epsilon: float | None
    noise_to_sensitivity: float
    noise_source: str
    paper_noise: xu.PaperNoise | None
    certificate: xu.Certificate
    floor: xu.Floor | None
    floor_reason: str
    tight: xu.TightEpsilon
    tight_calibrated: xu.TightEpsilon | None
    per_worker: xu.TightEpsilon
    reference: accounting.AccountingResult
    learning_rate: float | None
    variant: str

    @property
    def feasible(self) -> bool:
        """Whether Theorem 2 certifies the target ε (ε-first) or anything at the given noise (σ-first)."""
        return self.certificate.feasible if self.paper_noise is None else self.paper_noise.feasible

    @property
    def noise_std(self) -> float:
        """Std of the noise on each worker's averaged minibatch gradient, 2Gz/B (xu L518)."""
        return xu.noise_std(noise_to_sensitivity=self.noise_to_sensitivity, clipping_norm=self.clipping_norm,
                            batch_size=self.setting.batch_size)

    @property
    def hypotheses(self):
        return self.certificate.hypotheses if self.paper_noise is None else self.paper_noise.hypotheses

    def statement(self) -> str:
        s = self.setting
        c = self.certificate
        paper = (f"Theorem 2 certifies epsilon = {accounting.round_up(c.epsilon):g} at delta = {s.delta:g} for this "
                 f"noise (mu = {c.mu:.6g})" if c.valid else
                 f"Theorem 2's formula gives epsilon = {c.epsilon:.6g} at delta = {s.delta:g} for this noise (mu = "
                 f"{c.mu:.6g}): no guarantee (failing: {', '.join(h.name for h in c.hypotheses if not h.holds)})")
        if self.target_epsilon is not None and not self.feasible:
            paper = f"Theorem 2 cannot certify the target epsilon {self.target_epsilon:g}; " + paper
        floor = (f"; the smallest epsilon it can certify here is {accounting.round_up(self.floor.epsilon):g}"
                 if self.floor is not None else f"; {self.floor_reason}")
        return (f"{s.workers} workers x {s.smallest_dataset} records, batch {s.batch_size}, {s.steps} iterations, "
                f"z (noise_to_sensitivity) = {self.noise_to_sensitivity:.6g} ({self.noise_source}): Gaussian noise "
                f"of std {self.noise_std:.6g} = 2Gz/B added to {xu.NOISE_ON_MEAN} (B times that if added to the summed "
                f"gradient). {paper}{floor}. Tight accountant, same model ({xu.PAPER_SAMPLING}; replace-one "
                f"neighbours): epsilon = {accounting.round_up(self.tight.epsilon):g}. Without amplification by worker "
                f"selection (sampling without replacement at rate B/n_(1), {s.worker_steps} updates per worker; "
                f"replace-one): epsilon = "
                f"{accounting.round_up(self.per_worker.epsilon):g}. Reference only ({xu.POISSON_REFERENCE}): epsilon "
                f"= {accounting.round_up(self.reference.epsilon):g}.")

    def summary(self) -> dict:
        """The JSON answer of ``fedplan adp2sgd``."""
        certificate = self.certificate
        theorem = None if self.paper_noise is None else self.paper_noise.theorem
        hypotheses = list(self.hypotheses)
        return {
            "setting": self.setting.to_dict(), "clipping_norm": self.clipping_norm,
            "target_epsilon": self.target_epsilon, "noise_source": self.noise_source,
            "noise_to_sensitivity": self.noise_to_sensitivity, "noise_std": self.noise_std,
            "noise_std_sum": self.setting.batch_size * self.noise_std, "noise_added_to": xu.NOISE_ON_MEAN,
            "epsilon": certificate.epsilon, "mu": theorem.mu if theorem is not None else certificate.mu,
            "alpha": theorem.alpha if theorem is not None else certificate.alpha,
            "feasible": self.feasible, "paper_reason": "" if self.paper_noise is None else self.paper_noise.reason,
            "floor_epsilon": None if self.floor is None else self.floor.epsilon,
            "floor_noise_to_sensitivity": None if self.floor is None else self.floor.noise_to_sensitivity,
            "noise_band": None if self.floor is None else list(self.floor.band),
            "tight_epsilon": self.tight.epsilon, "tight_order": self.tight.order,
            "tight_noise_to_sensitivity": (None if self.tight_calibrated is None
                                           else self.tight_calibrated.noise_to_sensitivity),
            "tight_accountant": self.tight.accountant, "tight_sampling": self.tight.sampling,
            "per_worker_epsilon": self.per_worker.epsilon, "per_worker_sampling": self.per_worker.sampling,
            "reference_epsilon": self.reference.epsilon, "reference_accountant": self.reference.accountant,
            "reference_sampling": xu.POISSON_REFERENCE, "neighboring_relation": xu.NEIGHBORING_RELATION,
            "variant": self.variant, "learning_rate": self.learning_rate,
            "hypotheses": [h.to_dict() for h in hypotheses], "hypotheses_hold": all_hold(hypotheses),
            "source": xu.SOURCE, "statement": self.statement(),
        }

    def schedule(self, *, with_privacy: bool = True) -> Schedule:
        """One worker's updates, in fedplan's (and Opacus's) noise vocabulary: ``noise_multiplier`` = noise std /
        clipping norm on the *sum* of the B clipped gradients = 2z (Xu's z is ``noise_to_sensitivity``; the noise on
        the averaged gradient is ``noise_std`` = 2Gz/B). A record lives on one worker and is exposed only in that
        worker's ⌈T/K⌉ updates, each sampling B of its n₍₁₎ records without replacement (replace-one, no credit for
        the random choice of the worker); ``with_privacy`` adds the tight accountant's privacy block."""
        s = self.setting
        values = {"sample_rate": s.batch_size / s.smallest_dataset, "batch_size": s.batch_size,
                  "noise_multiplier": 2 * self.noise_to_sensitivity, "noise_to_sensitivity": self.noise_to_sensitivity,
                  "noise_std": self.noise_std, "clipping_norm": self.clipping_norm}
        if self.learning_rate is not None:
            values["learning_rate"] = self.learning_rate
        metadata = {
            "paper": PAPER, "variant": self.variant, "noise_source": self.noise_source,
            "workers": s.workers, "smallest_dataset": s.smallest_dataset, "iterations": s.steps,
            "rounds": "updates of one worker (its records' exposure); the run has T iterations over all workers",
            "delta": s.delta, "target_epsilon": self.target_epsilon,
            "paper_epsilon": self.certificate.epsilon, "paper_feasible": self.feasible,
            "paper_model_tight_epsilon": self.tight.epsilon, "per_worker_epsilon": self.per_worker.epsilon,
            "reference_epsilon": self.reference.epsilon, "noise_added_to": xu.NOISE_ON_MEAN,
            **theorem_fields(self.hypotheses), "versions": package_versions(),
        }
        schedule = Schedule(rounds=s.worker_steps, change_points=((0, values),), metadata=metadata,
                            statement=self.statement())
        if not with_privacy:
            return schedule
        return with_gaussian_privacy(schedule, unit="example", sampling="fixed_size",
                                     neighboring_relation=xu.NEIGHBORING_RELATION, dataset_size=s.smallest_dataset,
                                     delta=s.delta, target_epsilon=self.target_epsilon)

    def cumulative_epsilon(self) -> np.ndarray:
        return xu.tight_epsilon_after_each_step(setting=self.setting, noise_to_sensitivity=self.noise_to_sensitivity)


def _floor(setting: xu.Setting) -> tuple[xu.Floor | None, str]:
    try:
        return xu.epsilon_floor(setting=setting), ""
    except ValueError as empty:
        return None, str(empty)


def plan_adp2sgd(*, setting: xu.Setting, target_epsilon: float | None = None,
                 noise_to_sensitivity: float | None = None, clipping_norm: float = 1.0, noise_source: str = "auto",
                 learning_rate: float | None = None, variant: str = "corrected",
                 reference_accountant: str = "rdp") -> ADP2SGDPlan:
    """Plan from a target ε (ε → σ) or Xu's z (``noise_to_sensitivity``) = σB/(2G) (σ → ε); give exactly one.

    With a target ε the noise comes from ``noise_source``: ``"paper"`` (Theorem 2's least σ; raises
    ``ValueError`` naming the floor if it cannot certify the target), ``"tight"`` (the least z of the tight
    same-model accountant) or ``"auto"`` (the paper's when feasible, else the tight one). ``variant`` applies
    to the σ → ε certificate: ``"corrected"`` uses the monotone envelope, ``"paper"`` the raw value.
    """
    if (target_epsilon is None) == (noise_to_sensitivity is None):
        raise ValueError("give exactly one of target_epsilon and noise_to_sensitivity")
    source = check_choice("noise_source", noise_source, NOISE_SOURCES)
    g = check_real("clipping_norm", clipping_norm, low=0.0, low_open=True)
    if learning_rate is not None:
        learning_rate = check_real("learning_rate", learning_rate, low=0.0, low_open=True)
    floor, floor_reason = _floor(setting)
    paper_noise = tight_calibrated = None
    if target_epsilon is not None:
        paper_noise = xu.paper_noise_for_epsilon(setting=setting, target_epsilon=target_epsilon, clipping_norm=g)
        if source == "paper" and not paper_noise.feasible:
            raise ValueError(f"Theorem 2 cannot certify target_epsilon={target_epsilon:g}: {paper_noise.reason}")
        tight_calibrated = xu.tight_noise_to_sensitivity(setting=setting, target_epsilon=target_epsilon)
        use_paper = source == "paper" or (source == "auto" and paper_noise.feasible)
        z = paper_noise.noise_to_sensitivity if use_paper else tight_calibrated.noise_to_sensitivity
        chosen = "Theorem 2, least noise over mu" if use_paper else "tight accountant (WBK'19 Thm 27), least noise"
    else:
        z = check_real("noise_to_sensitivity", noise_to_sensitivity, low=xu.rdp.MIN_NOISE_MULTIPLIER,
                       high=xu.rdp.MAX_NOISE_MULTIPLIER)
        chosen = "given"
    certificate = xu.paper_epsilon_for_noise(setting=setting, noise_to_sensitivity=z, variant=variant)
    return ADP2SGDPlan(
        setting=setting, clipping_norm=g, target_epsilon=target_epsilon, noise_to_sensitivity=z,
        noise_source=chosen, paper_noise=paper_noise, certificate=certificate, floor=floor, floor_reason=floor_reason,
        tight=xu.tight_epsilon(setting=setting, noise_to_sensitivity=z), tight_calibrated=tight_calibrated,
        per_worker=xu.tight_epsilon(setting=setting, noise_to_sensitivity=z, sampling="per_worker"),
        reference=xu.poisson_reference(setting=setting, noise_to_sensitivity=z, accountant=reference_accountant),
        learning_rate=learning_rate, variant=variant)


def epsilon_against_noise(*, setting: xu.Setting, points: int = 24,
                          progress: Callable[[int, int], None] | None = None) -> list[dict]:
    """ε against Xu's z (``noise_to_sensitivity``) on a log grid from 0.5 to twice the top of Theorem 2's noise band
    (its ends included); ``progress(done, total)`` after each point. The A(DP)²SGD page's chart and its CSV.

    Each row has Theorem 2's certificate at z itself (``paper_epsilon``, xu L171-173 with the best μ: the ``"paper"``
    variant of :func:`bounds.adp2sgd.paper_epsilon_for_noise`, no envelope; a number at every z, outside the band
    the formula's), and ``paper_guarantee``: ``"guarantee"`` only where every hypothesis of Lemma 2 holds (z inside
    the band), else ``"no guarantee"``; and the tight same-model RDP bound (``tight_epsilon``,
    :func:`bounds.adp2sgd.tight_epsilon`).
    """
    low, high = xu.noise_band(setting=setting)
    grid = np.unique(np.concatenate([np.geomspace(0.5, max(2 * high, 4.0), points), [low, high]]))
    rows = []
    for index, z in enumerate(grid):
        paper = xu.paper_epsilon_for_noise(setting=setting, noise_to_sensitivity=float(z), variant="paper")
        rows.append({"noise_to_sensitivity": float(z), "paper_epsilon": paper.epsilon,
                     "paper_guarantee": paper.guarantee,
                     "tight_epsilon": xu.tight_epsilon(setting=setting, noise_to_sensitivity=float(z)).epsilon})
        if progress is not None:
            progress(index + 1, len(grid))
    return rows
