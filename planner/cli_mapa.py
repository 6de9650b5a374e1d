"""``fedplan mapa …``: Li et al.'s MAPA schedule, Theorem 1/3 sensitivity and noise, Theorem 2/4 bounds, totals.

Defaults are the paper's experimental settings (li L415, L494): ε = 0.1, b = 12, σ = 30, L = 10, δ = 1e-3,
θ = 0.5, K = τ_max = 5, and the paper's noise model (E‖η‖² = 2λ²; ``--noise-model corrected --model-dim N``
for the N(N+1)λ² of the private mechanism).

    fedplan mapa schedule --iterations 25000 --initial-gap 1 --json
    fedplan mapa schedule --iterations 25000 --initial-gap 100 --out mapa.csv
    fedplan mapa sensitivity --delta 1e-3
    fedplan mapa bound theorem4 --iterations 1000 --initial-gap 1 --delta-b 80.555556
    fedplan mapa privacy --iterations 25000
"""

from __future__ import annotations

import argparse

from fedplan.planner.export import FORMATS

PAPER_DEFAULTS = {"epsilon": 0.1, "batch_size": 12, "sigma": 30.0, "smoothness": 10.0, "delta": 1e-3, "theta": 0.5,
                  "max_staleness": 5, "num_edges": 5}


def _add_common(parser: argparse.ArgumentParser, *names: str) -> None:
    options = {
        "epsilon": (("--epsilon",), dict(type=float, nargs="+", help="per-iteration ε (one, or one per edge)")),
        "batch_size": (("--batch-size", "-b"), dict(type=int, help="mini-batch size b")),
        "sigma": (("--sigma",), dict(type=float, help="per-sample gradient std σ (Assumption 1, Eq. (3))")),
        "smoothness": (("--smoothness", "-L"), dict(type=float, help="Lipschitz constant L of the gradient")),
        "delta": (("--delta",), dict(type=float, help="Theorem 3 failure probability δ")),
        "theta": (("--theta",), dict(type=float, help="sensitivity reduction ratio θ in (0, 1)")),
        "max_staleness": (("--max-staleness", "--tau"), dict(type=int, help="maximal staleness τ_max")),
        "num_edges": (("--num-edges", "-K"), dict(type=int, help="number of edge servers K")),
    }
    for name in names:
        flags, extra = options[name]
        default = PAPER_DEFAULTS[name]
        parser.add_argument(*flags, dest=name, default=[default] if name == "epsilon" else default,
                            **{**extra, "help": f"{extra['help']} (default {default:g})"})


def _add_noise_model(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--noise-model", choices=("paper", "corrected"), default="paper",
                        help="paper: E||eta||^2 = 2 lambda^2 (li L744, default); corrected: N(N+1) lambda^2")
    parser.add_argument("--model-dim", type=int, help="model dimension N (needed by --noise-model corrected)")


