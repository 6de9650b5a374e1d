"""A schedule in the names and meaning of the library that trains with it: Opacus, Flower, TF-Privacy.

Each export opens with comments that state the guarantee, its unit (example or client), sampling and neighbouring
relation (and, for a plan from a paper's theorem, whether its hypotheses hold: "no guarantee (failing: …)"), and it
refuses a schedule whose mechanism the library does not run:

* Opacus (``PrivacyEngine.make_private``): Poisson sampling of examples (its ``poisson_sampling=True``, the model
  its accountants assume); ``noise_multiplier`` = noise std / ``max_grad_norm`` on the summed batch gradient, as
  fedplan's. One phase per change of q or σ, and ``ACCOUNTANT_HISTORY``, the ``(noise_multiplier, sample_rate,
  steps)`` entries of ``accountant.history`` that reproduce fedplan's accounting. ``RDP_ALPHAS`` are fedplan's
  orders (up to 1024): Opacus's default orders stop at 63 and overstate ε where the optimum lies beyond.
* Flower (``DifferentialPrivacyServerSideFixedClipping`` around a strategy): clients sampled m of N per round
  (``fixed_size``), noise std ``noise_multiplier × clipping_norm`` on the sum of client updates (std ·/m on their
  mean), one phase. Flower's ``RdpAccountant`` reads σ as noise / *replace* sensitivity (docs/ERRATA.md ACC-7):
  ``FLOWER_ACCOUNTANT`` gives the event that accounts this run, at noise_multiplier/2 under replace-one.
* TF-Privacy (``compute_dp_sgd_privacy_statement``): Poisson sampling of examples, one phase; ``used_microbatching``
  is False (one example per microbatch: True doubles the sensitivity TF-Privacy assumes).

σ is fedplan's tight calibration unless the schedule was re-calibrated for the library's own accountant
(:func:`planner.library_accountants.calibrated`, the ``library_accountant`` option): then the export says which
accountant σ was calibrated for and the ε each one reports (``LIBRARY_ACCOUNTANT``; Flower:
``[tool.fedplan.library-accountant]``).
"""

from __future__ import annotations

import json
import math
import pprint

from fedplan.bounds import rdp
from fedplan.planner.library_accountants import flower_event, opacus_history
from fedplan.planner.schedule import Schedule, guarantee_line, theorem_line

__all__ = ["RENDERERS", "check"]

#: What each library runs (:func:`_require`): the unit it protects, its sampling and neighbours, one phase or many.
REQUIREMENTS = {
    "opacus": {"library": "Opacus", "unit": "example", "samplings": ("poisson",), "one_phase": False,
               "relations": ("add_or_remove_one",)},
    "flower": {"library": "Flower", "unit": "client", "samplings": ("fixed_size",), "one_phase": True},
    "tf-privacy": {"library": "TF-Privacy", "unit": "example", "samplings": ("poisson",), "one_phase": True,
                   "relations": ("add_or_remove_one",)},
}


def _require(schedule: Schedule, library: str, *, unit: str, samplings: tuple[str, ...], one_phase: bool,
             relations: tuple[str, ...] = ("add_or_remove_one", "replace_one")) -> dict:
    """The privacy block, after checking that ``library`` runs this schedule's mechanism."""
    privacy = schedule.privacy
    if not schedule.is_gaussian:
        raise ValueError(f"the {library} export needs a Gaussian schedule with its privacy block; this one has "
                         f"{'none' if privacy is None else privacy['mechanism']} (export json, yaml or csv instead)")
    if privacy.get("client_sample_rate") is not None:
        raise ValueError(f"the {library} export runs one stage of sampling; this plan samples clients, then records "
                         "(export json, yaml or csv instead)")
    if privacy["unit"] != unit:
        article = "an" if unit[0] in "aeiou" else "a"
        raise ValueError(f"the {library} export is for {article} {unit}-level plan; this plan protects one "
                         f"{privacy['unit']}")
    if privacy["sampling"] not in samplings:
        raise ValueError(f"{library} runs {' or '.join(samplings)} sampling; this plan is accounted for "
                         f"sampling={privacy['sampling']} (plan with sampling={samplings[0]}, or export json)")
    if privacy["neighboring_relation"] not in relations:
        raise ValueError(f"{library}'s accountant assumes {' or '.join(relations)} neighbours; this plan is accounted "
                         f"for neighboring_relation={privacy['neighboring_relation']} (export json, yaml or csv)")
    if one_phase and len(schedule.change_points) > 1:
        names = {name for _, values in schedule.change_points for name in values}  # once each: was once per point
        changing = sorted(name for name in names
                          if len({repr(values.get(name)) for _, values in schedule.change_points}) > 1)
        raise ValueError(f"the {library} export holds one phase; this schedule has {len(schedule.change_points)} "
                         f"(changing {', '.join(changing)}): export json, yaml or csv")
    return privacy


