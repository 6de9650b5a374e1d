"""The mathematics of fedplan: pure functions, no I/O, no printing, no global state beyond memoisation.

``bounds`` never imports ``planner``, streamlit or I/O modules (see DESIGN.md).
"""
