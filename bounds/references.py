"""The papers fedplan encodes, with identifiers a reader can look up (arXiv id, DOI, venue).

Docstrings and results cite a paper by key and place (``cite("vandijk", "Theorem 3", "L191")``): the line numbers
refer to the paper's text in ``../shared/papers/<text>`` (the repository's research copy); the arXiv id or DOI is what
a user of the package follows. ``python -m fedplan.bounds.references`` prints the list in docs/REFERENCES.md
(tests/bounds/test_references.py keeps the two the same).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Reference:
    """One paper: who, what, where, and the identifiers to find it."""

    key: str
    short: str
    authors: str
    title: str
    venue: str
    year: int
    arxiv: str | None
    doi: str | None
    url: str
    text: str
    encodes: str

    @property
    def identifier(self) -> str:
        """The arXiv id, else the DOI, else the URL: the one thing to type into a search box."""
        if self.arxiv:
            return f"arXiv:{self.arxiv}"
        return f"doi:{self.doi}" if self.doi else self.url


PAPERS: dict[str, Reference] = {reference.key: reference for reference in (
    Reference(
        key="vandijk", short="van Dijk et al. 2020",
        authors="Marten van Dijk, Nhung V. Nguyen, Toan N. Nguyen, Lam M. Nguyen, Quoc Tran-Dinh, Phuong Ha Nguyen",
        title="Asynchronous Federated Learning with Reduced Number of Rounds and with Differential Privacy from Less "
              "Aggregated Gaussian Noise",
        venue="arXiv preprint", year=2020, arxiv="2007.09208", doi=None, url="https://arxiv.org/abs/2007.09208",
        text="vandijk_async_fl_dp.txt",
        encodes="bounds/vandijk.py, bounds/vandijk_sequences.py, planner/vandijk.py (r0(σ), Theorems 3–5, increasing "
                "sample sizes)"),
    Reference(
        key="xu", short="Xu, Zhang & Wang 2020",
        authors="Jie Xu, Wei Zhang, Fei Wang",
        title="A(DP)²SGD: Asynchronous Decentralized Parallel Stochastic Gradient Descent with Differential Privacy",
        venue="arXiv preprint; IEEE Transactions on Pattern Analysis and Machine Intelligence", year=2020,
        arxiv="2008.09246", doi="10.1109/TPAMI.2021.3107796", url="https://arxiv.org/abs/2008.09246",
        text="xu_adp2sgd.txt",
        encodes="bounds/adp2sgd.py, planner/adp2sgd.py (Theorems 1–2, Propositions 1–2)"),
    Reference(
        key="li", short="Li, Yang, Ren & Zhao 2019",
        authors="Yanan Li, Shusen Yang, Xuebin Ren, Cong Zhao",
        title="Asynchronous Federated Learning with Differential Privacy for Edge Intelligence",
        venue="arXiv preprint", year=2019, arxiv="1912.07902", doi=None, url="https://arxiv.org/abs/1912.07902",
        text="li_mapa_async_fl_dp.txt",
        encodes="bounds/mapa.py, planner/mapa.py (Theorems 2–4, the MAPA stages)"),
    Reference(
        key="zhou", short="Zhou et al. 2021",
        authors="Yipeng Zhou, Xuezheng Liu, Yao Fu, Di Wu, Chao Li, Shui Yu",
        title="Optimizing the Numbers of Queries and Replies in Federated Learning with Differential Privacy",
        venue="arXiv preprint (a later version: IEEE Transactions on Dependable and Secure Computing 20(6), 2023)",
        year=2021, arxiv="2107.01895", doi=None, url="https://arxiv.org/abs/2107.01895",
        text="zhou_queries_replies_fl_dp.txt",
        encodes="bounds/fedsgd_dpc.py, planner/fedsgd_dpc.py (optimal T and b, Table I)"),
    Reference(
        key="damaskinos", short="Damaskinos 2020 (thesis)",
        authors="Georgios Damaskinos",
        title="Private and Secure Distributed Learning",
        venue="PhD thesis n° 7096, EPFL", year=2020, arxiv=None, doi="10.5075/epfl-thesis-7096",
        url="https://doi.org/10.5075/epfl-thesis-7096",
        text="damaskinos_thesis.txt",
        encodes="bounds/dpscd.py, bounds/kardam.py, bounds/byzantine.py, planner/damaskinos.py, planner/dpscd.py "
                "(DP-SCD, Kardam, Byzantine tolerance)"),
    Reference(
        key="dpscd", short="Damaskinos et al. 2021",
        authors="Georgios Damaskinos, Celestine Mendler-Dünner, Rachid Guerraoui, Nikolaos Papandreou, Thomas Parnell",
        title="Differentially Private Stochastic Coordinate Descent",
        venue="AAAI 2021", year=2021, arxiv="2006.07272", doi=None, url="https://arxiv.org/abs/2006.07272",
        text="damaskinos_thesis.txt",
        encodes="the DP-SCD chapter of the thesis, published separately (bounds/dpscd.py)"),
    Reference(
        key="kardam", short="Damaskinos et al. 2018",
        authors="Georgios Damaskinos, El Mahdi El Mhamdi, Rachid Guerraoui, Rhicheek Patra, Mahsa Taziki",
        title="Asynchronous Byzantine Machine Learning (the case of SGD)",
        venue="ICML 2018, PMLR 80:1145–1154", year=2018, arxiv=None, doi=None,
        url="https://proceedings.mlr.press/v80/damaskinos18a.html",
        text="damaskinos_thesis.txt",
        encodes="the Kardam chapter of the thesis, published separately (bounds/kardam.py)"),
)}


def cite(paper: str, where: str = "", line: str = "") -> str:
    """``"van Dijk et al. 2020 (arXiv:2007.09208), Theorem 3, L191"``: a paper by key, the place in it, and the line
    of its text in ../shared/papers. Raises KeyError for an unknown key."""
    reference = PAPERS[paper]
    return ", ".join(part for part in (f"{reference.short} ({reference.identifier})", where, line) if part)


def markdown() -> str:
    """docs/REFERENCES.md."""
    lines = ["# References", "",
             "The papers fedplan encodes. Results and docstrings cite them by the short name and the identifier below,",
             "the theorem or equation, and the line (e.g. `L191`) of the paper's text in the research copy of the",
             "papers kept beside the repository (`shared/papers/`, not part of the package).",
             "Generated by `python -m fedplan.bounds.references > docs/REFERENCES.md`.", "",
             "| key | reference | identifier | text in shared/papers | encoded in |", "|---|---|---|---|---|"]
    for reference in PAPERS.values():
        links = [f"[arXiv:{reference.arxiv}](https://arxiv.org/abs/{reference.arxiv})"] if reference.arxiv else []
        if reference.doi:
            links.append(f"[doi:{reference.doi}](https://doi.org/{reference.doi})")
        if not links:
            links.append(f"<{reference.url}>")
        lines.append(f"| `{reference.key}` | {reference.authors}. *{reference.title}*. {reference.venue}, "
                     f"{reference.year}. | {'; '.join(links)} | `{reference.text}` | {reference.encodes} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(markdown(), end="")
