"""The task layer: one request class per user action (see :mod:`fedplan.planner.tasks.base`).

The command line, the app's pages and the sweeps all go through these classes. Register a request class in
:mod:`fedplan.planner.tasks.registry` (``TASKS`` and ``GROUPS``); this package ``__init__`` imports nothing, so
that importing one task module never imports them all.
"""
