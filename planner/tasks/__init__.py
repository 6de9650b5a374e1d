"""The task layer: one request class per user action (see :mod:`fedplan.planner.tasks.base`).

``TASKS`` lists every request class in the order the command line shows them; ``GROUPS`` gives the help line of
each command word that only groups others (``fedplan calibrate …``). The command line, the app's pages and the
sweeps all go through these classes.
"""

from fedplan.planner.tasks import accounting

TASKS = (*accounting.TASKS,)

GROUPS = {
    ("calibrate",): "solve for one parameter given a target (ε, δ)",
}
