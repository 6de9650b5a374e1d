"""``fedplan dp-sgd`` and ``fedplan federated``: the entry points in practitioners' terms (:mod:`planner.practice`).

``fedplan dp-sgd --dataset-size 60000 --batch-size 256 --epochs 15 --target-epsilon 3 --delta 1e-5`` is TF-Privacy's
statement turned around (σ for a target), ``--noise-multiplier 1.1`` instead gives the statement itself;
``fedplan federated --clients 1000 --clients-per-round 50 --rounds 200 --target-epsilon 2 --delta 1e-5`` plans
client-level DP for Flower. ``--out FILE --format opacus|flower|tf-privacy`` writes the library's configuration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from fedplan.bounds import accounting, rdp, sampling
from fedplan.planner.export import (
    FORMATS,
    LIBRARY_ACCOUNTANTS,
    check_export_options,
    for_library,
    format_for_path,
    write_schedule,
)
from fedplan.planner.practice import plan_dp_sgd, plan_federated
from fedplan.planner.tasks.accounting import target_epsilon_field
from fedplan.planner.tasks.base import OneOf, Report, Request, choice, count, flag, real, text


def _relation_field():
    return choice(None, help="neighbouring data sets (default: add_or_remove_one for poisson, replace_one for "
                  "fixed_size): " + "; ".join(f"{name} ({words})" for name, words in sampling.RELATION_HELP.items()),
                  choices=sampling.NEIGHBORING_RELATIONS)


def library_accountant_field():
    return choice("fedplan", help="σ of a library export (--format opacus or flower): fedplan keeps fedplan's tight "
                  "calibration (the library's own accountant reports more); rdp (Opacus, Flower) or prv (Opacus) "
                  "re-calibrates σ so that that accountant, run on the export, reports ε within 1 % below the target "
                  "(slower: a PRV check of a plan of many phases takes minutes)", choices=LIBRARY_ACCOUNTANTS)


@dataclass(frozen=True, kw_only=True)
class _PracticeRequest(Request):
    target_epsilon: float | None = target_epsilon_field(None, help="target ε > 0: σ is calibrated (or give "
                                                        "noise_multiplier)")
    noise_multiplier: float | None = real(None, help="noise multiplier σ = noise std / clipping norm: its ε is "
                                          "reported (or give target_epsilon)", low=rdp.MIN_NOISE_MULTIPLIER,
                                          high=rdp.MAX_NOISE_MULTIPLIER)
    delta: float = real(1e-5, help="δ of the guarantee, in (0, 1)", low=0.0, high=1.0, low_open=True, high_open=True)
    neighboring_relation: str | None = _relation_field()
    clipping_norm: float = real(1.0, help="clipping norm C (Opacus max_grad_norm, Flower clipping_norm)", low=0.0,
                                low_open=True)
    out: str | None = text(None, help="also write the plan: .csv, .json, .yaml, or a library's configuration with "
                           "--format", metavar="FILE")
    format: str | None = choice(None, help="format of --out (default: from its ending): " + ", ".join(FORMATS),
                                choices=FORMATS)
    per_round: bool = flag(help="CSV: one row per round instead of one per change of parameters")
    library_accountant: str = library_accountant_field()

    one_of: ClassVar = (OneOf(("target_epsilon", "noise_multiplier")),)

    def check(self) -> None:
        check_export_options(self.out, fmt=self.format, per_round=self.per_round,
                             library_accountant=self.library_accountant)

    def answer(self, plan) -> Report:
        values = dict(plan.values)
        if self.out is not None:
            path, added, note = write_export(plan.schedule, self.out, fmt=self.format, per_round=self.per_round,
                                             library_accountant=self.library_accountant)
            values = {"out": str(path), **values, **added, "statement": f"wrote {path}{note}. {values['statement']}"}
            record = added.get("library_accountant", {})
            library = record.get("library")
            if isinstance(values.get(library), dict):  # the library's settings: the σ the export carries
                values[library] = {**values[library], "noise_multiplier": record["noise_multiplier"]}
        return Report(values=values, result=plan)


def write_export(schedule, out: str, *, fmt: str | None, per_round: bool, library_accountant: str):
    """Write ``schedule`` to ``out``, σ re-calibrated for the library's accountant if asked (:func:`for_library`).
    Returns the path, the report values it adds (for a re-calibrated export ``library_accountant``: which
    accountant, σ, and the ε each reports) and a note for the report's statement ("" or " with σ = …")."""
    exported = for_library(schedule, format_for_path(out, fmt), library_accountant)
    path = write_schedule(exported, out, fmt=fmt, per_round=per_round)
    if library_accountant == "fedplan":
        return path, {}, ""
    record = exported.metadata["library_accountant"]
    note = (f" with σ = {record['noise_multiplier']:g} calibrated for {record['calibrated_for']} (it reports ε = "
            f"{record['library_epsilon']:.6g}; fedplan's tight ε is {record['fedplan_epsilon']:.6g})")
    return path, {"library_accountant": record}, note


