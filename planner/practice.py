"""The two questions practitioners ask, in their own terms, answered by the tight accountant.

* DP-SGD (TF-Privacy's ``compute_dp_sgd_privacy_statement``, Opacus's ``make_private``): N examples, batch size B,
  E epochs. One step samples each example with probability q = B/N (Poisson, as Opacus's DPDataLoader and the
  accountants of both libraries assume) and the run has T = ⌈E·N/B⌉ steps (TF-Privacy's count). The guarantee is
  per example; with ``max_examples_per_user`` k it is turned into a per-user one by group privacy.
* Client-level federated learning (Flower's ``DifferentialPrivacyServerSideFixedClipping``): N clients, m sampled
  per round without replacement (``fixed_size``; q = m/N), R rounds, noise on the sum of client updates clipped to
  C. The guarantee is per client (user-level): everything one client contributes.

Either answers "which σ for (ε, δ)?" (the smallest σ whose tight ε is ≤ the target, re-checked) or "which ε for this
σ?", with a one-phase :class:`~planner.schedule.Schedule` that exports to Opacus, Flower, TF-Privacy or fedplan's
own formats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fedplan.bounds import accounting
from fedplan.bounds.composition import group_privacy, per_member_budget
from fedplan.bounds.validation import check_choice, check_int, check_real
from fedplan.planner.display import accountant_label
from fedplan.planner.export import package_versions
from fedplan.planner.recipes import GaussianRun, tight_gaussian
from fedplan.planner.schedule import Schedule

#: The neighbouring relation used when none is given: add/remove-one for Poisson sampling (N varies), replace-one
#: for a fixed number per step (N is fixed; Flower's accountant uses it for sampling without replacement).
DEFAULT_RELATION = {"poisson": "add_or_remove_one", "fixed_size": "replace_one", "shuffle": "add_or_remove_one",
                    "with_replacement": "add_or_remove_one"}


@dataclass(frozen=True)
class PracticePlan:
    """A one-phase plan in a practitioner's terms: what to run and what it guarantees."""

    kind: str
    values: dict
    schedule: Schedule

    @property
    def statement(self) -> str:
        return self.values["statement"]


def _relation(sampling: str, neighboring_relation: str | None) -> str:
    return neighboring_relation or DEFAULT_RELATION[sampling]


def _solve(run: GaussianRun, *, target_epsilon: float | None, delta: float, noise_multiplier: float | None,
           group: int | None) -> tuple[float, dict, dict]:
    """σ and the accounting fields: calibrated for the target (per record, after group privacy), or of σ given."""
    if noise_multiplier is None:
        record_epsilon, record_delta = (target_epsilon, delta) if group is None else \
            per_member_budget(epsilon=target_epsilon, delta=delta, group_size=group)
        sigma, fields, privacy = tight_gaussian(run, target_epsilon=record_epsilon, target_delta=record_delta)
        return sigma, fields, privacy
    spent = accounting.get_epsilon(delta=delta, segments=run.segments(noise_multiplier), **run.model())
    fields = {"noise": "given", "noise_multiplier": noise_multiplier, "tight_epsilon": spent.epsilon,
              "tight_accountant": f"{spent.accountant} ({spent.bound}): {spent.source}",
              "epsilon_label": accountant_label(spent.accountant, spent.bound), "sampling": run.sampling,
              "neighboring_relation": run.neighboring_relation}
    privacy = {"mechanism": "gaussian", "unit": run.unit, **run.model(), "client_sample_rate": None, "delta": delta,
               "epsilon": spent.epsilon, "accountant": spent.accountant, "bound": spent.bound,
               "target_epsilon": None}
    return noise_multiplier, fields, privacy


def _group_fields(epsilon: float, delta: float, group: int | None, target: float | None) -> dict:
    if group is None:
        return {}
    user_epsilon, user_delta = group_privacy(epsilon=epsilon, delta=delta, group_size=group)
    fields = {"max_examples_per_user": group, "user_epsilon": user_epsilon, "user_delta": user_delta,
              "user_guarantee": f"({user_epsilon:.6g}, {user_delta:.3g})-DP per user of up to {group} examples, by "
                                "group privacy (kε, k·e^((k-1)ε)·δ) (Vadhan 2017, Lemma 2.2)"}
    if target is not None and user_epsilon > target * (1 + 1e-12):
        raise ArithmeticError(f"group privacy gives ε = {user_epsilon!r} above the target {target!r}")
    return fields