def check(schedule: Schedule, fmt: str) -> dict:
    """Refuse a schedule whose mechanism the library of export format ``fmt`` does not run, or that lacks what its
    export needs; the privacy block otherwise (what :data:`RENDERERS` refuse, without rendering)."""
    privacy = _require(schedule, **REQUIREMENTS[fmt])
    if fmt == "tf-privacy" and privacy.get("dataset_size") is None:
        raise ValueError("the TF-Privacy export needs the number of examples N (dataset_size)")
    return privacy


def _header(schedule: Schedule, library: str) -> list[str]:
    unit = "rounds" if schedule.privacy["unit"] == "client" else "steps"
    theorem = theorem_line(schedule)
    lines = [f"# fedplan export for {library}: {schedule.rounds} {unit} in {len(schedule.change_points)} phase(s)",
             f"# Guarantee: {guarantee_line(schedule.privacy)}" + ("." if theorem is None else f"; {theorem}.")]
    target = schedule.privacy.get("target_epsilon")
    calibration = schedule.metadata.get("library_accountant")
    if calibration is not None:
        lines += [f"# σ calibrated for {calibration['calibrated_for']}: it reports ε = "
                  f"{calibration['library_epsilon']:.6g} ≤ target {target:g} for this export; fedplan's tight ε "
                  f"({calibration['fedplan_accountant']}) is {calibration['fedplan_epsilon']:.6g}.",
                  f"# fedplan's own calibration (library_accountant=fedplan) gives σ = "
                  f"{calibration['fedplan_noise_multiplier']:g} at tight ε ≤ {target:g}."]
    elif target is not None:
        lines.append(f"# Calibrated to target ε = {target:g} by fedplan's tight accountant (library_accountant="
                     "fedplan: the library's accountant reports more, see below).")
    return lines


def _calibration_literal(schedule: Schedule) -> list[str]:
    """``LIBRARY_ACCOUNTANT = {...}`` for a schedule calibrated for a library's accountant, else nothing."""
    calibration = schedule.metadata.get("library_accountant")
    return [] if calibration is None else [f"LIBRARY_ACCOUNTANT = {_literal(calibration)}", ""]


def _literal(value) -> str:
    """``value`` as a Python literal (``ast.literal_eval`` reads it back)."""
    return pprint.pformat(value, sort_dicts=False, width=110)


def _batch_size(values: dict, dataset_size: int | None) -> int | None:
    if values.get("batch_size") is not None:
        return int(values["batch_size"])
    if dataset_size is None:
        return None
    size = values["sample_rate"] * dataset_size
    return max(1, round(size))


