"""Tables and formulas drawn as Markdown, which Streamlit's browser side renders with code it has already loaded
(issue 20).

``st.dataframe`` (a canvas data grid) and ``st.latex`` (KaTeX) each make the browser fetch, parse and run a large
code-split bundle before the page is complete. Measured on this 2-core machine, warm loads in Chromium, 10-12 per
variant, interleaved, median:

* FedSGD-DPC (one 4-row table, two formulas): 1.41 s as it was; 1.27 s with its table as Markdown (1.29 s with no
  table at all); 1.19 s with the formulas as text as well;
* Increasing sample sizes (two formulas): 1.46-1.50 s with KaTeX; 1.37-1.39 s with the formulas as text; 1.44 s
  with them as MathML in Markdown (raw HTML costs its own bundle).

The tables here hold a few rows (hypotheses, phases, stages, rules); a long one scrolls in a box of fixed height, as
the grid did. A float is shown as Python's shortest text that reads back as the same number (a σ or a sample rate
copied from the table is the one computed), unless the caller gives a format for its column.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping

import pandas as pd
import streamlit as st

#: Rows a table shows before it scrolls inside a box of :data:`SCROLL_HEIGHT` pixels.
MAX_ROWS_UNBOXED = 6
SCROLL_HEIGHT = 240
#: Rows a table shows at most (a schedule of one phase per round can have thousands: each is a row of the page's
#: HTML, where the grid drew only those in view); a caption says how many more the downloads hold.
MAX_ROWS_SHOWN = 500
EM_SPACE = "\u2003"
#: Characters Markdown could read as markup (GitHub's tables, Streamlit's $…$ for KaTeX), escaped in a cell.
_MARKUP = re.compile(r"([\\`*_{}\[\]<>()#+\-.!|$~])")


def cell_text(value: object, format_value: Callable[[object], str] | None = None) -> str:
    """``value`` as a table cell shows it (before escaping): an empty cell for None or NaN, yes/no for a bool, a float
    by its shortest text that reads back as the same float."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if format_value is not None:
        return format_value(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):  # a whole number as an int: a count in a column pandas made float by a None
        return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)
    return str(value)


def escaped(text: str) -> str:
    """``text`` for a Markdown table cell: markup characters escaped, on one line."""
    return _MARKUP.sub(r"\\\1", text).replace("\r", " ").replace("\n", " ")


def table_markdown(frame: pd.DataFrame, formats: Mapping[str, Callable[[object], str]] | None = None) -> str:
    """``frame`` (its index left out) as a Markdown table; numeric columns aligned right; ``formats`` gives a column
    a function from value to text."""
    formats = formats or {}
    columns = [str(column) for column in frame.columns]
    numeric = [pd.api.types.is_numeric_dtype(frame[column]) and not pd.api.types.is_bool_dtype(frame[column])
               for column in frame.columns]
    lines = ["| " + " | ".join(escaped(column) for column in columns) + " |",
             "|" + "|".join(" ---: " if right else " --- " for right in numeric) + "|"]
    lines += ["| " + " | ".join(escaped(cell_text(value, formats.get(column))) for column, value in
                                zip(columns, row, strict=True)) + " |"
              for row in frame.itertuples(index=False, name=None)]
    return "\n".join(lines)


def show_table(frame: pd.DataFrame, formats: Mapping[str, Callable[[object], str]] | None = None) -> None:
    """Draw ``frame`` as a Markdown table (the module docstring); more than :data:`MAX_ROWS_UNBOXED` rows scroll in
    a box, and of more than :data:`MAX_ROWS_SHOWN` the first are shown, with a caption saying so."""
    text = table_markdown(frame.head(MAX_ROWS_SHOWN), formats)
    if len(frame) > MAX_ROWS_UNBOXED:
        st.container(height=SCROLL_HEIGHT, border=False).markdown(text)
    else:
        st.markdown(text)
    if len(frame) > MAX_ROWS_SHOWN:
        st.caption(f"The first {MAX_ROWS_SHOWN} of {len(frame)} rows; the downloads hold every row.")


def show_formula(formula: str, source: str) -> None:
    """A formula written in plain text with Unicode symbols (escaped: no character is read as markup; two spaces
    between formulas are kept as an em space) and, after it, where it comes from (paper and line)."""
    st.markdown(f"{escaped(formula).replace('  ', EM_SPACE)}{EM_SPACE}({escaped(source)})")
