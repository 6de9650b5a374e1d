"""Backing simulations in numpy (data, models, engines, sweeps). Empty until the simulation issues land."""
