"""DP-SCD (Damaskinos thesis Alg. 1, L1313) and DP-SGD on the same L2-regularised GLM, at equal (ε, δ).

Problem (damaskinos L396, L431; spec §2.2): N examples x_i ∈ ℝ^M scaled to ‖x_i‖ = 1 (L1300), primal
P(θ) = (1/N)Σ ℓ_i(x_iᵀθ) + (λ/2)‖θ‖², dual F*(α) = (1/N)Σ ℓ_i*(−α_i) + ‖Xᵀα‖²/(2λN²), θ(α) = Xᵀα/(λN).
Losses: ``"ridge"`` ½(z − y)², ``"logistic"`` log(1 + e^{−yz}), ``"hinge"`` max(0, 1 − yz) with y ∈ {−1, +1}.

DP-SCD (:func:`run_dpscd`): each of T iterations samples a batch B (Poisson at rate q = L/N, the accountant's
model, or a fixed-size batch of L as printed), computes the |B| coordinate updates *independently* from the
same (α, v) with the closed forms of spec §3.1 (σ′ = L, the nominal batch size: a data-dependent |B| would
change every other update when one example is removed), scales each to |Δ_j| ≤ C and adds N(0, 2C²σ²) to the
|B| updated coordinates of α and to all M coordinates of v (L1313 steps 12-13); the released model is
θ = v/(λN). Domain constraints (a·y ∈ [0, 1]) are enforced on the value read, never on the released α (L1342).

DP-SGD (:func:`run_dpsgd`, the thesis' competitor, spec §3.5): per iteration a Poisson batch, per-example
gradients ℓ′(z)x clipped to C (with ‖x‖ = 1 the clip is on the scalar ℓ′), noise N(0, σ²C²I), step
θ ← θ − η[(Σ clip + noise)/L + λθ]. Its σ is calibrated for its own q and T at the same target
(:func:`calibrate_pair`).

The thesis' baselines (§6.3.3-6.3.4; compared in Fig. 6.1, L1569, where SeqDP-SCD is the worst):
SeqDP-SCD (:func:`run_seqdpscd`, Alg. 3) makes the batch's updates one after the other and needs noise std
√(4L²−2)·C·σ (Lemma 4); PrimalDP-SCD (:func:`run_primaldpscd`, Alg. 2) updates L coordinates of θ from all the
examples (q = 1) with the same printed std, whose Lemma 3 understates the sensitivity (DPSCD-A23).
:func:`compare_algorithms` calibrates the four to one target (ε, δ) and runs them.

Privacy (:func:`dp_ledger`): ε of T Poisson-subsampled Gaussian releases at rate q with multiplier σ under the
named accountant (``ma128`` the thesis' choice, or ``rdp``/``pld``), add/remove-one neighbours; for DP-SCD this
holds when only v (θ) is released — releasing α reveals B (``epsilon_if_batch_revealed``, spec C3). A run
with ``sampling="fixed"`` draws exactly L distinct of the N examples per iteration (uniformly, without
replacement) and is accounted as such: ``bounds.accounting`` with ``sampling="fixed_size"``,
``dataset_size=N``, add/remove-one as the thesis' proof (L1328; ``bounds.sampling``: the Poisson accountant
at rate L/N and noise multiplier σ/2, an upper bound). ``ma128`` is a Poisson-only accountant, so a fixed run
asked for it is accounted by ``rdp`` and its ledger says so.
"""

from __future__ import annotations

import math
import time as wallclock
from dataclasses import asdict, dataclass, replace
from functools import cached_property, partial

import numpy as np
from scipy.special import expit

from fedplan.bounds import accounting, dpscd
from fedplan.bounds.references import cite
from fedplan.bounds.sampling import SAMPLING_HELP
from fedplan.bounds.validation import check_choice, check_int, check_real
from fedplan.planner.simulate.data import Dataset, load_dataset
from fedplan.planner.simulate.engine import finite_or_none, spawn_generators
from fedplan.planner.simulate.models import Model, is_finite
from fedplan.planner.simulate.records import Diverged, RoundRecorder, SimulationResult

__all__ = ["ALGORITHMS", "DPSCD_PRESETS", "LOSSES", "SAMPLINGS", "SAMPLING_KEYS", "BaselineCalibration",
           "DualProblem", "ProblemShape", "calibrate_pair", "calibrate_primaldpscd", "calibrate_seqdpscd",
           "compare_algorithms", "dp_ledger", "estimated_seconds", "fixed_size_noise", "make_dual_problem",
           "planned_steps", "preset_problem", "primal_noise_ratio", "primal_sensitivity", "run_dpscd",
           "run_dpscd_preset", "run_dpsgd", "run_primaldpscd", "run_seqdpscd"]

LOSSES = ("ridge", "logistic", "hinge")
SAMPLINGS = ("poisson", "fixed")
SOURCE = "Damaskinos thesis, DP-SCD Algorithm 1 (L1313), closed-form updates spec §3.1"
SEQ_SOURCE = cite("damaskinos", "SeqDP-SCD Algorithm 3 and Lemma 4", "L1407-1429")
PRIMAL_SOURCE = cite("damaskinos", "PrimalDP-SCD Algorithm 2 and Lemma 3 (ERRATA DPSCD-A23)", "L1356-1397")
#: Logistic duals stay this far inside (0, 1) (the authors' box, spec §3.1).
LOGISTIC_BOX = 1e-4
#: Noise-free sequential SDCA epochs used to solve the hinge problem (its duality gap is reported).
HINGE_EPOCHS = 100


