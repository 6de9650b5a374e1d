"""The browser benchmark's anchor (``benchmarks/app.py``): Streamlit alone, measured in the same run as the app.

One title, one text box and one Vega-Lite line chart (every page of the app draws at least one), with nothing of
fedplan: its first load and its reruns are the floor Streamlit and Chromium set on this machine at this load, the
number the app's own times are read against.

    streamlit run benchmarks/anchor_app.py
"""

import streamlit as st

st.title("Streamlit anchor")
text = st.text_input("Value", "1")
try:
    scale = float(text)
except ValueError:
    st.error(f"Value must be a number; got {text!r}")
    scale = 1.0
st.vega_lite_chart({"data": {"values": [{"x": x, "y": scale * x * x} for x in range(50)]}, "mark": "line",
                    "encoding": {"x": {"field": "x", "type": "quantitative"},
                                 "y": {"field": "y", "type": "quantitative"}}}, width="stretch")
