"""Every request class, in the order the command line shows them, and the help line of each group word.

``TASKS`` is what the command line (:mod:`fedplan.planner.cli`), the front door (:mod:`fedplan`) and the
vocabulary test walk; ``GROUPS`` gives the help of each command word that only groups others (``fedplan
calibrate …``). Register a new request class here.
"""

from fedplan.planner.tasks import accounting

TASKS = (*accounting.TASKS,)

GROUPS = {
    ("calibrate",): "solve for one parameter given a target (ε, δ)",
}
