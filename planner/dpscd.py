"""Plan DP-SCD (Damaskinos thesis, ch. 6): σ for a target (ε, δ), with the authors' MA128 next to a tight accountant.

From (ε, δ), the number of examples N, the mini-batch size L and the epochs: T = ⌊epochs·N/L⌋ iterations at
sampling rate q = L/N, σ from Eq. 6.2 under the chosen accountant, the same calibration under the other
accountant (MA128 is always shown next to the tight PLD answer), the noise std √2·C·σ per coordinate when a
scaling bound C is given, and a one-change-point :class:`planner.export.Schedule` for export.

Privacy model (see :mod:`bounds.dpscd`): Poisson sampling at rate L/N, add/remove-one neighbours, only v
(hence θ = v/(λN)) released; with α released after each iteration the batch is public and the guarantee is
``epsilon_if_batch_revealed`` instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedplan.bounds import dpscd
from fedplan.bounds.validation import check_choice, check_real
from fedplan.planner.export import Schedule, package_versions
from fedplan.planner.schedule import with_gaussian_privacy

PAPER = "Damaskinos, Private and Secure Distributed Learning (EPFL thesis 7096, 2020), ch. 6 DP-SCD"
#: The tight accountant shown next to MA128, and the MA128 shown next to a tight choice.
COMPARED_WITH = {"ma128": "pld", "rdp": "ma128", "pld": "ma128"}


@dataclass(frozen=True)
class DPSCDPlan:
    """σ for DP-SCD under one accountant, the other accountant's σ for the same schedule, and the schedule."""

    examples: int
    batch_size: int
    epochs: float
    calibration: dpscd.NoiseCalibration
    comparison: dict
    clipping_norm: float | None
    epsilon_if_batch_revealed: float | None

    @property
    def steps(self) -> int:
        return self.calibration.steps

    @property
    def noise_std(self) -> float | None:
        """√2·C·σ, the std of the noise on each released coordinate of α_B and v (Lemma 2, L1313 steps 12-13)."""
        if self.clipping_norm is None:
            return None
        return dpscd.sensitivity(algorithm="dpscd", clipping_norm=self.clipping_norm) * \
            self.calibration.noise_multiplier

    def statement(self) -> str:
        c = self.calibration
        text = (f"Run DP-SCD (Algorithm 1) for T = {c.steps} iterations (floor({self.epochs:g} epochs * N / L)) with "
                f"mini-batches of L = {self.batch_size} of N = {self.examples} examples, each example sampled "
                f"independently with probability q = L/N = {c.sample_rate:.6g} (Poisson sampling), and noise "
                f"multiplier sigma = {c.noise_multiplier:.8g}: this is ({dpscd.accounting.round_up(c.epsilon):.6g}, "
                f"{c.target_delta:g})-differentially private for add/remove-one neighbouring data sets when only "
                f"the shared vector v (the model theta = v/(lambda N)) is released; accountant {c.accountant} "
                f"({c.source}).")
        if self.noise_std is not None:
            text += f" Noise std per coordinate sqrt(2)*C*sigma = {self.noise_std:.6g} (C = {self.clipping_norm:g})."
        if self.epsilon_if_batch_revealed is not None:
            text += (f" If alpha is released after every iteration the batches are revealed and the guarantee is "
                     f"only epsilon = {dpscd.accounting.round_up(self.epsilon_if_batch_revealed):.6g} (MA128, no "
                     "amplification).")
        return text

    def summary(self) -> dict:
        c = self.calibration
        return {"noise_multiplier": c.noise_multiplier, "steps": c.steps, "sample_rate": c.sample_rate,
                "batch_size": self.batch_size, "examples": self.examples, "epochs": self.epochs,
                "epsilon": c.epsilon, "target_epsilon": c.target_epsilon, "target_delta": c.target_delta,
                "accountant": c.accountant, "requested_accountant": c.requested_accountant, "order": c.order,
                "epsilon_floor": c.epsilon_floor, "variant": c.variant, "clipping_norm": self.clipping_norm,
                "noise_std": self.noise_std, "epsilon_if_batch_revealed": self.epsilon_if_batch_revealed,
                "comparison": self.comparison, "notes": list(c.notes), "sampling": c.sampling,
                "neighboring_relation": c.neighboring_relation,
                "hypotheses": [item.to_dict() for item in c.hypotheses], "statement": self.statement()}

    def schedule(self, *, with_privacy: bool = True) -> Schedule:
        """One change-point holding for all T iterations, with the privacy metadata (JSON loads back identical);
        ``with_privacy`` adds the privacy block of the tight PLD accountant (the thesis's model: Poisson,
        add/remove-one)."""
        c = self.calibration
        values = {"sample_rate": c.sample_rate, "batch_size": self.batch_size, "noise_multiplier": c.noise_multiplier}
        if self.clipping_norm is not None:
            values |= {"clipping_norm": self.clipping_norm, "noise_std": self.noise_std}
        metadata = {"paper": PAPER, "recipe": "dpscd", "accountant": c.accountant,
                    "requested_accountant": c.requested_accountant, "source": c.source, "variant": c.variant,
                    "epsilon": c.epsilon, "target_epsilon": c.target_epsilon, "delta": c.target_delta,
                    "neighboring_relation": c.neighboring_relation, "sampling": c.sampling,
                    "examples": self.examples, "epochs": self.epochs, "steps": c.steps,
                    "comparison": self.comparison, "versions": package_versions()}
        schedule = Schedule(rounds=c.steps, change_points=((0, values),), metadata=metadata, statement=self.statement())
        if not with_privacy:
            return schedule
        return with_gaussian_privacy(schedule, unit="example", sampling="poisson",
                                     neighboring_relation="add_or_remove_one", dataset_size=self.examples,
                                     delta=c.target_delta, target_epsilon=c.target_epsilon)


