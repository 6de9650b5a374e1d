"""The fedplan Streamlit app: ``fedplan app`` (installed) or ``streamlit run app.py`` (a checkout).

This entry point only names the pages; the planner (``app_pages/0_Planner.py``) is the home page and each other
page is one task (accountant, one page per paper, validation by simulation). Page files are found through the
``fedplan.app_pages`` package, so the same entry point serves a checkout and an installed wheel.
"""

from __future__ import annotations

import gc
import sys
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


#: How many modules the server had imported when :func:`freeze_imported` last froze its objects.
_modules_at_freeze = [0]


def freeze_imported() -> None:
    """Move the objects the server holds to the garbage collector's permanent generation (``gc.freeze``) when a
    module was imported since the last time: the modules' objects live as long as the server, and each full
    collection would scan them again. With Streamlit, pandas, SciPy, dp-accounting and fedplan imported (167 000
    objects) a full collection took 150 ms on an idle core and 60-350 ms beside a browser, on the script thread of
    whichever click triggered it or on the server's event loop; after the freeze it takes 2.5 ms. A forked page
    computation inherits the frozen objects, so its collections neither scan nor copy the server's heap. Freezing
    is O(1); it keeps for good the few cycles of garbage the young generations hold at that moment (no
    ``gc.collect()`` first: that would be the 150 ms pause itself)."""
    if len(sys.modules) != _modules_at_freeze[0]:
        _modules_at_freeze[0] = len(sys.modules)
        gc.freeze()


def run() -> None:
    """Run the navigation (Streamlit calls the entry script again on every interaction); then freeze what the run
    imported (:func:`freeze_imported`)."""
    folder = page_folder()
    try:
        st.navigation([st.Page(folder / name, title=title, default=index == 0)
                       for index, (name, title) in enumerate(PAGES)]).run()
    finally:
        freeze_imported()


if __name__ == "__main__":
    run()
