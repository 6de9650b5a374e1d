"""Every request class, in the order the command line shows them, and the help line of each group word.

``TASKS`` is what the command line (:mod:`fedplan.planner.cli`), the front door (:mod:`fedplan`) and the
vocabulary test walk; ``GROUPS`` gives the help of each command word that only groups others (``fedplan
calibrate …``). Register a new request class here.
"""

from fedplan.planner.tasks import (
    accounting,
    adp2sgd,
    damaskinos,
    fedsgd_dpc,
    mapa,
    plan,
    practice,
    simulate,
    simulate_papers,
    sweep,
    validate,
    validate_plan,
    vandijk,
)

TASKS = (*plan.TASKS, *practice.TASKS, *accounting.TASKS, *vandijk.TASKS, *fedsgd_dpc.TASKS, *adp2sgd.TASKS,
         *mapa.TASKS,
         *damaskinos.TASKS, *simulate.TASKS,
         *simulate_papers.TASKS, *validate.TASKS, *validate_plan.TASKS, *sweep.TASKS)

GROUPS = {
    ("calibrate",): "solve for one parameter given a target (ε, δ)",
    ("simulate",): "backing simulation of an algorithm (event engine, DP ledger)",
    ("validate",): "run a plan on several seeds and check its claims",
    ("vandijk",): "van Dijk et al.: increasing sample sizes, r0(σ), K-/K+ planning",
    ("fedsgd-dpc",): "Zhou et al.: optimal numbers of queries T* and replies b*",
    ("adp2sgd",): "Xu et al. A(DP)2SGD: Theorem 2 noise vs ε, its floor, the tight accountant, schedule export",
    ("mapa",): "Li et al. MAPA: stage schedule, AUDP sensitivity and noise, bounds, privacy totals",
    ("mapa", "bound"): "Theorem 2 (AUDP, convex) or Theorem 4 (constant step) bound",
    ("dpscd",): "Damaskinos DP-SCD: noise multiplier for a target (ε, δ)",
    ("staleness",): "AdaSGD/Kardam staleness dampening",
    ("byzantine",): "Byzantine capacity of Krum, Multi-Krum, Bulyan, Kardam",
}