def add_parser(commands) -> None:
    """Register ``mapa schedule|sensitivity|bound|privacy`` on the top-level subparsers."""
    paper = commands.add_parser("mapa", help="Li et al.: MAPA stage schedule, AUDP sensitivity and bounds")
    which = paper.add_subparsers(dest="mapa_command", required=True, parser_class=type(paper))

    schedule = which.add_parser("schedule", help="MAPA stages (P, step size, length, sensitivity) until T is spent")
    _add_common(schedule, *PAPER_DEFAULTS)
    schedule.add_argument("--iterations", "-T", type=int, required=True, help="global iteration budget T")
    schedule.add_argument("--initial-gap", "--F0", type=float, dest="initial_gap", required=True,
                          help="F0 = f(x_1) - f(x*) (never given in the paper; e.g. f(x_1) for a loss >= 0)")
    _add_noise_model(schedule)
    start = schedule.add_mutually_exclusive_group()
    start.add_argument("--initial-sensitivity", type=float, help="ΔS_0 instead of Theorem 3's")
    start.add_argument("--initial-clip", type=float, help="per-sample clip C_0 instead (ΔS_0 = 2 C_0 / b, li L442)")
    schedule.add_argument("--update-rule", choices=("theta", "theory"), default="theta",
                          help="theta: ΔS <- θΔS (Alg. 1, default); theory: ΔS <- 2G'/b (L320)")
    schedule.add_argument("--p-reference", choices=("current", "initial"), default="current",
                          help="ΔS in Eq. (16): current stage (default) or ΔS_0 (Table 2 literal)")
    schedule.add_argument("--delta-slack", type=float, default=1e-5, help="δ' of advanced composition")
    schedule.add_argument("--out", metavar="FILE", help=f"also write the schedule ({', '.join(FORMATS)})")
    schedule.add_argument("--json", action="store_true", help="print one JSON object")

    sensitivity = which.add_parser("sensitivity", help="ΔS by Theorem 3 (or 1), its inverse δ(ΔS), noise and Δ_b")
    _add_common(sensitivity, "epsilon", "batch_size", "sigma", "delta")
    given = sensitivity.add_mutually_exclusive_group()
    given.add_argument("--sensitivity", type=float, help="a ΔS: report Theorem 3's δ for it (inverse)")
    given.add_argument("--gradient-bound", type=float, help="G: ΔS = 2G/b by Theorem 1 instead")
    _add_noise_model(sensitivity)
    sensitivity.add_argument("--json", action="store_true", help="print one JSON object")

    bound = which.add_parser("bound", help="Theorem 2 (AUDP, convex) or Theorem 4 (constant step) bound")
    theorems = bound.add_subparsers(dest="theorem", required=True, parser_class=type(paper))
    for name, text in (("theorem2", "(1/T) Σ E f(x_t) - f* with the Eq. (10) step"),
                       ("theorem4", "(1/T) Σ E ||grad f(x_t)||^2 with a constant step")):
        sub = theorems.add_parser(name, help=text)
        _add_common(sub, "epsilon", "batch_size", "sigma", "smoothness", "max_staleness")
        sub.add_argument("--iterations", "-T", type=int, required=True, help="iterations T")
        sub.add_argument("--delta-b", type=float, help="Δ_b = σ²/b + E||η||² (default: from --gradient-bound)")
        sub.add_argument("--gradient-bound", type=float, help="G: Δ_b from ΔS = 2G/b and ε when --delta-b is absent")
        _add_noise_model(sub)
        sub.add_argument("--json", action="store_true", help="print one JSON object")
    theorems.choices["theorem2"].add_argument("--radius", type=float, required=True, help="R >= ||x_t - x*||")
    theorems.choices["theorem2"].add_argument("--variant", choices=("corrected", "paper", "paper_log"),
                                              default="corrected")
    theorems.choices["theorem4"].add_argument("--initial-gap", "--F0", type=float, dest="initial_gap", required=True,
                                              help="F0 = f(x_1) - f(x*)")
    theorems.choices["theorem4"].add_argument("--learning-rate", type=float,
                                              help="constant γ (default 1/(2L(τ_max+1)), Eq. (13))")

    privacy = which.add_parser("privacy", help="total ε of T uploads: basic, per edge, advanced composition")
    _add_common(privacy, "epsilon", "num_edges")
    privacy.add_argument("--iterations", "-T", type=int, required=True, help="iterations (uploads) T")
    privacy.add_argument("--delta-slack", type=float, default=1e-5, help="δ' of advanced composition")
    privacy.add_argument("--json", action="store_true", help="print one JSON object")
    paper.set_defaults(handler=run)


def _epsilon(args: argparse.Namespace):
    return args.epsilon[0] if len(args.epsilon) == 1 else list(args.epsilon)


def _schedule(args: argparse.Namespace) -> dict:
    from fedplan.planner.export import format_for_path, write_schedule
    from fedplan.planner.mapa import plan_mapa

    if args.out is not None:
        format_for_path(args.out)
    initial = args.initial_sensitivity
    if args.initial_clip is not None:
        from fedplan.bounds.mapa import sensitivity_from_gradient_bound

        initial = sensitivity_from_gradient_bound(gradient_bound=args.initial_clip, batch_size=args.batch_size)
    plan = plan_mapa(epsilon=_epsilon(args), delta=args.delta, sigma=args.sigma, batch_size=args.batch_size,
                     smoothness=args.smoothness, max_staleness=args.max_staleness, theta=args.theta,
                     iterations=args.iterations, initial_gap=args.initial_gap, num_edges=args.num_edges,
                     noise_model=args.noise_model, model_dim=args.model_dim, initial_sensitivity=initial,
                     update_rule=args.update_rule, p_reference=args.p_reference, delta_slack=args.delta_slack)
    summary = plan.summary()
    if args.out is not None:
        path = write_schedule(plan.schedule(), args.out, cumulative_epsilon=plan.cumulative_epsilon())
        summary = {"out": str(path), **summary}
        summary["statement"] = f"wrote {plan.result.iterations} iterations to {path}. " + summary["statement"]
    if not args.json:
        summary["stages"] = {row["index"]: (f"t = {row['start']}..{row['end']} ({row['iterations']} of T_s = "
                                            f"{row['length']}), P = {row['P']:.6g}, step {row['learning_rate']:.6g}, "
                                            f"sensitivity {row['sensitivity']:.6g}, clip {row['clipping_norm']:.6g}")
                             for row in summary["stages"]}
        del summary["inputs"]
    return summary


