"""FedSGD-DPC (Zhou et al., Algorithm 1, zhou L137-168) on the engine's timing models.

Each of T rounds the server picks b of the N clients (``selection``: uniform b-subsets, round robin or
shuffle-and-partition, spec §2.4). A picked client computes one gradient at θ_t: the mean of per-example
gradients over its whole data set, clipped to ℓ1 norm ξ₁ (Laplace mechanism, q = 1) or over a Poisson
batch with rate q, clipped to ℓ2 norm ξ₂ and divided by q·d_i (Gaussian mechanism); it adds its noise
w_i (Laplace with scale s_i per coordinate, or Gaussian with std σ_i) and returns θ_i = θ_t − η_t(g_i + w_i).
The server sets θ_{t+1} = (N/b) Σ_{i∈P_t} (d_i/d) θ_i (zhou L150; a plain mean for equal d_i).

Noise: given directly (``noise_scale`` for Laplace, ``noise_multiplier`` z for Gaussian, σ_i = zξ₂/(q d_i),
one value or one per round), or calibrated from a per-client ``epsilon`` for the planned horizon T with
:func:`bounds.fedsgd_dpc.laplace_noise` / :func:`bounds.fedsgd_dpc.gaussian_noise_accountant`. The round
takes as long as its slowest picked client (download + compute per example + upload).

Privacy of the run: every reply is a release of its client's data; Laplace replies compose by basic
composition (per reply ε = (2ξ₁/d_i)/s_i, replace-one); Gaussian replies as Poisson-subsampled Gaussians
(q, z), add/remove-one, with the accountant. Under uniform selection a client may reply more than bT/N
times: the ledger counts the replies it actually made.
"""

from __future__ import annotations

import time as wallclock

import numpy as np

from fedplan.bounds import fedsgd_dpc as zhou
from fedplan.bounds.validation import check_choice, check_int, check_real
from fedplan.planner.export import Schedule
from fedplan.planner.simulate.engine import DEFAULT_COMPUTE, DEFAULT_LATENCY, Durations, spawn_generators
from fedplan.planner.simulate.models import is_finite
from fedplan.planner.simulate.problem import Problem
from fedplan.planner.simulate.records import (
    Diverged,
    RoundRecorder,
    SimulationResult,
    gaussian_ledger,
    laplace_ledger,
    merge_releases,
)

__all__ = ["MECHANISMS", "run_fedsgd_dpc"]

MECHANISMS = ("laplace", "gaussian", "none")
SOURCE = "Zhou et al., FedSGD-DPC, Algorithm 1 (zhou L137-168)"


def _select(rng: np.random.Generator, selection: str, t: int, b: int, n: int, order: list[int]) -> np.ndarray:
    """The b clients of round t (uniform b-subset, round robin, or consecutive blocks of a reshuffled order)."""
    if selection == "uniform":
        return np.sort(rng.choice(n, b, replace=False))
    if selection == "round_robin":
        return np.sort((np.arange(b) + t * b) % n)
    blocks = n // b
    if t % blocks == 0:
        order[:] = rng.permutation(n).tolist()
    start = (t % blocks) * b
    return np.sort(np.array(order[start:start + b]))


def _per_round(name: str, value, rounds: int) -> np.ndarray:
    array = np.asarray(value, dtype=float)
    if array.ndim == 0:
        array = np.full(rounds, float(array))
    if array.shape != (rounds,):
        raise ValueError(f"{name} must be one number or one per round ({rounds}); got shape {np.shape(value)}")
    for index, item in enumerate(array):
        check_real(f"{name}[{index}]", float(item), low=0.0)
    return array


def _calibrated(mechanism, *, rounds, b, n, sizes, epsilon, delta, clip, rate, selection, accountant):
    """Per-client noise for the planned horizon: Laplace scales s_i or Gaussian multipliers z_i."""
    if mechanism == "laplace":
        return [zhou.laplace_noise(rounds=rounds, clients_per_round=b, num_clients=n, client_size=size,
                                   epsilon=epsilon, clipping_norm=clip, selection=selection).scale for size in sizes]
    return [zhou.gaussian_noise_accountant(rounds=rounds, clients_per_round=b, num_clients=n, client_size=size,
                                           epsilon=epsilon, delta=delta, clipping_norm=clip, sample_rate=rate,
                                           accountant=accountant, selection=selection).noise_multiplier
            for size in sizes]


