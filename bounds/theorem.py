"""Provenance of a number that comes from a theorem: its source and its checked hypotheses.

A theorem's answer is only as good as its hypotheses. Every result of a paper formula carries a
tuple of :class:`Hypothesis` records, each evaluated on the numbers actually used (holds or fails,
with the values), so a violated hypothesis is reported, never hidden.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

VARIANTS = ("corrected", "paper")


@dataclass(frozen=True)
class Hypothesis:
    """One hypothesis of a theorem, checked on concrete numbers.

    ``name`` is a short formula (e.g. ``"max q_i <= r0/sigma"``), ``detail`` the numbers compared
    and ``source`` the paper line that states it.
    """

    name: str
    holds: bool
    detail: str
    source: str = ""

    def to_dict(self) -> dict:
        return {"name": self.name, "holds": bool(self.holds), "detail": self.detail, "source": self.source}


def hypothesis(name: str, value: float, relation: str, bound: float, source: str = "") -> Hypothesis:
    """Check ``value <relation> bound`` (``relation`` one of ``<``, ``<=``, ``>``, ``>=``) and record it."""
    holds = {"<": value < bound, "<=": value <= bound, ">": value > bound, ">=": value >= bound}[relation]
    return Hypothesis(name, bool(holds), f"{value:.6g} {relation} {bound:.6g}", source)


def all_hold(hypotheses) -> bool:
    return all(item.holds for item in hypotheses)


@dataclass(frozen=True, kw_only=True)
class TheoremResult:
    """What every result of a theorem shares: its checked ``hypotheses`` (the base of its frozen dataclass).

    ``valid`` is true when every hypothesis holds; ``to_dict()`` gives the fields as plain data (each
    hypothesis as a mapping) with ``valid``, for JSON.
    """

    hypotheses: tuple[Hypothesis, ...]

    @property
    def valid(self) -> bool:
        return all_hold(self.hypotheses)

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "valid": self.valid}