def _compared(name: str, *, target_epsilon, target_delta, sample_rate, steps) -> dict:
    """The other accountant's σ for the same schedule, or why it has none (MA128 below its floor)."""
    try:
        other = dpscd.calibrate_noise(target_epsilon=target_epsilon, target_delta=target_delta,
                                      sample_rate=sample_rate, steps=steps, accountant=name)
    except ValueError as error:
        return {"accountant": name, "noise_multiplier": None, "reason": str(error)}
    return {"accountant": other.accountant, "noise_multiplier": other.noise_multiplier, "epsilon": other.epsilon,
            "variant": other.variant}


def plan_dpscd(*, target_epsilon: float, target_delta: float, examples: int, batch_size: int, epochs: float,
               accountant: str = "ma128", clipping_norm: float | None = None, compare: bool = True) -> DPSCDPlan:
    """σ for DP-SCD with ε ≤ target under ``accountant`` (thesis Eq. 6.2, L1336-1340), T = ⌊epochs·N/L⌋.

    ``"ma128"`` (default) reproduces the authors' σ (MSD: N = 347 786, 50 epochs, δ = 1e-3, ε = 0.1, L = 1000 →
    σ = 14.22328); with ``compare`` the tight PLD σ is computed too (or MA128's when a tight accountant is
    chosen). Whole ``epochs`` also give the ε if α is released (:func:`bounds.dpscd.epsilon_if_batch_revealed`).
    """
    accountant = check_choice("accountant", accountant, dpscd.ACCOUNTANTS)
    steps = dpscd.outer_iterations(examples=examples, batch_size=batch_size, epochs=epochs)
    q = dpscd.sample_rate(examples=examples, batch_size=batch_size)
    if clipping_norm is not None:
        clipping_norm = check_real("clipping_norm", clipping_norm, low=0.0, low_open=True)
    calibration = dpscd.calibrate_noise(target_epsilon=target_epsilon, target_delta=target_delta, sample_rate=q,
                                        steps=steps, accountant=accountant)
    comparison = {}
    if compare:
        comparison = _compared(COMPARED_WITH[accountant], target_epsilon=target_epsilon, target_delta=target_delta,
                               sample_rate=q, steps=steps)
    revealed = None
    if float(epochs).is_integer():
        revealed = dpscd.epsilon_if_batch_revealed(noise_multiplier=calibration.noise_multiplier, epochs=int(epochs),
                                                   delta=target_delta)
    return DPSCDPlan(examples=int(examples), batch_size=int(batch_size), epochs=float(epochs), calibration=calibration,
                     comparison=comparison, clipping_norm=clipping_norm, epsilon_if_batch_revealed=revealed)