def run_fedsgd_dpc(*, problem: Problem, rounds: int, clients_per_round: int, step_sizes, mechanism: str = "gaussian",
                   clipping_norm: float | None = None, sample_rate: float = 1.0, epsilon: float | None = None,
                   noise_multiplier=None, noise_scale=None, delta: float = 1e-5, selection: str = "uniform",
                   compute: Durations = DEFAULT_COMPUTE, uplink: Durations = DEFAULT_LATENCY,
                   downlink: Durations = DEFAULT_LATENCY, seed: int = 0, eval_every: int = 1,
                   accountant: str = "rdp", progress=None) -> SimulationResult:
    """Simulate T rounds of FedSGD-DPC (module docstring).

    Parameters
    ----------
    rounds, clients_per_round : int
        T ≥ 1 and b in [1, N].
    step_sizes : float or array (rounds,)
        η_t (e.g. the theory's 2/(μ(t+γ)), :func:`bounds.fedsgd_dpc.step_size`).
    mechanism : {"laplace", "gaussian", "none"}
        Laplace: full local data, ℓ1 clipping at ``clipping_norm`` = ξ₁. Gaussian: Poisson ``sample_rate``
        q, ℓ2 clipping at ξ₂. None: no clipping, no noise.
    epsilon : float, optional
        Per-client target ε_i: calibrates the noise for the horizon T (give this or the noise itself).
    noise_multiplier, noise_scale : float or array (rounds,), optional
        Gaussian z per round (std zξ₂/(q d_i)) or Laplace scale s per round, instead of ``epsilon``.
    selection : {"uniform", "round_robin", "shuffle_partition"}
    progress : callable, optional
        Called with the number of completed rounds.
    """
    start = wallclock.perf_counter()
    rounds = check_int("rounds", rounds, low=1)
    n = problem.n_clients
    b = check_int("clients_per_round", clients_per_round, low=1, high=n)
    mechanism = check_choice("mechanism", mechanism, MECHANISMS)
    selection = check_choice("selection", selection, zhou.SELECTIONS)
    seed = check_int("seed", seed, low=0)
    steps = _per_round("step_sizes", step_sizes, rounds)
    sizes = problem.client_sizes
    rate = 1.0
    clip = None
    noise = np.zeros((rounds, n))
    if mechanism != "none":
        clip = check_real("clipping_norm", clipping_norm, low=0.0, low_open=True)
        if mechanism == "gaussian":
            rate = check_real("sample_rate", sample_rate, low=0.0, high=1.0, low_open=True)
        given = noise_multiplier if mechanism == "gaussian" else noise_scale
        if (epsilon is None) == (given is None):
            name = "noise_multiplier" if mechanism == "gaussian" else "noise_scale"
            raise ValueError(f"give exactly one of epsilon (calibrated noise) and {name} for mechanism={mechanism!r}")
        if epsilon is not None:
            per_client = _calibrated(mechanism, rounds=rounds, b=b, n=n, sizes=sizes,
                                     epsilon=check_real("epsilon", epsilon, low=0.0, low_open=True), delta=delta,
                                     clip=clip, rate=rate, selection=selection, accountant=accountant)
            noise[:] = np.asarray(per_client)[None, :]
        else:
            noise[:] = _per_round("noise_multiplier" if mechanism == "gaussian" else "noise_scale", given,
                                  rounds)[:, None]
    rngs = spawn_generators(seed, 6)
    select_rng, sample_rng, noise_rng = rngs[:3]
    streams = [durations.stream(rng) for durations, rng in zip((downlink, compute, uplink), rngs[3:], strict=True)]
    means = [durations.means(n) for durations in (downlink, compute, uplink)]
    model = problem.model
    recorder = RoundRecorder(problem.evaluator(), eval_every=eval_every, progress=progress)
    weights = np.asarray(sizes, dtype=float) / float(sum(sizes))
    theta = np.zeros(model.dim)
    clock = 0.0
    order: list[int] = []
    releases: list[list] = [[] for _ in range(n)]
    diverged, message = False, None
    try:
        with np.errstate(all="ignore"):  # divergence is detected and reported, not warned about
            for t in range(rounds):
                picked = _select(select_rng, selection, t, b, n, order)
                replies = np.zeros(model.dim)
                slowest = 0.0
                noise_sq = 0.0
                for c in picked.tolist():
                    client = problem.clients[c]
                    if mechanism == "gaussian":
                        batch = np.flatnonzero(sample_rng.random(client.size) < rate)
                        g = model.clipped_gradient_sum(client.X[batch], client.y[batch], theta, clip=clip,
                                                       row_sq_norms=client.row_sq_norms[batch]) / (rate * client.size)
                        std = noise[t, c] * clip / (rate * client.size)
                        w = std * noise_rng.standard_normal(model.dim)
                        releases[c].append((rate, float(noise[t, c])))
                        work = batch.size
                    else:
                        g = model.clipped_gradient_sum(client.X, client.y, theta, clip=clip, norm="l1") / client.size
                        w = (noise_rng.laplace(0.0, noise[t, c], model.dim) if mechanism == "laplace"
                             else np.zeros(model.dim))
                        if mechanism == "laplace":
                            releases[c].append(2.0 * clip / client.size / noise[t, c] if noise[t, c] > 0 else np.inf)
                        work = client.size
                    noise_sq += float(w @ w)
                    replies += weights[c] * (theta - steps[t] * (g + w))
                    slowest = max(slowest, means[0][c] * streams[0].draw() + means[1][c] * work * streams[1].draw()
                                  + means[2][c] * streams[2].draw())
                theta = (n / b) * replies
                clock += slowest
                if not is_finite(theta):
                    raise Diverged(f"the model stopped being finite at round {t}")
                recorder.record(round=t, time=clock, w=theta, staleness=0.0, noise=float(np.sqrt(noise_sq)),
                                force=t == rounds - 1)
            final = recorder.finish(theta)
    except Diverged as error:
        diverged, message = True, str(error)
        final = {"loss": None, "accuracy": None, "dist_sq": None}
    if mechanism == "laplace":
        privacy = laplace_ledger(releases, note="Full local data per reply (q = 1), l1 clipping at xi1.")
    elif mechanism == "gaussian":
        privacy = gaussian_ledger([merge_releases(r) for r in releases], delta=delta, accountant=accountant,
                                  note=f"{selection} selection; every reply counted.")
    else:
        privacy = {"mechanism": "none", "epsilon": None, "delta": None,
                   "statement": "No noise: the run is not differentially private."}
    rows = [{"clients_per_round": b, "sample_rate": rate, "learning_rate": float(steps[t]),
             ("noise_multiplier" if mechanism == "gaussian" else "noise_scale"): float(noise[t].max())}
            for t in range(len(recorder.rows))]
    executed = Schedule.from_rows(rows or [{"clients_per_round": b}],
                                  metadata={"algorithm": "fedsgd-dpc", "mechanism": mechanism,
                                            "selection": selection}, statement=privacy.get("statement", ""))
    config = {"source": SOURCE, **problem.describe(), "rounds": rounds, "clients_per_round": b,
              "mechanism": mechanism, "clipping_norm": clip, "sample_rate": rate, "selection": selection,
              "seed": seed, "eval_every": recorder.eval_every, "noise_per_client": noise[0].tolist()}
    return SimulationResult(algorithm="fedsgd-dpc", rows=tuple(recorder.rows), final=final, privacy=privacy,
                            virtual_time=clock, wall_time_s=wallclock.perf_counter() - start, diverged=diverged,
                            divergence=message, executed=executed, config=config)
