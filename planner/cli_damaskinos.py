"""``fedplan dpscd|staleness|byzantine``: the Damaskinos thesis (DP-SCD σ, AdaSGD dampening, Byzantine capacity).

    fedplan dpscd calibrate --epsilon 0.1 --delta 1e-3 --batch 1000 --examples 347786 --epochs 50
    fedplan dpscd calibrate --epsilon 1 --delta 1e-3 --batch 2000 --examples 347786 --epochs 50 --accountant pld \\
        --clipping-norm 0.1 --out dpscd.json
    fedplan staleness beta --tau-thres 12 --tau 0 6 12 48
    fedplan byzantine max-f --rule bulyan --workers 19
    fedplan byzantine min-n --rule kardam --faults 3
"""

from __future__ import annotations

import argparse

from fedplan.planner.display import integral

ACCOUNTANTS = ("ma128", "pld", "rdp")
RULES = ("krum", "multi-krum", "bulyan", "kardam", "kardam-strict", "averaging")


def add_parser(commands) -> None:
    """Register ``dpscd``, ``staleness`` and ``byzantine`` on the top-level subparsers."""
    dpscd = commands.add_parser("dpscd", help="Damaskinos DP-SCD: noise multiplier for a target (epsilon, delta)")
    which = dpscd.add_subparsers(dest="dpscd_command", required=True, parser_class=type(dpscd))
    calibrate = which.add_parser("calibrate", help="sigma with MA(delta, sigma, L/N, floor(E*N/L)) <= epsilon")
    calibrate.add_argument("--epsilon", type=float, required=True, help="target epsilon")
    calibrate.add_argument("--delta", type=float, required=True, help="target delta (thesis: 1e-3)")
    calibrate.add_argument("--batch", type=float, required=True, help="mini-batch size L")
    calibrate.add_argument("--examples", type=float, required=True, help="number of training examples N")
    calibrate.add_argument("--epochs", type=float, required=True, help="passes over the data E; T = floor(E*N/L)")
    calibrate.add_argument("--accountant", choices=ACCOUNTANTS, default="ma128",
                           help="ma128: the authors' moments accountant (default); pld/rdp: tight")
    calibrate.add_argument("--clipping-norm", type=float, help="update scaling bound C (reports sqrt(2)*C*sigma)")
    calibrate.add_argument("--no-compare", action="store_true", help="skip the other accountant's sigma")
    calibrate.add_argument("--out", metavar="FILE", help="write the schedule (.csv, .json, .yaml)")
    calibrate.add_argument("--json", action="store_true", help="print one JSON object")
    dpscd.set_defaults(handler=run_dpscd)

    staleness = commands.add_parser("staleness", help="AdaSGD/Kardam staleness dampening")
    which = staleness.add_subparsers(dest="staleness_command", required=True, parser_class=type(staleness))
    beta = which.add_parser("beta", help="beta = 2 ln(1 + tau_thres/2)/tau_thres and the dampening it gives")
    beta.add_argument("--tau-thres", type=float, required=True, help="staleness threshold (s-th percentile)")
    beta.add_argument("--tau", type=float, nargs="+", help="staleness values to report Lambda(tau) at")
    beta.add_argument("--mean", type=float, help="mean of the Gaussian staleness law (default tau_thres/2)")
    beta.add_argument("--std", type=float, help="std of the Gaussian staleness law (default tau_thres/6)")
    beta.add_argument("--json", action="store_true", help="print one JSON object")
    staleness.set_defaults(handler=run_staleness)

    byzantine = commands.add_parser("byzantine", help="Byzantine capacity of Krum, Multi-Krum, Bulyan, Kardam")
    which = byzantine.add_subparsers(dest="byzantine_command", required=True, parser_class=type(byzantine))
    max_f = which.add_parser("max-f", help="largest number of Byzantine workers n workers tolerate")
    max_f.add_argument("--rule", choices=RULES, required=True)
    max_f.add_argument("--workers", type=float, required=True, help="number of workers n")
    max_f.add_argument("--json", action="store_true", help="print one JSON object")
    min_n = which.add_parser("min-n", help="smallest number of workers that tolerates f Byzantine ones")
    min_n.add_argument("--rule", choices=RULES, required=True)
    min_n.add_argument("--faults", type=float, required=True, help="number of Byzantine workers f")
    min_n.add_argument("--json", action="store_true", help="print one JSON object")
    byzantine.set_defaults(handler=run_byzantine)


