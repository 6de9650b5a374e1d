"""Shared by the page tests (streamlit.testing AppTest, headless): where the pages are, a metric by label, and the
message a request gives for bad input (a page must show exactly that with ``st.error``)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from fedplan.app_pages.charts import LAYER_FIELD

ROOT = Path(__file__).resolve().parent.parent.parent
PAGES = ROOT / "app_pages"


def open_page(name: str, timeout: float = 120) -> AppTest:
    return AppTest.from_file(str(PAGES / name), default_timeout=timeout).run()


def metric(app: AppTest, label_start: str) -> str:
    return next(m.value for m in app.metric if m.label.startswith(label_start))


def refusal(request_type, **values) -> str:
    """The ``ValueError`` message of ``request_type(**values)``, or of its ``run()`` if it constructs (the API's
    and the CLI's words)."""
    with pytest.raises(ValueError) as error:
        request_type(**values).run()
    return str(error.value)


def errors(app: AppTest) -> list[str]:
    return [element.value for element in app.error]


def error_under(app: AppTest, label: str) -> str | None:
    """The ``st.error`` drawn right under the widget labelled ``label`` (None if there is none)."""
    def walk(node):
        children = list(getattr(node, "children", {}).values())
        for index, child in enumerate(children):
            if getattr(child, "label", None) == label:
                following = children[index + 1] if index + 1 < len(children) else None
                return following.value if type(following).__name__ == "Error" else None
            found = walk(child)
            if found is not None:
                return found
        return None

    return walk(app._tree)


def capture_downloads(monkeypatch) -> dict[str, Callable[[], str]]:
    """Record the file of every ``st.download_button`` the app draws from now on: file name → a function giving its
    text (for data given as a callable, the deferred download, that function calls it)."""
    files: dict[str, Callable[[], str]] = {}
    add, add_deferred = MediaFileManager.add, MediaFileManager.add_deferred

    def text(data) -> str:
        return data.decode() if isinstance(data, bytes) else data

    def recording_add(self, data, mimetype, coordinates, file_name=None, is_for_static_download=False):
        if file_name is not None:
            files[file_name] = lambda: text(data)
        return add(self, data, mimetype, coordinates, file_name, is_for_static_download)

    def recording_add_deferred(self, data_callable, mimetype, coordinates, file_name=None, **options):
        files[file_name] = lambda: text(data_callable())
        return add_deferred(self, data_callable, mimetype, coordinates, file_name, **options)

    monkeypatch.setattr(MediaFileManager, "add", recording_add)
    monkeypatch.setattr(MediaFileManager, "add_deferred", recording_add_deferred)
    return files


def _layer_rows(main: pd.DataFrame | None, layer: dict, whole: bool) -> pd.DataFrame | None:
    """The rows of the chart's main data a layer draws (app_pages/charts.py: its ``filter`` on the layer field, the
    columns it has), or all of them for a chart without layers; None for a layer drawing none of them."""
    if main is None:
        return None
    marks = [step["filter"] for step in layer.get("transform", [])
             if isinstance(step.get("filter"), dict) and step["filter"].get("field") == LAYER_FIELD]
    if not marks:
        return main if whole else None
    rows = main[main[LAYER_FIELD] == marks[0]["equal"]].drop(columns=LAYER_FIELD)
    return rows.dropna(axis=1, how="all").reset_index(drop=True)


#: What Vega reads in a field name as a path into the row (``a.b``, ``a[0]``, quotes): a field named so is not found
#: and the chart stays empty in the browser (Xu's z, "Access path missing closing quote").
VEGA_PATH_CHARACTERS = set(".[]'\"\\")


def fields(spec) -> set[str]:
    """Every field name a Vega-Lite spec reads (encodings, tooltips, filters)."""
    if isinstance(spec, dict):
        own = {spec["field"]} if isinstance(spec.get("field"), str) else set()
        return own.union(*(fields(value) for value in spec.values()))
    if isinstance(spec, list):
        return set().union(*(fields(value) for value in spec))
    return set()


def charts(app: AppTest) -> list[tuple[dict, list[pd.DataFrame]]]:
    """Each Altair/Vega-Lite chart of the page: its spec and the data frames of its layers, in the spec's order
    (a layer's rows of the chart's main data, or its named data set). Asserts that Vega can read every field name
    of the spec (:data:`VEGA_PATH_CHARACTERS`)."""
    found = []
    for chart in [*app.get("vega_lite_chart"), *app.get("arrow_vega_lite_chart")]:
        spec = json.loads(chart.proto.spec)
        unreadable = [name for name in fields(spec) if VEGA_PATH_CHARACTERS & set(name)]
        assert not unreadable, f"Vega reads these field names as paths into the row: {unreadable}"
        frames = {item.name: pa.ipc.open_stream(item.data.data).read_pandas() for item in chart.proto.datasets}
        main = pa.ipc.open_stream(chart.proto.data.data).read_pandas() if chart.proto.data.data else None
        layers = []
        for layer in spec.get("layer", [spec]):
            named = layer.get("data", {}).get("name") if isinstance(layer.get("data"), dict) else None
            rows = frames[named] if named in frames else _layer_rows(main, layer, whole="layer" not in spec)
            if rows is not None:
                layers.append(rows)
        found.append((spec, layers))
    return found


def tables(app: AppTest) -> list[pd.DataFrame]:
    """Each table of the page (app_pages/markdown_elements.py draws them as Markdown), its cells as the page shows
    them (text, escapes undone), in page order. Asserts that the page draws no ``st.dataframe`` and no ``st.latex``
    (a data grid or KaTeX, whose bundles the browser would load: the module's measurements)."""
    assert not app.dataframe and not app.latex, "a table drawn as a data grid, or a formula with KaTeX"
    found = []
    for element in app.markdown:
        lines = element.value.split("\n")
        if len(lines) < 2 or not lines[0].startswith("| ") or not lines[1].startswith("| ---"):
            continue
        rows = [[unescape(cell) for cell in _cells(line)] for line in lines if not line.startswith("| ---")]
        found.append(pd.DataFrame(rows[1:], columns=rows[0]))
    return found


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row (a pipe escaped as ``\\|`` stays in its cell)."""
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def unescape(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def claims_table(app: AppTest) -> pd.DataFrame | None:
    """The table of a validation's claims (its ``claim`` column; a Markdown table, which wraps the numbers), or None
    when the page shows none."""
    return next((table for table in tables(app) if "claim" in table.columns), None)
