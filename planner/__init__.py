"""Planning recipes, schedules, export and the ``fedplan`` command line, on top of :mod:`bounds`."""
