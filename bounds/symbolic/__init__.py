"""Symbolic derivations (sympy) of the papers' closed forms, one module per paper.

sympy is imported only inside this package. Each module derives closed forms from the inequalities the
paper's proofs state, and the tests check that the hand-written numeric functions in ``bounds`` agree:

* :mod:`bounds.symbolic.algebra` — shared tools (canonical monomials, positive roots, float functions);
* :mod:`bounds.symbolic.vandijk` — van Dijk et al., Theorems 4 and 6;
* :mod:`bounds.symbolic.zhou` — Zhou et al., T*, b*, the regime criterion and the E constants.
"""