@dataclass(frozen=True, eq=False)
class DualProblem:
    """A GLM with unit-norm examples (rows of ``X``), labels ``y`` (±1 for classification) and λ."""

    loss: str
    X: np.ndarray
    y: np.ndarray
    regularization: float
    X_test: np.ndarray
    y_test: np.ndarray
    name: str = ""

    @property
    def examples(self) -> int:
        return int(self.X.shape[0])

    @property
    def features(self) -> int:
        return int(self.X.shape[1])

    def primal(self, theta: np.ndarray) -> float:
        """P(θ) = (1/N)Σ ℓ(x_iᵀθ) + (λ/2)‖θ‖² (L396)."""
        z = self.X @ theta
        if self.loss == "ridge":
            data = 0.5 * (z - self.y) ** 2
        elif self.loss == "logistic":
            data = np.logaddexp(0.0, -self.y * z)
        else:
            data = np.maximum(0.0, 1.0 - self.y * z)
        return float(np.mean(data)) + 0.5 * self.regularization * float(theta @ theta)

    def dual(self, alpha: np.ndarray) -> float:
        """F*(α) (L431); +∞ when some α_i is outside the domain of ℓ* (a·y ∈ [0, 1] for logistic and hinge)."""
        n = self.examples
        quadratic = float(np.sum((self.X.T @ alpha) ** 2)) / (2 * self.regularization * n * n)
        if self.loss == "ridge":
            return float(np.mean(0.5 * alpha**2 - alpha * self.y)) + quadratic
        p = alpha * self.y
        if np.any(p < 0) or np.any(p > 1):
            return math.inf
        if self.loss == "hinge":
            return float(np.mean(-p)) + quadratic
        entropy = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0) + \
            np.where(p < 1, (1 - p) * np.log(np.where(p < 1, 1 - p, 1.0)), 0.0)
        return float(np.mean(entropy)) + quadratic

    @cached_property
    def optimum(self) -> tuple[np.ndarray, float]:
        """(θ*, P*): closed form (ridge), L-BFGS/Newton (logistic), noise-free sequential SDCA (hinge)."""
        n, lam = self.examples, self.regularization
        if self.loss == "ridge":
            theta = np.linalg.solve(self.X.T @ self.X / n + lam * np.eye(self.features), self.X.T @ self.y / n)
        elif self.loss == "logistic":
            model = Model(kind="logistic", n_features=self.features, regularization=lam)
            theta = model.optimum(self.X, (self.y > 0).astype(float))
        else:
            theta = _sdca_hinge(self)
        return theta, self.primal(theta)

    def suboptimality(self, alpha: np.ndarray) -> float | None:
        """S(α) = F*(α) − min F* = F*(α) + P* (strong duality, L441); None outside the domain."""
        return finite_or_none(self.dual(alpha) + self.optimum[1])

    def accuracy(self, theta: np.ndarray) -> float | None:
        if self.loss == "ridge" or self.X_test.shape[0] == 0:
            return None
        return float(np.mean(np.sign(self.X_test @ theta) == self.y_test))

    def evaluate(self, theta: np.ndarray) -> dict:
        """``loss`` = P(θ), ``accuracy`` on the test part, ``dist_sq`` = ‖θ − θ*‖² (RoundRecorder's evaluator)."""
        theta_star = self.optimum[0]
        return {"loss": finite_or_none(self.primal(theta)), "accuracy": self.accuracy(theta),
                "dist_sq": finite_or_none(np.sum((theta - theta_star) ** 2))}

    def describe(self) -> dict:
        return {"dataset": self.name, "loss": self.loss, "regularization": self.regularization,
                "n_train": self.examples, "n_test": int(self.X_test.shape[0]), "n_features": self.features,
                "optimal_primal": self.optimum[1]}


