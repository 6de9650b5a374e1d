"""fedplan Streamlit app: ``streamlit run app.py``.

The entry point only names the pages; the planner (:mod:`pages/0_Planner.py`) is the home page, and each
other page is one task (accountant, one page per paper).
"""

from __future__ import annotations

import streamlit as st

PAGES = (
    ("pages/0_Planner.py", "Planner"),
    ("pages/1_Accountant.py", "Accountant"),
    ("pages/2_Increasing_sample_sizes.py", "Increasing sample sizes (van Dijk)"),
    ("pages/3_FedSGD_DPC.py", "FedSGD-DPC (Zhou)"),
    ("pages/4_ADP2SGD.py", "A(DP)²SGD (Xu)"),
    ("pages/5_MAPA.py", "MAPA stages (Li)"),
    ("pages/6_Damaskinos.py", "DP-SCD, dampening, Byzantine (Damaskinos)"),
    ("pages/7_Validate.py", "Validate by simulation"),
)

st.navigation([st.Page(path, title=title, default=index == 0) for index, (path, title) in enumerate(PAGES)]).run()
