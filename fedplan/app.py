"""The fedplan Streamlit app: ``fedplan app`` (installed) or ``streamlit run app.py`` (a checkout).

This entry point only names the pages; the planner (``app_pages/0_Planner.py``) is the home page and each other
page is one task (accountant, one page per paper, validation by simulation). Page files are found through the
``fedplan.app_pages`` package, so the same entry point serves a checkout and an installed wheel.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

import fedplan.app_pages

PAGES = (
    ("0_Planner.py", "Planner"),
    ("8_DP_SGD_and_federated.py", "DP-SGD and federated (Opacus, Flower)"),
    ("1_Accountant.py", "Accountant"),
    ("2_Increasing_sample_sizes.py", "Increasing sample sizes (van Dijk)"),
    ("3_FedSGD_DPC.py", "FedSGD-DPC (Zhou)"),
    ("4_ADP2SGD.py", "A(DP)²SGD (Xu)"),
    ("5_MAPA.py", "MAPA stages (Li)"),
    ("6_Damaskinos.py", "DP-SCD, dampening, Byzantine (Damaskinos)"),
    ("7_Validate.py", "Validate by simulation"),
)


def page_folder() -> Path:
    """The folder of the page scripts (``app_pages/`` in a checkout, ``fedplan/pages/`` in a wheel)."""
    return Path(fedplan.app_pages.__file__).resolve().parent


def run() -> None:
    """Run the navigation (Streamlit calls the entry script again on every interaction)."""
    folder = page_folder()
    st.navigation([st.Page(folder / name, title=title, default=index == 0)
                   for index, (name, title) in enumerate(PAGES)]).run()


if __name__ == "__main__":
    run()
