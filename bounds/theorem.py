"""Provenance of a number that comes from a theorem: its source, its errata and its checked hypotheses.

A theorem's answer is only as good as its hypotheses. Every result of a paper formula carries a
tuple of :class:`Hypothesis` records, each evaluated on the numbers actually used (holds or fails,
with the values), so a violated hypothesis is reported, never hidden: the number is still shown and
:class:`TheoremResult` marks it "no guarantee".
"""

from __future__ import annotations

import dataclasses
import math
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


GUARANTEE = "guarantee"
NO_GUARANTEE = "no guarantee"


@dataclass(frozen=True, kw_only=True)
class TheoremResult:
    """The contract of every theorem-backed result (the base of its frozen dataclass).

    A result carries its value(s) (the subclass's fields: a number even when a hypothesis fails, never
    ``None``), its checked ``hypotheses``, ``source`` (paper with arXiv id or DOI, theorem or equation and
    line: :func:`bounds.references.cite`), ``variant`` (``"paper"``/``"corrected"`` where the function has
    variants, else ``None``) and ``notes`` (the known errata touching the number, by their docs/ERRATA.md
    id). ``valid`` is true when every hypothesis holds; :attr:`guarantee` says ``"guarantee"`` then and
    ``"no guarantee"`` otherwise: a number whose hypotheses fail is shown, but proves nothing.

    ``source``, ``variant`` and ``notes`` are declared here as plain class attributes, not as dataclass
    fields: a subclass declares them as fields in its own order (a base field with a default would force
    every later positional field of every subclass to have a default). Such a field declared without a
    default takes the class default here (``""``, ``None``, ``()``), so declare them after the required
    fields. ``to_dict()`` gives all of them as plain data (each hypothesis a mapping, tuples as lists) with
    ``valid`` and ``guarantee``, for JSON. Strict JSON has no infinity, so an infinite value (Zhou's T* = ∞ without
    a round cap, a critical ε that does not exist) is written as the string ``"inf"`` (``"-inf"``), as
    ``float("inf")`` reads it back; a NaN is a bug and raises.
    """

    hypotheses: tuple[Hypothesis, ...]
    source = ""
    variant = None
    notes = ()

    @property
    def valid(self) -> bool:
        return all_hold(self.hypotheses)

    @property
    def guarantee(self) -> str:
        """``"guarantee"`` when every hypothesis holds, else ``"no guarantee"``."""
        return GUARANTEE if self.valid else NO_GUARANTEE

    def to_dict(self) -> dict:
        return _plain({"source": self.source, "variant": self.variant, "notes": self.notes,
                       **dataclasses.asdict(self), "valid": self.valid, "guarantee": self.guarantee})


def _plain(value):
    """``value`` with every tuple turned into a list and ±∞ into ``"inf"``/``"-inf"``, recursively: what a strict
    JSON round trip gives back."""
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            raise ValueError("a theorem result holds NaN: no number to show")
        return "inf" if value > 0 else "-inf"
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return [_plain(item) for item in value]
    return value