def render_opacus(schedule: Schedule) -> str:
    """Python for Opacus: ``PRIVACY``, ``PHASES`` (make_private arguments per phase), ``ACCOUNTANT_HISTORY``."""
    privacy = _require(schedule, **REQUIREMENTS["opacus"])
    size = privacy.get("dataset_size")
    phases = []
    for (start, _, values), (q, sigma, steps) in zip(schedule.phases(), schedule.segments(), strict=True):
        batch = _batch_size(values, size)
        phase = {"start_step": start, "steps": steps, "noise_multiplier": sigma,
                 "max_grad_norm": float(values.get("clipping_norm", 1.0)), "sample_rate": q, "batch_size": batch,
                 "poisson_sampling": True}
        if size is not None and batch is not None:
            # Opacus samples at 1 / len(DataLoader) = 1 / ceil(N / batch_size)
            phase["opacus_sample_rate"] = 1 / math.ceil(size / batch)
        if values.get("learning_rate") is not None:
            phase["learning_rate"] = float(values["learning_rate"])
        phases.append(phase)
    history = opacus_history(schedule)
    header = _header(schedule, "Opacus (PrivacyEngine.make_private)")
    lines = header[:2] + _phase_summary(history) + header[2:] + [
        "# Opacus's noise_multiplier is fedplan's: noise std / max_grad_norm on the summed batch gradient.",
        "# Each phase: a DataLoader with the phase's batch_size over the N training examples, then",
        "#   model, optimizer, loader = privacy_engine.make_private(module=model, optimizer=optimizer,",
        "#       data_loader=loader, noise_multiplier=phase['noise_multiplier'],",
        "#       max_grad_norm=phase['max_grad_norm'], poisson_sampling=True)",
        "# and phase['steps'] optimizer steps. Opacus samples at 1/len(DataLoader) (opacus_sample_rate): where that",
        "# is below fedplan's sample_rate the run spends less than fedplan's ε. If only σ changes between phases,",
        "# set optimizer.noise_multiplier at the phase's start_step instead of a new make_private.",
        f"# Opacus's RDPAccountant with RDP_ALPHAS gives ε ≈ {_rdp_epsilon(schedule):.4g}; its PRVAccountant is close "
        f"to fedplan's tight PLD ε {privacy['epsilon']:.6g}.",
        "# Opacus's own ε of this plan: accountant.history = ACCOUNTANT_HISTORY, then",
        "#   accountant.get_epsilon(delta=PRIVACY['delta'], alphas=RDP_ALPHAS)   (RDPAccountant; PRVAccountant: delta)",
        "",
        f"PRIVACY = {_literal(privacy)}",
        "",
        f"PHASES = {_literal(phases)}",
        "",
        "# (noise_multiplier, sample_rate, steps): Opacus's accountant.history entries",
        f"ACCOUNTANT_HISTORY = {history!r}",
        "",
        f"RDP_ALPHAS = {list(rdp.RDP_ORDERS)!r}",
        "",
        *_calibration_literal(schedule),
    ]
    return "\n".join(lines)


def _phase_summary(history: list[tuple[float, float, int]]) -> list[str]:
    """For a schedule of several phases, two comment lines: how many, the range of their sample rates and noise
    multipliers, and why they stay apart."""
    if len(history) == 1:
        return []
    rates = [q for _, q, _ in history]
    sigmas = [sigma for sigma, _, _ in history]
    ranges = [f"{name} {min(values):g}" + ("" if min(values) == max(values) else f" … {max(values):g}")
              for name, values in (("sample_rate", rates), ("noise_multiplier", sigmas))]
    return [f"# Summary: {len(history)} phase(s) (one per change of sample_rate or noise_multiplier), "
            f"{' and '.join(ranges)}, {sum(steps for _, _, steps in history)} steps.",
            "# ACCOUNTANT_HISTORY holds them as one list that Opacus's accountants compose entry by entry; phases of "
            "different rates stay apart (merging them would change ε)."]


def render_flower(schedule: Schedule) -> str:
    """A ``[tool.flwr.app.config]`` snippet (pyproject.toml) with the strategy arguments as comments."""
    privacy = _require(schedule, **REQUIREMENTS["flower"])
    event = flower_event(schedule)
    (_, sigma, rounds), = schedule.segments()
    clients, sampled = event["population-size"], event["sample-size"]
    clipping = float(schedule.change_points[0][1].get("clipping_norm", 1.0))
    lines = _header(schedule, "Flower (DifferentialPrivacyServerSideFixedClipping)") + [
        "# Flower samples num-sampled-clients of min-available-clients clients per round without replacement",
        "# (fraction-fit = m/N, min-fit-clients = m), clips each update to clipping-norm and adds noise of std",
        "# noise-multiplier x clipping-norm / m to their mean (noise-multiplier x clipping-norm on the sum).",
        "# In server_fn:",
        "#   cfg = context.run_config",
        "#   strategy = FedAvg(fraction_fit=cfg['fraction-fit'], min_fit_clients=cfg['min-fit-clients'],",
        "#                     min_available_clients=cfg['min-available-clients'])",
        "#   strategy = DifferentialPrivacyServerSideFixedClipping(strategy, noise_multiplier=cfg['noise-multiplier'],",
        "#                     clipping_norm=cfg['clipping-norm'], num_sampled_clients=cfg['num-sampled-clients'])",
        "#   config = ServerConfig(num_rounds=cfg['num-server-rounds'])",
        "",
        "[tool.flwr.app.config]",
        f"num-server-rounds = {rounds}",
        f"fraction-fit = {sampled / clients!r}",
        f"min-fit-clients = {sampled}",
        f"min-available-clients = {clients}",
        f"num-sampled-clients = {sampled}",
        f"noise-multiplier = {sigma!r}",
        f"clipping-norm = {clipping!r}",
        "",
        "# Flower's RdpAccountant reads its event's σ as noise / replace-sensitivity (fedplan's docs/ERRATA.md ACC-7).",
        f"# The event that accounts this run (an RDP upper bound: Flower will report ε ≈ {_rdp_epsilon(schedule):.4g};",
        f"# fedplan's tight ε is {privacy['epsilon']:.6g}):",
        "#   PrivacyConfig(target_delta=delta, population_size=population-size,",
        "#       neighboring_relation=NeighboringRelation.<neighboring-relation>,",
        "#       sampling_method=SamplingMethod.<sampling-method>), then compose(GaussianPrivacyEvent(",
        "#       noise_multiplier=noise-multiplier, sample_size=sample-size, population_size=...), count=rounds)",
        "[tool.fedplan.flower-accountant]",
        *_toml_table(event),
        "",
        "[tool.fedplan.privacy]",
        *_toml_table(privacy),
        "",
    ]
    if "library_accountant" in schedule.metadata:
        lines += ["[tool.fedplan.library-accountant]", *_toml_table(schedule.metadata["library_accountant"]), ""]
    return "\n".join(lines)