def _unit_rows(X: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(X, axis=1)
    norms[norms == 0] = 1.0
    return np.ascontiguousarray(X / norms[:, None])


def make_dual_problem(*, dataset: Dataset, loss: str, regularization: float) -> DualProblem:
    """Rows scaled to ‖x_i‖ = 1 (L1300); labels {0, 1} → {−1, +1} for logistic/hinge; needs a binary task then."""
    loss = check_choice("loss", loss, LOSSES)
    lam = check_real("regularization", regularization, low=0.0, low_open=True)
    y, y_test = dataset.y_train.astype(float), dataset.y_test.astype(float)
    if loss != "ridge":
        if dataset.task != "binary":
            raise ValueError(f"loss={loss!r} needs a binary data set; {dataset.name!r} is {dataset.task}")
        y, y_test = 2 * y - 1, 2 * y_test - 1
    return DualProblem(loss=loss, X=_unit_rows(dataset.X_train), y=y, regularization=lam,
                       X_test=_unit_rows(dataset.X_test), y_test=y_test, name=dataset.name)


def _coordinate_updates(problem: DualProblem, alpha: np.ndarray, y: np.ndarray, margin: np.ndarray,
                        scale: np.ndarray) -> np.ndarray:
    """Δ_j minimising Eq. 6.1 from the same (α, v) (closed forms, spec §3.1); ``margin`` = x_jᵀv/(λN),
    ``scale`` = σ′‖x_j‖²/(λN). Constraints are applied to the value read, Δ is measured from the stored α."""
    if problem.loss == "ridge":
        return (y - margin - alpha) / (1 + scale)
    if problem.loss == "hinge":
        read = y * np.clip(y * alpha, 0.0, 1.0)
        return y * np.clip(y * read + (1 - y * margin) / scale, 0.0, 1.0) - alpha
    p = np.clip(y * alpha, LOGISTIC_BOX, 1 - LOGISTIC_BOX)
    gradient = y * np.log(p / (1 - p)) + margin
    curvature = 1 / (p * (1 - p)) + scale
    new = np.clip(p - y * gradient / curvature, LOGISTIC_BOX, 1 - LOGISTIC_BOX)
    return y * new - alpha


def _sdca_hinge(problem: DualProblem) -> np.ndarray:
    """Noise-free sequential SDCA (L = 1, exact coordinate minimisation) for the hinge optimum θ*."""
    n, lam = problem.examples, problem.regularization
    alpha = np.zeros(n)
    v = np.zeros(problem.features)
    sq = np.einsum("ij,ij->i", problem.X, problem.X)
    order = np.random.default_rng(0)
    moving = np.flatnonzero(sq > 0)  # a zero example moves neither v nor the objective's θ
    for _ in range(HINGE_EPOCHS):
        for j in order.permutation(moving).tolist():
            x, y = problem.X[j], problem.y[j]
            new = y * min(1.0, max(0.0, y * alpha[j] + (1 - y * float(x @ v) / (lam * n)) * lam * n / sq[j]))
            v += (new - alpha[j]) * x
            alpha[j] = new
    return v / (lam * n)


def _probe_decreases(problem: DualProblem, alpha: np.ndarray, chosen: np.ndarray, delta: np.ndarray,
                     clip: float) -> np.ndarray:
    """[S(α) − S(α + e_BΔ), S(α) − S(α + e_BΔ̃)]: the decrease of the unscaled and of the scaled update (6.5)."""
    current = problem.dual(alpha)
    out = np.zeros(2)
    for index, step in enumerate((delta, np.clip(delta, -clip, clip))):
        moved = alpha.copy()
        moved[chosen] += step
        out[index] = current - problem.dual(moved)
    return out


def _kappa_hat(decreases: np.ndarray) -> float | None:
    """κ̂ = 1 − ΣΔS(scaled)/ΣΔS(unscaled) over the probes (spec §5.3), clamped to [0, 1) by its definition."""
    if decreases[0] <= 0:
        return None
    return float(min(max(1.0 - decreases[1] / decreases[0], 0.0), 1.0 - 1e-12))


def _loss_derivative(problem: DualProblem, z: np.ndarray, y: np.ndarray) -> np.ndarray:
    """ℓ′(z) per example (a subgradient for hinge)."""
    if problem.loss == "ridge":
        return z - y
    if problem.loss == "logistic":
        return -y * expit(-y * z)
    return np.where(y * z < 1, -y, 0.0)


#: The ``bounds.sampling`` key of each batch sampling the engine runs.
SAMPLING_KEYS = {"poisson": "poisson", "fixed": "fixed_size"}
#: Caveat of the fixed-size ledger: the coupling behind ``fixed_size`` accounting treats an iteration's release as
#: a function of its batch and the public v; DP-SCD also carries each example's dual α between iterations.
FIXED_SIZE_CAVEAT = ("The per-example dual variables alpha are kept between iterations and never released; as in the "
                     "Poisson ledger, each iteration's release of v is accounted as a function of its batch and the "
                     "public v.")


#: What each run releases after every iteration (the ledger's statement).
RELEASES = {"v": "only the shared vector v (theta = v/(lambda N)) is released",
            "gradient": "every noisy gradient sum is released",
            "primal": "theta and the shared vector v (the predictions on all N examples) are released"}
#: The sampling of a run whose every iteration reads every example (PrimalDP-SCD, q = 1).
FULL_BATCH = "no sampling (every iteration reads every example, q = 1)"


def dp_ledger(*, sample_rate: float, noise_multiplier: float, steps: int, delta: float, accountant: str = "ma128",
              sampling: str = "poisson", release: str = "v", examples: int | None = None) -> dict:
    """ε of the executed releases: T subsampled Gaussians (q, σ) under ``accountant``, add/remove-one.

    ``sampling="poisson"``: Poisson-subsampled (``bounds.dpscd.epsilon_for_noise``); ``"fixed"``: exactly
    L = qN distinct of the N = ``examples`` records per iteration, accounted by ``bounds.accounting`` with
    ``sampling="fixed_size"`` and ``dataset_size=N`` (``ma128`` has no fixed-size bound: ``rdp`` is used and
    the ledger says so). ``release="v"`` (DP-SCD and SeqDP-SCD, only v/θ public), ``"gradient"`` (DP-SGD) or
    ``"primal"`` (PrimalDP-SCD: θ and v; with ``sample_rate=1`` every iteration reads every example). σ = 0
    means no privacy (ε = None).
    """
    sampling = check_choice("sampling", sampling, SAMPLINGS)
    accountant = check_choice("accountant", accountant, dpscd.ACCOUNTANTS)
    key = SAMPLING_KEYS[sampling]
    ledger = {"mechanism": "gaussian", "delta": float(delta), "accountant": accountant, "sample_rate": sample_rate,
              "noise_multiplier": noise_multiplier, "steps": int(steps),
              "sampling": (FULL_BATCH if sample_rate == 1 else dpscd.SAMPLING) if sampling == "poisson" else
              f"{key} ({SAMPLING_HELP[key]})",
              "neighboring_relation": dpscd.NEIGHBORING_RELATION}
    if sampling == "fixed":
        if examples is None:
            raise ValueError("a fixed-size ledger needs examples (N, the records a batch of L is drawn from)")
        ledger |= {"sampling_key": key, "dataset_size": check_int("examples", examples, low=1),
                   "requested_accountant": accountant}
    if noise_multiplier == 0:
        return ledger | {"epsilon": None, "statement": "No noise: the run is not differentially private."}
    what = RELEASES[check_choice("release", release, tuple(RELEASES))]
    if sampling == "poisson":
        epsilon = dpscd.epsilon_for_noise(noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps,
                                          delta=delta, accountant=accountant)
        drawn = "Poisson sampling" if sample_rate < 1 else FULL_BATCH
        statement = (f"epsilon = {epsilon:.6g} at delta = {delta:g} for T = {steps} Gaussian releases with noise "
                     f"multiplier {noise_multiplier:.8g} at sampling rate q = {sample_rate:.6g} ({accountant}), "
                     f"add/remove-one neighbours, {drawn}, when {what}.")
        return ledger | {"epsilon": epsilon, "statement": statement}
    used = "rdp" if accountant == "ma128" else accountant
    try:
        answer = accounting.get_epsilon(delta=delta, sample_rate=sample_rate, noise_multiplier=noise_multiplier,
                                        steps=steps, accountant=used, sampling=key,
                                        neighboring_relation=dpscd.NEIGHBORING_RELATION, dataset_size=examples)
    except ValueError as error:  # the executed batches are not accounted: say so, print no number
        return ledger | {"epsilon": None, "not_accounted": str(error),
                         "statement": f"not accounted: {error}. The run drew {ledger['sampling']}."}
    substituted = (" The moments accountant ma128 covers Poisson sampling only; the RDP accountant was used."
                   if used != accountant else "")
    statement = (f"{answer.statement()} T = {steps} releases of noise multiplier {noise_multiplier:.8g}, L = "
                 f"{round(sample_rate * examples)} of N = {examples} examples per iteration, when {what}."
                 f"{substituted} {FIXED_SIZE_CAVEAT if release == 'v' else ''}").strip()
    return ledger | {"epsilon": answer.epsilon, "accountant": answer.accountant, "bound": answer.bound,
                     "source": answer.source, "statement": statement}


@dataclass(frozen=True)
class BaselineCalibration:
    """σ of one thesis baseline at the common target (ε, δ), for its own sampling, q and T.

    ``noise_multiplier`` is the σ the run adds noise with (std = Lemma 3/4's S_f·σ, spec §3.6);
    ``accounted_noise_multiplier`` is the multiplier its ledger accounts (differs for PrimalDP-SCD, erratum
    DPSCD-A23); ``epsilon`` is the ledger's ε at that σ, ≤ the target.
    """

    algorithm: str
    noise_multiplier: float
    accounted_noise_multiplier: float
    epsilon: float
    accountant: str
    sample_rate: float
    steps: int
    sampling: str
    source: str

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class PairCalibration:
    """σ of DP-SCD (:func:`planner.dpscd.plan_dpscd`) and of DP-SGD for its own (q, T), same target and accountant;
    with :func:`compare_algorithms` also the SeqDP-SCD and PrimalDP-SCD baselines'."""

    dpscd_plan: object
    dpsgd: dpscd.NoiseCalibration
    seqdpscd: BaselineCalibration | None = None
    primaldpscd: BaselineCalibration | None = None

    def to_dict(self) -> dict:
        out = {"dpscd": self.dpscd_plan.summary(), "dpsgd": self.dpsgd.to_dict()}
        return out | {name: found.to_dict() for name, found in (("seqdpscd", self.seqdpscd),
                                                                 ("primaldpscd", self.primaldpscd)) if found}


def calibrate_pair(*, examples: int, target_epsilon: float, target_delta: float, batch_size: int, epochs: float,
                   dpsgd_batch_size: int, dpsgd_epochs: float, accountant: str = "ma128",
                   clipping_norm: float | None = None) -> PairCalibration:
    """DP-SCD's σ for (q = L/N, T = ⌊epochs·N/L⌋) and DP-SGD's σ for its own q and T, both ε ≤ target."""
    from fedplan.planner.dpscd import plan_dpscd

    plan = plan_dpscd(target_epsilon=target_epsilon, target_delta=target_delta, examples=examples,
                      batch_size=batch_size, epochs=epochs, accountant=accountant, clipping_norm=clipping_norm,
                      compare=False)
    steps = dpscd.outer_iterations(examples=examples, batch_size=dpsgd_batch_size, epochs=dpsgd_epochs)
    rate = dpscd.sample_rate(examples=examples, batch_size=dpsgd_batch_size)
    sgd = dpscd.calibrate_noise(target_epsilon=target_epsilon, target_delta=target_delta, sample_rate=rate,
                                steps=steps, accountant=accountant)
    return PairCalibration(dpscd_plan=plan, dpsgd=sgd)


def fixed_size_noise(*, examples: int, target_epsilon: float, target_delta: float, sample_rate: float, steps: int,
                     accountant: str = "ma128"):
    """σ whose fixed-size ledger (:func:`dp_ledger` with ``sampling="fixed"``: L = qN of the N = ``examples``
    records per iteration, add/remove-one) is ≤ the target: a ``bounds.accounting`` calibration with the
    accountant that ledger uses (``ma128`` covers Poisson sampling only: ``rdp``)."""
    accountant = check_choice("accountant", accountant, dpscd.ACCOUNTANTS)
    return accounting.calibrate_noise_multiplier(
        target_epsilon=target_epsilon, target_delta=target_delta, sample_rate=sample_rate, steps=steps,
        accountant="rdp" if accountant == "ma128" else accountant, sampling=SAMPLING_KEYS["fixed"],
        neighboring_relation=dpscd.NEIGHBORING_RELATION, dataset_size=examples)


def calibrate_seqdpscd(*, examples: int, target_epsilon: float, target_delta: float, batch_size: int, epochs: float,
                       accountant: str = "ma128") -> BaselineCalibration:
    """SeqDP-SCD's σ: smallest σ whose fixed-size ledger (:func:`dp_ledger`, the sampling :func:`run_seqdpscd`
    executes) is ≤ the target at q = L/N, T = ⌊epochs·N/L⌋ (thesis L1407-1429 take DP-SCD's MA(δ, σ, L/N, T))."""
    steps = dpscd.outer_iterations(examples=examples, batch_size=batch_size, epochs=epochs)
    rate = dpscd.sample_rate(examples=examples, batch_size=batch_size)
    found = fixed_size_noise(examples=examples, target_epsilon=target_epsilon, target_delta=target_delta,
                             sample_rate=rate, steps=steps, accountant=accountant)
    return BaselineCalibration(algorithm="seqdpscd", noise_multiplier=found.value,
                               accounted_noise_multiplier=found.value, epsilon=found.epsilon,
                               accountant=found.accountant, sample_rate=rate, steps=steps, sampling="fixed",
                               source=SEQ_SOURCE)


def primal_sensitivity(*, batch_size: int, clipping_norm: float) -> float:
    """A proven L2 sensitivity of one PrimalDP-SCD iteration (Alg. 2, L1356-1373): 2√(L(L+1))·C (DPSCD-A23).

    Removing one example changes *every* one of the L coordinate updates (each reads all examples), so each
    |Δ_j − Δ′_j| ≤ 2C, and ‖Σ_B (Δ_j X[j,:] − Δ′_j X′[j,:])‖ ≤ 2LC with ‖X[j,:]‖ ≤ 1 (L1375): S_f² ≤ 4LC² +
    4L²C². Lemma 3's proof (L1389-1397) lets the first update differ by C only, which gives (4L² − 2)C²; at L = 1
    two data sets reach 6.92C² > 2C² (the test pins them).
    """
    batch = check_int("batch_size", batch_size, low=1)
    return 2 * math.sqrt(batch * (batch + 1)) * check_real("clipping_norm", clipping_norm, low=0.0, low_open=True)


def primal_noise_ratio(batch_size: int) -> float:
    """Lemma 3's S_f over :func:`primal_sensitivity`: √(4L² − 2)/(2√(L(L+1))) < 1 (the accounted/nominal σ)."""
    return dpscd.sensitivity(algorithm="primal", clipping_norm=1.0, batch_size=batch_size) / \
        primal_sensitivity(batch_size=batch_size, clipping_norm=1.0)


def calibrate_primaldpscd(*, features: int, target_epsilon: float, target_delta: float, batch_size: int,
                          epochs: float, accountant: str = "ma128") -> BaselineCalibration:
    """PrimalDP-SCD's σ at q = 1 (L1359: MA(δ, σ, 1, T)) and T = ⌊epochs·M/L⌋ blocks of L of the M coordinates.

    The ledger's multiplier σ_acc is calibrated (:func:`bounds.dpscd.calibrate_noise` at q = 1); the run's σ
    (noise std √(4L² − 2)·C·σ as printed) is the smallest float with σ·:func:`primal_noise_ratio` ≥ σ_acc.
    """
    steps = dpscd.outer_iterations(examples=features, batch_size=batch_size, epochs=epochs)
    found = dpscd.calibrate_noise(target_epsilon=target_epsilon, target_delta=target_delta, sample_rate=1.0,
                                  steps=steps, accountant=accountant)
    ratio = primal_noise_ratio(batch_size)
    nominal = found.noise_multiplier / ratio
    while nominal * ratio < found.noise_multiplier:
        nominal = math.nextafter(nominal, math.inf)
    return BaselineCalibration(algorithm="primaldpscd", noise_multiplier=nominal,
                               accounted_noise_multiplier=nominal * ratio, epsilon=found.epsilon,
                               accountant=found.accountant, sample_rate=1.0, steps=steps, sampling="none",
                               source=PRIMAL_SOURCE)


def _batches(rng: np.random.Generator, n: int, batch: int, sampling: str) -> np.ndarray:
    if sampling == "poisson":
        return np.flatnonzero(rng.random(n) < batch / n)
    return np.sort(rng.choice(n, batch, replace=False))


def _check_run(problem, batch_size, steps, clipping_norm, noise_multiplier, seed, sampling):
    return (check_int("batch_size", batch_size, low=1, high=problem.examples), check_int("steps", steps, low=1),
            check_real("clipping_norm", clipping_norm, low=0.0, low_open=True),
            check_real("noise_multiplier", noise_multiplier, low=0.0), check_int("seed", seed, low=0),
            check_choice("sampling", sampling, SAMPLINGS))


def _drive(recorder: RoundRecorder, steps: int, step, released, *, noise: float, what: str, after=None):
    """Run ``step(t)`` for t < T, recording the released model after each (then ``after(t)``).

    Returns (final metrics, None), or (empty metrics, message) at the first non-finite model.
    """
    try:
        with np.errstate(all="ignore"):
            for t in range(steps):
                step(t)
                model = released()
                if not is_finite(model):
                    raise Diverged(f"the {what} stopped being finite at iteration {t}")
                recorder.record(round=t, time=float(t + 1), w=model, noise=noise, force=t == steps - 1)
                if after is not None:
                    after(t)
            return recorder.finish(released()), None
    except Diverged as error:
        return {"loss": None, "accuracy": None, "dist_sq": None}, str(error)


def _result(algorithm: str, recorder: RoundRecorder, outcome: tuple, privacy: dict, config: dict, steps: int,
            start: float) -> SimulationResult:
    final, message = outcome
    return SimulationResult(algorithm=algorithm, rows=tuple(recorder.rows), final=final, privacy=privacy,
                            virtual_time=float(steps), wall_time_s=wallclock.perf_counter() - start,
                            diverged=message is not None, divergence=message,
                            config=config | {"eval_every": recorder.eval_every})


def _independent_updates(problem: DualProblem, alpha: np.ndarray, v: np.ndarray, chosen: np.ndarray, sq: np.ndarray,
                         clip: float, *, batch: int) -> tuple:
    """DP-SCD steps 6-11 (L1313): every Δ_j from the same (α, v) with σ′ = L; (raw Δ, scaled Δ, Δv)."""
    n, lam = problem.examples, problem.regularization
    XB = problem.X[chosen]
    raw = _coordinate_updates(problem, alpha[chosen], problem.y[chosen], XB @ v / (lam * n),
                              batch * sq[chosen] / (lam * n))
    scaled = np.clip(raw, -clip, clip)
    return raw, scaled, XB.T @ scaled


def _sequential_updates(problem: DualProblem, alpha: np.ndarray, v: np.ndarray, chosen: np.ndarray, sq: np.ndarray,
                        clip: float) -> tuple:
    """SeqDP-SCD steps 6-12 (Alg. 3, L1413-1420): exact SDCA steps (σ′ = 1) in batch order, each reading the v
    the previous scaled ones moved (v += Δ_j x_j once per example, erratum A10); (raw Δ, scaled Δ, Δv)."""
    n, lam = problem.examples, problem.regularization
    raw = np.empty(chosen.size)
    dv = np.zeros_like(v)
    for i, j in enumerate(chosen.tolist()):
        x = problem.X[j]
        raw[i] = _coordinate_updates(problem, alpha[j:j + 1], problem.y[j:j + 1], np.array([x @ (v + dv) / (lam * n)]),
                                     sq[j:j + 1] / (lam * n))[0]
        dv += min(max(raw[i], -clip), clip) * x
    return raw, np.clip(raw, -clip, clip), dv


def _run_dual(*, algorithm: str, problem: DualProblem, batch: int, steps: int, clip: float, sigma: float,
              std: float, sampling: str, seed: int, eval_every: int, delta: float, accountant: str, progress,
              updates, source: str) -> SimulationResult:
    """T iterations on the dual: ``updates`` (steps 6-11), then N(0, std²) on the |B| coordinates of α and on v."""
    start = wallclock.perf_counter()
    n, lam = problem.examples, problem.regularization
    sample_rng, noise_rng = spawn_generators(seed, 2)
    sq = np.einsum("ij,ij->i", problem.X, problem.X)
    alpha, v = np.zeros(n), np.zeros(problem.features)
    recorder = RoundRecorder(problem.evaluate, eval_every=eval_every, progress=progress)
    tally = [0, 0]  # clipped updates, updates
    decreases = np.zeros(2)

    def evaluated(t: int) -> bool:
        return t == steps - 1 or (t + 1) % recorder.eval_every == 0

    def step(t: int) -> None:
        chosen = _batches(sample_rng, n, batch, sampling)
        raw, scaled, dv = updates(problem, alpha, v, chosen, sq, clip)
        tally[0] += int(np.count_nonzero(np.abs(raw) > clip))
        tally[1] += chosen.size
        if algorithm == "dpscd" and evaluated(t) and problem.loss == "ridge":
            decreases[:] += _probe_decreases(problem, alpha, chosen, raw, clip)
        alpha[chosen] += scaled + std * noise_rng.standard_normal(chosen.size)
        v[:] += dv + std * noise_rng.standard_normal(v.size)

    def after(t: int) -> None:
        recorder.rows[-1].update(dict.fromkeys(("suboptimality", "drift", "clipped")))
        if evaluated(t):
            recorder.rows[-1].update(suboptimality=problem.suboptimality(alpha),
                                     drift=float(np.sum((v - problem.X.T @ alpha) ** 2)),
                                     clipped=tally[0] / max(tally[1], 1))

    final, message = _drive(recorder, steps, step, lambda: v / (lam * n), noise=std, what="shared vector",
                            after=after)
    if message is None:
        final.update(suboptimality=problem.suboptimality(alpha), clipped=tally[0] / max(tally[1], 1))
    else:
        final["suboptimality"] = None
    privacy = dp_ledger(sample_rate=batch / n, noise_multiplier=sigma, steps=steps, delta=delta,
                        accountant=accountant, sampling=sampling, release="v", examples=n)
    config = {"source": source, **problem.describe(), "batch_size": batch, "steps": steps, "clipping_norm": clip,
              "noise_multiplier": sigma, "noise_std": std, "sampling": sampling, "seed": seed,
              "initial_suboptimality": problem.suboptimality(np.zeros(n)), "kappa_hat": _kappa_hat(decreases)}
    return _result(algorithm, recorder, (final, message), privacy, config, steps, start)


def run_dpscd(*, problem: DualProblem, batch_size: int, steps: int, clipping_norm: float, noise_multiplier: float,
              seed: int = 0, sampling: str = "poisson", eval_every: int = 1, delta: float = 1e-3,
              accountant: str = "ma128", progress=None) -> SimulationResult:
    """T iterations of DP-SCD (module docstring). Rows carry, at evaluations, ``suboptimality`` S(α_t) (None
    outside the dual domain), ``drift`` ‖v_t − Xᵀα_t‖² and the cumulative share of ``clipped`` updates."""
    batch, steps, c, sigma, seed, sampling = _check_run(problem, batch_size, steps, clipping_norm, noise_multiplier,
                                                        seed, sampling)
    return _run_dual(algorithm="dpscd", problem=problem, batch=batch, steps=steps, clip=c, sigma=sigma,
                     std=dpscd.sensitivity(algorithm="dpscd", clipping_norm=c) * sigma, sampling=sampling, seed=seed,
                     eval_every=eval_every, delta=delta, accountant=accountant, progress=progress,
                     updates=partial(_independent_updates, batch=batch), source=SOURCE)


def run_seqdpscd(*, problem: DualProblem, batch_size: int, steps: int, clipping_norm: float, noise_multiplier: float,
                 seed: int = 0, eval_every: int = 1, delta: float = 1e-3, accountant: str = "ma128",
                 progress=None) -> SimulationResult:
    """T iterations of SeqDP-SCD (thesis Alg. 3, L1407-1425): the thesis' sequential baseline.

    Each iteration draws exactly L distinct examples, updates them one after the other (exact SDCA steps,
    σ′ = 1, each seeing the previous ones), then adds N(0, (4L² − 2)C²σ²) to their α coordinates and to v
    (Lemma 4, L1427: S_f = √(4L² − 2)·C). That bound needs the batch to hold L examples (the removed one and
    up to L − 1 later ones change), so the run draws fixed-size batches — a Poisson batch has no size bound —
    and its ledger is the fixed-size one (:func:`dp_ledger` ``sampling="fixed"``, add/remove-one: the Poisson
    accountant at σ/2, i.e. sensitivity 2S_f, which covers a batch whose one example is swapped, since two
    batches of L then differ by at most (4L² + 4L − 2)C² ≤ 4(4L² − 2)C²). Only v (θ) is released.
    """
    batch, steps, c, sigma, seed, _ = _check_run(problem, batch_size, steps, clipping_norm, noise_multiplier, seed,
                                                 "fixed")
    return _run_dual(algorithm="seqdpscd", problem=problem, batch=batch, steps=steps, clip=c, sigma=sigma,
                     std=dpscd.sensitivity(algorithm="seq", clipping_norm=c, batch_size=batch) * sigma,
                     sampling="fixed", seed=seed, eval_every=eval_every, delta=delta, accountant=accountant,
                     progress=progress, updates=_sequential_updates, source=SEQ_SOURCE)


def run_dpsgd(*, problem: DualProblem, batch_size: int, steps: int, clipping_norm: float, noise_multiplier: float,
              learning_rate: float, seed: int = 0, eval_every: int = 1, delta: float = 1e-3,
              accountant: str = "ma128", progress=None) -> SimulationResult:
    """T iterations of DP-SGD on the primal of the same problem (Poisson batches at q = L/N, spec §3.5)."""
    start = wallclock.perf_counter()
    batch, steps, c, sigma, seed, _ = _check_run(problem, batch_size, steps, clipping_norm, noise_multiplier, seed,
                                                 "poisson")
    eta = check_real("learning_rate", learning_rate, low=0.0, low_open=True)
    n, lam = problem.examples, problem.regularization
    sample_rng, noise_rng = spawn_generators(seed, 2)
    theta = np.zeros(problem.features)
    recorder = RoundRecorder(problem.evaluate, eval_every=eval_every, progress=progress)

    def step(t: int) -> None:
        chosen = _batches(sample_rng, n, batch, "poisson")
        XB = problem.X[chosen]
        derivative = np.clip(_loss_derivative(problem, XB @ theta, problem.y[chosen]), -c, c)
        noisy = XB.T @ derivative + sigma * c * noise_rng.standard_normal(theta.size)
        theta[:] -= eta * (noisy / batch + lam * theta)

    outcome = _drive(recorder, steps, step, lambda: theta, noise=sigma * c, what="model")
    privacy = dp_ledger(sample_rate=batch / n, noise_multiplier=sigma, steps=steps, delta=delta,
                        accountant=accountant, release="gradient")
    config = {"source": "DP-SGD (Abadi et al.; Damaskinos spec §3.5)", **problem.describe(), "batch_size": batch,
              "steps": steps, "clipping_norm": c, "noise_multiplier": sigma, "learning_rate": eta, "seed": seed}
    return _result("dpsgd", recorder, outcome, privacy, config, steps, start)


#: Curvature bound of ℓ in PrimalDP-SCD's coordinate step: 1/μ (spec §2.3); hinge (not smooth) takes 1.
PRIMAL_CURVATURE = {"ridge": 1.0, "logistic": 0.25, "hinge": 1.0}


def run_primaldpscd(*, problem: DualProblem, batch_size: int, steps: int, clipping_norm: float,
                    noise_multiplier: float, seed: int = 0, eval_every: int = 1, delta: float = 1e-3,
                    accountant: str = "ma128", progress=None) -> SimulationResult:
    """T iterations of PrimalDP-SCD (thesis Alg. 2, L1356-1373) on the same objective; ``batch_size`` = L coordinates.

    Lemma 3 needs every feature row ‖X[j,:]‖ ≤ 1 (L1375); with unit examples ‖X[:, j]‖ ≤ √N, so the run works on
    X/√N (a data-independent scale) with λ/N — the same objective in θ_p = √N·θ — and releases θ = θ_p/√N. Per
    iteration: a block B of L coordinates (uniform without replacement, public randomness), from the same (θ_p, v)
    Δ_j = −g_j/h_j with g_j = X[j,:]ℓ′(v)/N + λθ_j and h_j = Lβ‖X[j,:]‖²/N + λ (β = :data:`PRIMAL_CURVATURE`; for
    ridge the exact CoCoA-style block step of spec §3.3, erratum A12), scaled to |Δ_j| ≤ C, then
    N(0, (4L² − 2)C²σ²) on θ_B and on all N coordinates of v (steps 12-13). Every iteration reads every example
    (q = 1, L1354); the ledger accounts T releases at σ·:func:`primal_noise_ratio` (DPSCD-A23), add/remove-one.
    """
    start = wallclock.perf_counter()
    batch = check_int("batch_size", batch_size, low=1, high=problem.features)
    _, steps, c, sigma, seed, _ = _check_run(problem, batch, steps, clipping_norm, noise_multiplier, seed, "poisson")
    n, m = problem.examples, problem.features
    scale = math.sqrt(n)
    X = problem.X / scale
    lam = problem.regularization / n
    curvature = PRIMAL_CURVATURE[problem.loss] * batch * np.einsum("ij,ij->j", X, X) / n + lam
    std = dpscd.sensitivity(algorithm="primal", clipping_norm=c, batch_size=batch) * sigma
    block_rng, noise_rng = spawn_generators(seed, 2)
    theta, v = np.zeros(m), np.zeros(n)
    recorder = RoundRecorder(problem.evaluate, eval_every=eval_every, progress=progress)
    tally = [0]

    def step(t: int) -> None:
        chosen = np.sort(block_rng.choice(m, batch, replace=False))
        XB = X[:, chosen]
        raw = -(XB.T @ _loss_derivative(problem, v, problem.y) / n + lam * theta[chosen]) / curvature[chosen]
        tally[0] += int(np.count_nonzero(np.abs(raw) > c))
        scaled = np.clip(raw, -c, c)
        theta[chosen] += scaled + std * noise_rng.standard_normal(batch)
        v[:] += XB @ scaled + std * noise_rng.standard_normal(n)

    final, message = _drive(recorder, steps, step, lambda: theta / scale, noise=std, what="model")
    if message is None:
        final.update(clipped=tally[0] / (steps * batch))
    accounted = sigma * primal_noise_ratio(batch)
    privacy = dp_ledger(sample_rate=1.0, noise_multiplier=accounted, steps=steps, delta=delta,
                        accountant=accountant, release="primal")
    if accounted > 0:
        privacy["statement"] += (f" The noise std is sqrt(4L^2-2)*C*sigma (Lemma 3) with sigma = {sigma:.8g}; a "
                                 "removed example changes all L updates, so the sensitivity is 2*sqrt(L(L+1))*C and "
                                 f"the accounted noise multiplier is {accounted:.8g}.")
    privacy |= {"lemma3_noise_multiplier": sigma, "sensitivity": primal_sensitivity(batch_size=batch, clipping_norm=c)}
    config = {"source": PRIMAL_SOURCE, **problem.describe(), "batch_size": batch, "steps": steps, "clipping_norm": c,
              "noise_multiplier": sigma, "accounted_noise_multiplier": accounted, "noise_std": std,
              "sampling": "none", "feature_scale": scale, "seed": seed}
    return _result("primaldpscd", recorder, (final, message), privacy, config, steps, start)


#: Presets (seconds each): data, loss, λ, DP-SCD (L, epochs, C), DP-SGD (L, epochs, C, η), SeqDP-SCD (L, C; DP-SCD's
#: epochs), PrimalDP-SCD (L coordinates, epochs over the M coordinates, C), target (ε, δ).
DPSCD_PRESETS = {
    "ridge": {"dataset": "synthetic-linear", "n_samples": 2500, "n_features": 20, "loss": "ridge",
              "regularization": 0.01, "batch_size": 50, "epochs": 10, "clipping_norm": 0.1,
              "dpsgd_batch_size": 50, "dpsgd_epochs": 10, "dpsgd_clipping_norm": 1.0, "learning_rate": 0.5,
              "seq_batch_size": 5, "seq_clipping_norm": 0.001, "primal_batch_size": 10, "primal_epochs": 10,
              "primal_clipping_norm": 0.01, "target_epsilon": 1.0, "target_delta": 1e-3},
    "logistic": {"dataset": "breast_cancer", "loss": "logistic", "regularization": 0.01, "batch_size": 20,
                 "epochs": 10, "clipping_norm": 0.1, "dpsgd_batch_size": 20, "dpsgd_epochs": 10,
                 "dpsgd_clipping_norm": 1.0, "learning_rate": 1.0, "seq_batch_size": 20, "seq_clipping_norm": 0.1,
                 "primal_batch_size": 5, "primal_epochs": 10, "primal_clipping_norm": 0.1, "target_epsilon": 1.0,
                 "target_delta": 1e-3},
    "svm": {"dataset": "breast_cancer", "loss": "hinge", "regularization": 0.01, "batch_size": 20, "epochs": 10,
            "clipping_norm": 0.1, "dpsgd_batch_size": 20, "dpsgd_epochs": 10, "dpsgd_clipping_norm": 1.0,
            "learning_rate": 1.0, "seq_batch_size": 20, "seq_clipping_norm": 0.1, "primal_batch_size": 5,
            "primal_epochs": 10, "primal_clipping_norm": 0.1, "target_epsilon": 1.0, "target_delta": 1e-3},
}
#: The four algorithms of the thesis' comparison (Fig. 6.1, L1569), in :func:`compare_algorithms`' order.
ALGORITHMS = ("dpscd", "dpsgd", "seqdpscd", "primaldpscd")


#: Seconds of one iteration, pessimistic: a fixed part (the Python step, the record, the finiteness check) and
#: parts per example N, per batch element L, per N·L and per L·M, by algorithm. Measured on this 2-core machine
#: over 400-2 000 iterations with 50 evaluations (ridge on N = 2 000 and 20 000, M = 20 and 300; logistic and
#: hinge on breast_cancer and phishing; L = 1 to 500): DP-SCD 72-565 µs (the Poisson draw over N: 450 µs at
#: N = 20 000, L = 1), DP-SGD 43-300 µs, PrimalDP-SCD 95 µs-2.1 ms (its noise on all N coordinates of v and the
#: N × L block), SeqDP-SCD a Python SDCA step per example of its batch (:data:`SEQUENTIAL_STEP_SECONDS`). Each
#: coefficient covers every measurement.
STEP_SECONDS = 2.5e-4
STEP_SECONDS_PER = {"dpscd": {"examples": 2e-8, "batch": 1e-6, "batch_features": 2e-9},
                    "dpsgd": {"examples": 1e-8, "batch": 1e-7, "batch_features": 2e-9},
                    "seqdpscd": {"examples": 2e-8, "batch_features": 2e-9},
                    "primaldpscd": {"examples": 6e-8, "examples_batch": 3e-9}}
#: Seconds of SeqDP-SCD's step per example of its batch, by loss: measured 24 µs (ridge), 38-60 µs (logistic),
#: 21-42 µs (hinge).
SEQUENTIAL_STEP_SECONDS = {"ridge": 3.5e-5, "logistic": 7e-5, "hinge": 5e-5}
#: Seconds of one evaluation per N·M (P(θ), accuracy and S(α): 10 ms at N = 20 000, M = 300), and the most
#: evaluations a run makes (``eval_every = max(1, T // 50)`` records fewer than 100).
EVALUATION_SECONDS_PER_ENTRY, EVALUATIONS = 2e-9, 100
#: Seconds of one step of the hinge optimum's sequential SDCA (:func:`_sdca_hinge`, :data:`HINGE_EPOCHS`·N steps):
#: measured 7.7-8.9 µs (breast_cancer, phishing, w8a: 35 s at N = 39 799). The ridge and logistic optima are
#: one solve and a vectorised L-BFGS, well under the iterations' margin.
HINGE_STEP_SECONDS = 1.2e-5


@dataclass(frozen=True)
class ProblemShape:
    """What the time estimate reads of a :class:`DualProblem`: N examples, M features and the loss."""

    examples: int
    features: int
    loss: str


def planned_steps(*, problem: DualProblem | ProblemShape, settings: dict, algorithm: str) -> tuple[int, int]:
    """(T, L) of ``algorithm``'s run under ``settings`` (:data:`DPSCD_PRESETS` keys), as :func:`compare_algorithms`
    calibrates it: T = ⌊epochs·N/L⌋ (PrimalDP-SCD: ⌊epochs·M/L⌋ blocks of its M coordinates)."""
    n, s = problem.examples, settings
    batch, units, epochs = {"dpscd": (s["batch_size"], n, s["epochs"]),
                            "dpsgd": (s["dpsgd_batch_size"], n, s["dpsgd_epochs"]),
                            "seqdpscd": (s["seq_batch_size"], n, s["epochs"]),
                            "primaldpscd": (s["primal_batch_size"], problem.features, s["primal_epochs"])}[algorithm]
    return dpscd.outer_iterations(examples=units, batch_size=batch, epochs=epochs), batch


def estimated_seconds(*, problem: DualProblem | ProblemShape, settings: dict, algorithms=ALGORITHMS,
                      runs: int = 1) -> float:
    """The time of ``runs`` runs of each of ``algorithms`` on ``problem`` under ``settings`` and of the problem's
    optimum, estimated before any of them runs (:data:`STEP_SECONDS_PER`, :data:`SEQUENTIAL_STEP_SECONDS`,
    :data:`HINGE_STEP_SECONDS`; the calibrations take well under a second even at T = 10⁶)."""
    n, m = problem.examples, problem.features
    total = 0.0
    for algorithm in algorithms:
        steps, batch = planned_steps(problem=problem, settings=settings, algorithm=algorithm)
        per = STEP_SECONDS_PER[algorithm]
        per_batch = SEQUENTIAL_STEP_SECONDS[problem.loss] if algorithm == "seqdpscd" else per.get("batch", 0.0)
        step = STEP_SECONDS + per.get("examples", 0.0) * n + per_batch * batch + \
            per.get("batch_features", 0.0) * batch * m + per.get("examples_batch", 0.0) * n * batch
        count = float(steps) if steps < 10**300 else math.inf  # epochs near 1e308 give T beyond any float
        total += count * step + min(steps, EVALUATIONS) * EVALUATION_SECONDS_PER_ENTRY * n * m
    optimum = HINGE_EPOCHS * n * HINGE_STEP_SECONDS if problem.loss == "hinge" else 0.0
    return runs * total + optimum


def preset_problem(name: str, *, seed: int = 0) -> tuple[DualProblem, dict]:
    """The data and settings of preset ``name`` (:data:`DPSCD_PRESETS`)."""
    settings = DPSCD_PRESETS[check_choice("preset", name, tuple(DPSCD_PRESETS))]
    data = load_dataset(settings["dataset"], seed=seed, n_samples=settings.get("n_samples", 10_000),
                        n_features=settings.get("n_features", 20))
    return make_dual_problem(dataset=data, loss=settings["loss"], regularization=settings["regularization"]), settings


def compare_algorithms(*, problem: DualProblem, settings: dict, seed: int = 0, accountant: str = "ma128",
                       sampling: str = "poisson", progress=None) -> dict:
    """DP-SCD, DP-SGD, SeqDP-SCD and PrimalDP-SCD on ``problem`` with ``settings`` (:data:`DPSCD_PRESETS` keys),
    each σ calibrated to the same target (ε, δ) and accountant for its own sampling, q and T (the thesis'
    comparison, Fig. 6.1, L1569). ``sampling`` is DP-SCD's; DP-SGD draws Poisson batches, SeqDP-SCD fixed-size
    ones, PrimalDP-SCD reads every example. ``progress(done, total)`` is told each run's iterations.
    Returns ``calibration`` (:class:`PairCalibration` with both baselines) and one result per algorithm.
    """
    s = settings
    target = {"target_epsilon": s["target_epsilon"], "target_delta": s["target_delta"], "accountant": accountant}
    pair = calibrate_pair(examples=problem.examples, batch_size=s["batch_size"], epochs=s["epochs"],
                          dpsgd_batch_size=s["dpsgd_batch_size"], dpsgd_epochs=s["dpsgd_epochs"],
                          clipping_norm=s["clipping_norm"], **target)
    pair = replace(pair, seqdpscd=calibrate_seqdpscd(examples=problem.examples, batch_size=s["seq_batch_size"],
                                                     epochs=s["epochs"], **target),
                   primaldpscd=calibrate_primaldpscd(features=problem.features, batch_size=s["primal_batch_size"],
                                                     epochs=s["primal_epochs"], **target))
    common = {"problem": problem, "seed": seed, "delta": s["target_delta"], "accountant": accountant}
    dpscd_sigma, resampled = pair.dpscd_plan.calibration.noise_multiplier, {}
    if check_choice("sampling", sampling, SAMPLINGS) == "fixed":  # the plan's σ is Poisson's: calibrate for the run
        found = fixed_size_noise(examples=problem.examples, sample_rate=pair.dpscd_plan.calibration.sample_rate,
                                 steps=pair.dpscd_plan.steps, **target)
        dpscd_sigma = found.value
        resampled = {"dpscd_fixed_size_calibration": found.to_dict()}

    def timing(steps: int) -> dict:
        tick = None if progress is None else (lambda done: progress(done, steps))
        return {"steps": steps, "eval_every": max(1, steps // 50), "progress": tick}

    return {"calibration": pair, **resampled,
            "dpscd": run_dpscd(batch_size=s["batch_size"], clipping_norm=s["clipping_norm"], sampling=sampling,
                               noise_multiplier=dpscd_sigma, **timing(pair.dpscd_plan.steps), **common),
            "dpsgd": run_dpsgd(batch_size=s["dpsgd_batch_size"], clipping_norm=s["dpsgd_clipping_norm"],
                               noise_multiplier=pair.dpsgd.noise_multiplier, learning_rate=s["learning_rate"],
                               **timing(pair.dpsgd.steps), **common),
            "seqdpscd": run_seqdpscd(batch_size=s["seq_batch_size"], clipping_norm=s["seq_clipping_norm"],
                                     noise_multiplier=pair.seqdpscd.noise_multiplier,
                                     **timing(pair.seqdpscd.steps), **common),
            "primaldpscd": run_primaldpscd(batch_size=s["primal_batch_size"], clipping_norm=s["primal_clipping_norm"],
                                           noise_multiplier=pair.primaldpscd.noise_multiplier,
                                           **timing(pair.primaldpscd.steps), **common)}


def run_dpscd_preset(name: str, *, seed: int = 0, accountant: str = "ma128", progress=None) -> dict:
    """Preset ``name``: the four algorithms of :func:`compare_algorithms` at the same target (ε, δ) and accountant."""
    problem, settings = preset_problem(name, seed=seed)
    return {"preset": name, "problem": problem, "settings": settings,
            **compare_algorithms(problem=problem, settings=settings, seed=seed, accountant=accountant,
                                 progress=progress)}
