"""The reference list: every paper has an identifier a reader can look up, and docs/REFERENCES.md is current."""

import re
from pathlib import Path

import pytest

from fedplan.bounds import references

ROOT = Path(__file__).resolve().parents[2]
PAPERS_DIR = ROOT.parent / "shared" / "papers"


def test_docs_list_is_generated_from_the_module():
    assert (ROOT / "docs" / "REFERENCES.md").read_text() == references.markdown()


@pytest.mark.parametrize("key", sorted(references.PAPERS))
def test_every_paper_has_a_well_formed_identifier_and_its_text(key):
    paper = references.PAPERS[key]
    assert paper.arxiv or paper.doi or paper.url.startswith("https://")
    if paper.arxiv:
        assert re.fullmatch(r"\d{4}\.\d{4,5}", paper.arxiv)
    if paper.doi:
        assert re.fullmatch(r"10\.\d{4,9}/\S+", paper.doi)
    if PAPERS_DIR.is_dir() and key not in ("dpscd", "kardam"):  # the research copy beside the repository (CI has
        # it); DP-SCD and Kardam were published separately from the thesis chapters that hold their text
        def words(text):
            return " ".join(text.lower().split())

        assert words(paper.title) in words((PAPERS_DIR / paper.text).read_text()[:5000])


def test_cite_names_the_paper_identifier_place_and_line():
    assert references.cite("vandijk", "Theorem 3", "L191") == \
        "van Dijk et al. 2020 (arXiv:2007.09208), Theorem 3, L191"
    assert references.cite("damaskinos") == "Damaskinos 2020 (thesis) (doi:10.5075/epfl-thesis-7096)"
    with pytest.raises(KeyError):
        references.cite("unknown")