@dataclass(frozen=True, kw_only=True)
class DPSGD(_PracticeRequest):
    """DP-SGD in TF-Privacy's and Opacus's terms: examples, batch size, epochs."""

    command: ClassVar = ("dp-sgd",)
    summary: ClassVar = "DP-SGD: σ for (ε, δ), or ε of σ, from examples, batch size and epochs (per example)"

    dataset_size: int = count(..., help="number of training examples N", low=1, high=accounting.MAX_DATASET_SIZE)
    batch_size: int = count(..., help="batch size B (expected, with Poisson sampling): q = B/N", low=1)
    epochs: float = real(..., help="passes over the data E: T = ⌈E·N/B⌉ steps (TF-Privacy's count)", low=0.0,
                         high=accounting.MAX_STEPS, low_open=True)
    sampling: str = choice("poisson", help="how examples join a batch: poisson (Opacus's DPDataLoader, what the "
                           "libraries' accountants assume), fixed_size, shuffle (a shuffled DataLoader: no "
                           "amplification)", choices=("poisson", "fixed_size", "shuffle"))
    max_examples_per_user: int | None = count(None, help="a user-level target: each user holds at most this many "
                                              "examples; the target is met per user by group privacy", low=1)

    def check(self) -> None:
        super().check()
        if self.batch_size > self.dataset_size:
            raise ValueError(f"batch_size must be at most dataset_size = {self.dataset_size}; got {self.batch_size}")

    def run(self, *, progress=None) -> Report:
        return self.answer(plan_dp_sgd(
            dataset_size=self.dataset_size, batch_size=self.batch_size, epochs=self.epochs, delta=self.delta,
            target_epsilon=self.target_epsilon, noise_multiplier=self.noise_multiplier, sampling=self.sampling,
            neighboring_relation=self.neighboring_relation, clipping_norm=self.clipping_norm,
            max_examples_per_user=self.max_examples_per_user))


@dataclass(frozen=True, kw_only=True)
class Federated(_PracticeRequest):
    """Client-level federated learning in Flower's terms: clients, clients per round, rounds."""

    command: ClassVar = ("federated",)
    summary: ClassVar = "client-level FL: σ for (ε, δ), or ε of σ, from clients, clients per round, rounds (per client)"

    clients: int = count(..., help="number of clients N", low=1, high=accounting.MAX_DATASET_SIZE,
                         flags=("--num-clients",))
    clients_per_round: int = count(..., help="clients sampled per round m: q = m/N", low=1)
    rounds: int = count(..., help="number of rounds R", low=1, high=accounting.MAX_STEPS)
    sampling: str = choice("fixed_size", help="how clients join a round: fixed_size (m of N without replacement, "
                           "as Flower samples) or poisson", choices=("fixed_size", "poisson"))

    def check(self) -> None:
        super().check()
        if self.clients_per_round > self.clients:
            raise ValueError(f"clients_per_round must be at most clients = {self.clients}; got "
                             f"{self.clients_per_round}")
        halved = self.sampling == "fixed_size" and (self.neighboring_relation or "replace_one") == "replace_one"
        if halved and self.noise_multiplier is not None and self.noise_multiplier < 2 * rdp.MIN_NOISE_MULTIPLIER:
            # replace-one with m of N is accounted as the Poisson mechanism at σ/2 (bounds/sampling.py)
            raise ValueError(f"noise_multiplier must be at least {2 * rdp.MIN_NOISE_MULTIPLIER:g} with fixed_size "
                             f"sampling and replace_one neighbours (accounted at σ/2); got {self.noise_multiplier:g}")

    def run(self, *, progress=None) -> Report:
        return self.answer(plan_federated(
            clients=self.clients, clients_per_round=self.clients_per_round, rounds=self.rounds,
            delta=self.delta, target_epsilon=self.target_epsilon, noise_multiplier=self.noise_multiplier,
            sampling=self.sampling, neighboring_relation=self.neighboring_relation, clipping_norm=self.clipping_norm))


TASKS = (DPSGD, Federated)
