"""Symbolic derivations (sympy) of the papers' closed forms, one module per paper.

sympy is imported only inside this package. Each module derives closed forms from the inequalities the
paper's proofs state, and the tests check that the hand-written numeric functions in ``bounds`` agree:

* :mod:`bounds.symbolic.algebra` — shared tools (canonical monomials, positive roots, float functions);
* :mod:`bounds.symbolic.vandijk` — van Dijk et al., Theorems 4 and 6;
* :mod:`bounds.symbolic.zhou` — Zhou et al., T*, b*, the regime criterion and the E constants;
* :mod:`bounds.symbolic.xu` — Xu et al. (A(DP)²SGD), Theorem 2's σ↔ε algebra and the utility constants;
* :mod:`bounds.symbolic.li` — Li et al. (AUDP/MAPA), Theorem 3's root, the stage equations, step thresholds;
* :mod:`bounds.symbolic.damaskinos` — Damaskinos thesis, AdaSGD's β, χ, Theorem 5/7 and the ridge constant.
"""
