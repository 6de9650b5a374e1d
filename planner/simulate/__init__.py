"""Backing simulations in numpy: data, models, an event engine, the papers' algorithms and their ledgers.

Modules (each small and single-purpose):

* :mod:`~planner.simulate.data`: data sources (synthetic, scikit-learn, LIBSVM), train/test split, partitions;
* :mod:`~planner.simulate.models`: logistic / softmax / ridge with per-example clipping and the optimum w*;
* :mod:`~planner.simulate.problem`: a data set split over clients with its model (what engines consume);
* :mod:`~planner.simulate.engine`: the event queue and virtual clock, duration models, the delay log;
* :mod:`~planner.simulate.records`: tidy per-round records, the privacy ledger, :class:`SimulationResult`;
* :mod:`~planner.simulate.vandijk`, :mod:`~planner.simulate.fedsgd_dpc`, :mod:`~planner.simulate.fedbuff`:
  the algorithms; :mod:`~planner.simulate.presets`: the papers' experiments.

A new algorithm plugs in by taking a :class:`~planner.simulate.problem.Problem`, drawing its timing from
:class:`~planner.simulate.engine.Durations` streams (seeded by :func:`~planner.simulate.engine.spawn_generators`),
ordering events with :class:`~planner.simulate.engine.EventQueue`, writing rows through
:class:`~planner.simulate.records.RoundRecorder`, raising :class:`~planner.simulate.records.Diverged` when the
model stops being finite, and accounting its releases with :func:`~planner.simulate.records.gaussian_ledger`.
"""