def plan_dp_sgd(*, dataset_size: int, batch_size: int, epochs: float, delta: float,
                target_epsilon: float | None = None, noise_multiplier: float | None = None,
                sampling: str = "poisson", neighboring_relation: str | None = None, clipping_norm: float = 1.0,
                max_examples_per_user: int | None = None) -> PracticePlan:
    """DP-SGD over N examples, batches of B (q = B/N), E epochs (T = ⌈E·N/B⌉ steps, TF-Privacy's count).

    Give ``target_epsilon`` (σ is calibrated; with ``max_examples_per_user`` the target is per user) or
    ``noise_multiplier`` (its ε is reported), not both.
    """
    size = check_int("dataset_size", dataset_size, low=1, high=accounting.MAX_DATASET_SIZE)
    batch = check_int("batch_size", batch_size, low=1, high=size)
    epochs = check_real("epochs", epochs, low=0.0, high=accounting.MAX_STEPS, low_open=True)
    steps = math.ceil(epochs * size / batch)
    if steps > accounting.MAX_STEPS:
        raise ValueError(f"epochs = {epochs:g} over N = {size} in batches of {batch} is {steps} steps; at most "
                         f"{accounting.MAX_STEPS} are accounted")
    run = _practice_run(sampling, neighboring_relation, batch / size, steps, size, "example")
    group = None if max_examples_per_user is None else check_int("max_examples_per_user", max_examples_per_user,
                                                                  low=1, high=size)
    _check_one_of(target_epsilon, noise_multiplier)
    sigma, fields, privacy = _solve(run, target_epsilon=target_epsilon, delta=delta, noise_multiplier=noise_multiplier,
                                    group=group)
    clip = check_real("clipping_norm", clipping_norm, low=0.0, low_open=True)
    values = {"kind": "dp-sgd", "dataset_size": size, "batch_size": batch, "epochs": epochs, "steps": steps,
              "sample_rate": batch / size, **fields, "epsilon": fields["tight_epsilon"], "delta": privacy["delta"],
              "guarantee": "per example (record-level)", "clipping_norm": clip,
              **_group_fields(fields["tight_epsilon"], privacy["delta"], group, target_epsilon),
              "opacus": {"noise_multiplier": sigma, "max_grad_norm": clip, "batch_size": batch,
                         "optimizer_steps": steps, "poisson_sampling": sampling == "poisson"}}
    values["statement"] = (
        f"DP-SGD on N = {size} examples, batches of {batch} (q = {batch / size:.6g}, {sampling} sampling), "
        f"{steps} steps ({epochs:g} epochs), noise multiplier σ = {sigma:.6g} (noise std / clipping norm {clip:g} on "
        f"the summed batch gradient): ({fields['tight_epsilon']:.6g}, {privacy['delta']:g})-DP per example, "
        f"{run.neighboring_relation} neighbours, {fields['tight_accountant']}."
        + (f" Per user: {values['user_guarantee']}." if group else ""))
    if group is not None:
        privacy.update(max_examples_per_user=group, user_epsilon=values["user_epsilon"],
                       user_delta=values["user_delta"])
    schedule = Schedule(rounds=steps, change_points=((0, {"sample_rate": batch / size, "batch_size": batch,
                                                          "noise_multiplier": sigma, "clipping_norm": clip}),),
                        metadata={"entry": "dp-sgd", "epochs": epochs, "max_examples_per_user": group,
                                  "versions": package_versions()},
                        statement=values["statement"], privacy=privacy)
    return PracticePlan(kind="dp-sgd", values=values, schedule=schedule)


def plan_federated(*, clients: int, clients_per_round: int, rounds: int, delta: float,
                   target_epsilon: float | None = None, noise_multiplier: float | None = None,
                   sampling: str = "fixed_size", neighboring_relation: str | None = None,
                   clipping_norm: float = 1.0) -> PracticePlan:
    """Client-level FL: N clients, m per round (q = m/N), R rounds; a per-client (user-level) guarantee."""
    clients = check_int("clients", clients, low=1, high=accounting.MAX_DATASET_SIZE)
    sampled = check_int("clients_per_round", clients_per_round, low=1, high=clients)
    rounds = check_int("rounds", rounds, low=1, high=accounting.MAX_STEPS)
    run = _practice_run(sampling, neighboring_relation, sampled / clients, rounds, clients, "client")
    _check_one_of(target_epsilon, noise_multiplier)
    sigma, fields, privacy = _solve(run, target_epsilon=target_epsilon, delta=delta, noise_multiplier=noise_multiplier,
                                    group=None)
    clip = check_real("clipping_norm", clipping_norm, low=0.0, low_open=True)
    values = {"kind": "federated", "clients": clients, "clients_per_round": sampled, "rounds": rounds,
              "sample_rate": sampled / clients, **fields, "epsilon": fields["tight_epsilon"],
              "delta": privacy["delta"], "guarantee": "per client (user-level)", "clipping_norm": clip,
              "flower": {"noise_multiplier": sigma, "clipping_norm": clip, "num_sampled_clients": sampled,
                         "fraction_fit": sampled / clients, "min_fit_clients": sampled,
                         "min_available_clients": clients, "num_server_rounds": rounds}}
    values["statement"] = (
        f"{rounds} rounds of {sampled} of N = {clients} clients ({sampling} sampling, q = {sampled / clients:.6g}), "
        f"updates clipped to {clip:g} and noise σ·C on their sum with σ = {sigma:.6g}: "
        f"({fields['tight_epsilon']:.6g}, {privacy['delta']:g})-DP per client (user-level), "
        f"{run.neighboring_relation} neighbours, {fields['tight_accountant']}.")
    schedule = Schedule(rounds=rounds, change_points=((0, {"sample_rate": sampled / clients,
                                                           "clients_per_round": sampled, "noise_multiplier": sigma,
                                                           "clipping_norm": clip}),),
                        metadata={"entry": "federated", "versions": package_versions()},
                        statement=values["statement"], privacy=privacy)
    return PracticePlan(kind="federated", values=values, schedule=schedule)


def _practice_run(sampling: str, relation: str | None, rate: float, steps: int, size: int, unit: str) -> GaussianRun:
    from fedplan.bounds.sampling import NEIGHBORING_RELATIONS, SAMPLINGS

    sampling = check_choice("sampling", sampling, SAMPLINGS)
    if relation is not None:
        relation = check_choice("neighboring_relation", relation, NEIGHBORING_RELATIONS)
    return GaussianRun(phases=((rate, steps),), sampling=sampling, neighboring_relation=_relation(sampling, relation),
                       dataset_size=size, unit=unit)


def _check_one_of(target_epsilon: float | None, noise_multiplier: float | None) -> None:
    if (target_epsilon is None) == (noise_multiplier is None):
        raise ValueError("give exactly one of target_epsilon (σ is calibrated) and noise_multiplier (its ε is "
                         "reported)")
    if target_epsilon is not None:
        check_real("target_epsilon", target_epsilon, low=0.0, low_open=True)