def _toml_table(values: dict) -> list[str]:
    return [f"{name} = {_toml_value(value)}" for name, value in values.items() if value is not None]


def _toml_value(value) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def render_tf_privacy(schedule: Schedule) -> str:
    """The arguments of TF-Privacy's ``compute_dp_sgd_privacy_statement`` as a Python dict."""
    privacy = check(schedule, "tf-privacy")
    examples = privacy["dataset_size"]
    (q, sigma, steps), = schedule.segments()
    batch = _batch_size(schedule.change_points[0][1], examples)
    epochs = epochs_for_steps(steps, batch, examples)
    arguments = {"number_of_examples": examples, "batch_size": batch, "num_epochs": epochs,
                 "noise_multiplier": sigma, "delta": privacy["delta"], "used_microbatching": False,
                 "max_examples_per_user": None}
    lines = _header(schedule, "TF-Privacy (compute_dp_sgd_privacy_statement)") + [
        "# TF-Privacy accounts ceil(num_epochs / q) steps at q = batch_size /",
        f"# number_of_examples = {batch / examples!r} (fedplan: {q!r}), Poisson sampling, add/remove-one.",
        f"# Its RDP statement prints ε ≈ {_rdp_epsilon(schedule):.4g} for these arguments (\"assuming Poisson "
        f"sampling\"); fedplan's tight PLD ε is {privacy['epsilon']:.6g}: both bound the same run from above.",
        "# used_microbatching=False: one example per microbatch (num_microbatches = batch_size); with larger",
        "# microbatches TF-Privacy doubles the sensitivity, and this σ gives the ε of noise_multiplier / 2.",
        "#   from tensorflow_privacy.privacy.analysis.compute_dp_sgd_privacy_lib import \\",
        "#       compute_dp_sgd_privacy_statement",
        "#   print(compute_dp_sgd_privacy_statement(**STATEMENT_ARGUMENTS))",
        "",
        f"STATEMENT_ARGUMENTS = {_literal(arguments)}",
        "",
        f"PRIVACY = {_literal(privacy)}",
        "",
    ]
    return "\n".join(lines)


def _rdp_epsilon(schedule: Schedule) -> float:
    """The RDP ε of the schedule at its δ (what the libraries' RDP accountants report for it)."""
    from fedplan.bounds import accounting

    return accounting.get_epsilon(delta=schedule.privacy["delta"], segments=schedule.segments(), accountant="rdp",
                                  **schedule.accounting_options()).epsilon


def epochs_for_steps(steps: int, batch_size: int, examples: int) -> float:
    """The num_epochs for which TF-Privacy counts exactly ``steps`` steps: it composes ceil(num_epochs / q) steps
    with q = batch_size / number_of_examples (compute_dp_sgd_privacy_lib._compute_dp_sgd_example_privacy)."""
    rate = batch_size / examples
    epochs = steps * rate
    while math.ceil(epochs / rate) > steps:
        epochs = math.nextafter(epochs, 0.0)
    while math.ceil(epochs / rate) < steps:
        epochs = math.nextafter(epochs, math.inf)
    return epochs


RENDERERS = {"opacus": render_opacus, "flower": render_flower, "tf-privacy": render_tf_privacy}