def _sensitivity(args: argparse.Namespace) -> dict:
    from fedplan.bounds import mapa

    if args.sensitivity is not None:
        result = mapa.theorem3_failure_probability(sigma=args.sigma, batch_size=args.batch_size,
                                                   sensitivity=args.sensitivity)
        value, how = result.sensitivity, "given"
    elif args.gradient_bound is not None:
        result = None
        value = mapa.sensitivity_from_gradient_bound(gradient_bound=args.gradient_bound, batch_size=args.batch_size)
        how = "Theorem 1: 2G/b (li L189)"
    else:
        result = mapa.theorem3_sensitivity(sigma=args.sigma, batch_size=args.batch_size, delta=args.delta)
        value, how = result.sensitivity, "Theorem 3: admissible root of Eq. (12) (li L279)"
    epsilon = min(args.epsilon)
    noise = mapa.laplace_noise(sensitivity=value, epsilon=epsilon, noise_model=args.noise_model,
                               model_dim=args.model_dim)
    failure = None if result is None else result.failure_probability
    output = {"sensitivity": value, "method": how, "failure_probability": failure,
              "clipping_norm": mapa.clipping_norm_from_sensitivity(sensitivity=value, batch_size=args.batch_size),
              "noise_scale": noise.scale, "noise_second_moment": noise.second_moment, "noise_model": args.noise_model,
              "delta_b": args.sigma**2 / args.batch_size + noise.second_moment, "epsilon": epsilon,
              "mechanism": mapa.MECHANISM, "neighboring_relation": mapa.NEIGHBORING_RELATION,
              "hypotheses": [] if result is None else [h.to_dict() for h in result.hypotheses]}
    failure_text = ("" if result is None else " Theorem 3: " + (
        f"the sensitivity fails with probability {failure:.6g} (Chebyshev over the samples, not a DP delta)."
        if failure is not None else "4 sigma^2/(b^2 Delta S^2) >= 1, Chebyshev bounds nothing: no delta."))
    output["statement"] = (f"Delta S = {value:.6g} ({how}); per-sample clip C = b Delta S / 2 = "
                           f"{output['clipping_norm']:.6g}; noise scale lambda = Delta S / epsilon = {noise.scale:.6g} "
                           f"makes each upload pure {epsilon:g}-DP for replace-one neighbouring mini-batches."
                           + failure_text)
    return output


def _bound(args: argparse.Namespace) -> dict:
    from fedplan.bounds import mapa

    epsilon = min(args.epsilon)
    delta_b = args.delta_b
    if delta_b is None:
        if args.gradient_bound is None:
            raise ValueError("give --delta-b, or --gradient-bound G to compute it from ΔS = 2G/b, σ, b and ε")
        sensitivity = mapa.sensitivity_from_gradient_bound(gradient_bound=args.gradient_bound,
                                                           batch_size=args.batch_size)
        delta_b = mapa.delta_b(sigma=args.sigma, batch_size=args.batch_size, sensitivity=sensitivity, epsilon=epsilon,
                               noise_model=args.noise_model, model_dim=args.model_dim)
    if args.theorem == "theorem2":
        if args.gradient_bound is None:
            raise ValueError("theorem2 needs --gradient-bound G (||grad f|| <= G, li L225)")
        result = mapa.theorem2_bound(iterations=args.iterations, radius=args.radius, gradient_bound=args.gradient_bound,
                                     smoothness=args.smoothness, max_staleness=args.max_staleness, delta_b=delta_b,
                                     variant=args.variant)
        what = "(1/T) sum E f(x_t) - f(x*)"
    else:
        gamma = args.learning_rate
        if gamma is None:
            gamma = mapa.theorem4_max_learning_rate(smoothness=args.smoothness, max_staleness=args.max_staleness)
        result = mapa.theorem4_bound(iterations=args.iterations, learning_rate=gamma, initial_gap=args.initial_gap,
                                     delta_b=delta_b, smoothness=args.smoothness, max_staleness=args.max_staleness)
        what = "(1/T) sum E ||grad f(x_t)||^2"
    output = {"delta_b": delta_b, **result.to_dict()}
    failed = "; ".join(f"{h.name}: {h.detail}" for h in result.hypotheses if not h.holds)
    output["statement"] = (f"{what} <= {result.value:.6g} ({result.source})" if result.valid
                           else f"no bound: a hypothesis fails ({failed})")
    return output


def _privacy(args: argparse.Namespace) -> dict:
    from fedplan.bounds import mapa
    from fedplan.bounds.accounting import round_up

    totals = mapa.composition_totals(epsilon=_epsilon(args), iterations=args.iterations, num_edges=args.num_edges,
                                     delta_slack=args.delta_slack)
    output = totals.to_dict()
    output["statement"] = (
        f"Each upload is pure epsilon-DP (replace-one mini-batches; the paper's claim is per iteration). Over "
        f"{totals.iterations} iterations: basic composition {round_up(totals.basic_epsilon, 6):g} (any upload "
        f"pattern); per edge with round-robin uploads ({max(totals.uploads_per_edge)}): "
        f"{round_up(totals.per_edge_epsilon, 6):g} (basic), {round_up(totals.advanced_epsilon, 6):g} at delta = "
        f"{totals.advanced_delta:g} (advanced).")
    return output


def run(args: argparse.Namespace) -> dict:
    return {"schedule": _schedule, "sensitivity": _sensitivity, "bound": _bound,
            "privacy": _privacy}[args.mapa_command](args)
