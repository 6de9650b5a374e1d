"""Tables and formulas as Markdown (app_pages/markdown_elements.py): what a cell shows, escaping, long tables in a
scrolling box, and no page left drawing a data grid or KaTeX."""

from __future__ import annotations

import ast
import math

import pandas as pd
from streamlit.testing.v1 import AppTest

from fedplan.app_pages.markdown_elements import (
    MAX_ROWS_SHOWN,
    MAX_ROWS_UNBOXED,
    SCROLL_HEIGHT,
    cell_text,
    table_markdown,
)
from tests.pages.helpers import PAGES, ROOT, tables


def test_cells_show_floats_exactly_and_nothing_for_missing_values():
    assert cell_text(0.1 + 0.2) == "0.30000000000000004" and float(cell_text(1 / 3)) == 1 / 3
    assert (cell_text(None), cell_text(math.nan), cell_text(True), cell_text(16)) == ("", "", "yes", "16")
    assert (cell_text(8.0), cell_text(2.0**60), cell_text(-0.5)) == ("8", "1.152921504606847e+18", "-0.5")
    assert cell_text(2.5e-8, lambda value: f"{value:.2g}") == "2.5e-08"


def test_markup_in_a_cell_is_shown_as_typed():
    frame = pd.DataFrame({"rule | name": ["a|b", "$x$ *y* _z_", "line\nbreak"], "max f": [1, None, 3]})
    text = table_markdown(frame)
    assert text.split("\n")[:2] == [r"| rule \| name | max f |", "| --- | ---: |"]
    assert r"\$x\$ \*y\* \_z\_" in text and "line break" in text


def _table_page(rows: int) -> None:
    import pandas as pd

    from fedplan.app_pages.markdown_elements import show_table
    show_table(pd.DataFrame({"round": range(rows), "σ": [1.25] * rows, "holds": [True] * rows}))


def test_a_table_reads_back_and_a_long_one_scrolls_in_a_box():
    for rows, boxed in ((MAX_ROWS_UNBOXED, False), (MAX_ROWS_UNBOXED + 1, True), (MAX_ROWS_SHOWN + 1, True)):
        app = AppTest.from_function(_table_page, args=(rows,)).run()
        assert not app.exception
        [table] = tables(app)
        shown = min(rows, MAX_ROWS_SHOWN)
        assert list(table.columns) == ["round", "σ", "holds"] and len(table) == shown
        assert list(table.iloc[-1]) == [str(shown - 1), "1.25", "yes"]
        assert [caption.value for caption in app.caption] == (
            [f"The first {MAX_ROWS_SHOWN} of {rows} rows; the downloads hold every row."] if rows > shown else [])
        heights = [block.proto.height_config.pixel_height for block in app.main.children.values()
                   if block.type == "flex_container"]
        assert heights == ([SCROLL_HEIGHT] if boxed else [])


def _called_attributes(path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.func.attr for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)}


def test_no_page_draws_a_data_grid_or_katex():
    """Both load a bundle of their own in the browser (the module's measurements): tables and formulas go through
    app_pages/markdown_elements.py. Checked in the source, so that branches a page test does not reach count too."""
    sources = [ROOT / "app.py", ROOT / "fedplan" / "app.py", *sorted(PAGES.glob("*.py"))]
    assert len(sources) > 10
    drawing = {path.name: _called_attributes(path) & {"dataframe", "data_editor", "latex", "table"}
               for path in sources}
    assert not any(drawing.values()), drawing


def _formula_page() -> None:
    from fedplan.app_pages.markdown_elements import show_formula
    show_formula("T*(b) = √(γ² + A₁/A₂) − γ,  b*(T) = √(C₁/C₂) / T", "Eq. 6, L322")


def test_a_formula_is_text_with_its_source_and_no_markup():
    app = AppTest.from_function(_formula_page).run()
    assert not app.exception and not app.latex
    formula = r"T\*\(b\) = √\(γ² \+ A₁/A₂\) − γ," + "\u2003" + r"b\*\(T\) = √\(C₁/C₂\) / T"
    assert [element.value for element in app.markdown] == [formula + "\u2003" + r"(Eq\. 6, L322)"]


def test_no_page_relies_on_magic():
    """``runner.magicEnabled`` is off (.streamlit/config.toml, planner/cli.py): a bare expression in a page would no
    longer be drawn. Streamlit's magic adds only its import to every script of the app."""
    from streamlit.runtime.scriptrunner import magic

    for path in [ROOT / "app.py", ROOT / "fedplan" / "app.py", *sorted(PAGES.glob("*.py"))]:
        source = path.read_text()
        rewritten = ast.dump(magic.add_magic(source, str(path)))
        assert rewritten.count("Call(") == ast.dump(ast.parse(source)).count("Call("), path.name