def run_dpscd(args: argparse.Namespace) -> dict:
    from fedplan.planner.dpscd import plan_dpscd  # the accountants load only when this command runs
    from fedplan.planner.export import format_for_path, write_schedule

    if args.out is not None:
        format_for_path(args.out)  # reject a bad extension before calibrating
    plan = plan_dpscd(target_epsilon=args.epsilon, target_delta=args.delta, examples=integral(args.examples),
                      batch_size=integral(args.batch), epochs=args.epochs, accountant=args.accountant,
                      clipping_norm=args.clipping_norm, compare=not args.no_compare)
    summary = plan.summary()
    if args.out is not None:
        path = write_schedule(plan.schedule(), args.out)
        summary = {"out": str(path), **summary, "statement": f"wrote {plan.steps} iterations to {path}. "
                                                              + summary["statement"]}
    return summary


def run_staleness(args: argparse.Namespace) -> dict:
    from fedplan.bounds import kardam

    tau_thres = args.tau_thres
    adasgd = kardam.adasgd_dampening(tau_thres=tau_thres)
    inverse = kardam.Dampening("inverse")
    taus = args.tau if args.tau is not None else [0.0, tau_thres / 2, tau_thres, 4 * tau_thres]
    mean = tau_thres / 2 if args.mean is None else args.mean
    std = tau_thres / 6 if args.std is None else args.std
    pmf = kardam.gaussian_staleness_pmf(mean=mean, std=std)
    tau_max = pmf.size - 1
    half = tau_thres / 2
    return {
        "tau_thres": tau_thres, "beta": adasgd.rate, "crossing_tau": half, "dampening_at_crossing": adasgd(half),
        "inverse_at_crossing": inverse(half),
        "dampening": {f"{tau:g}": adasgd(tau) for tau in taus},
        "inverse_dampening": {f"{tau:g}": inverse(tau) for tau in taus},
        "staleness_law": {"mean": mean, "std": std, "tau_max": tau_max},
        "expected_dampening": {"adasgd": kardam.expected_dampening(dampening=adasgd, probabilities=pmf),
                               "inverse": kardam.expected_dampening(dampening=inverse, probabilities=pmf)},
        "decay_bound": kardam.decay_bound(dampening=adasgd, tau_max=tau_max),
        "max_adaptive_rate": kardam.max_adaptive_rate(dampening=adasgd, tau_max=tau_max),
        "statement": (f"AdaSGD dampening Lambda(tau) = exp(-{adasgd.rate:.6g} tau) meets DynSGD's 1/(tau+1) at "
                      f"tau = {half:g} with weight {adasgd(half):.6g} (Damaskinos L612, L707). Under staleness "
                      f"round(N({mean:g}, {std:g}^2)) clipped to [0, {tau_max}] its mean weight is "
                      f"{kardam.expected_dampening(dampening=adasgd, probabilities=pmf):.4g}; chi = sup tau "
                      f"Lambda(tau) = {kardam.decay_bound(dampening=adasgd, tau_max=tau_max):.4g} (Eq. 5.3)."),
    }


def run_byzantine(args: argparse.Namespace) -> dict:
    from fedplan.bounds import byzantine

    if args.byzantine_command == "max-f":
        result = byzantine.max_byzantine(workers=integral(args.workers), rule=args.rule)
        others = {}
        for rule in byzantine.RULES:
            try:
                others[rule] = byzantine.max_byzantine(workers=result.workers, rule=rule).max_faults
            except ValueError:
                others[rule] = None
        return {**result.to_dict(), "max_f": result.max_faults, "all_rules": others, "statement": result.statement()}
    faults = integral(args.faults)
    workers = byzantine.min_workers(faults=faults, rule=args.rule)
    requirement = byzantine.requirement_text(rule=args.rule)
    return {"rule": args.rule, "faults": faults, "min_workers": workers, "requirement": requirement,
            "source": byzantine.REQUIREMENTS[args.rule][2],
            "statement": f"{args.rule} needs at least n = {workers} workers to tolerate f = {faults} Byzantine "
                         f"workers ({requirement})."}

