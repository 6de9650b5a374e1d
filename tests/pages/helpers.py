"""Shared by the page tests (streamlit.testing AppTest, headless): where the pages are, a metric by label, and the
message a request gives for bad input (a page must show exactly that with ``st.error``)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

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


def charts(app: AppTest) -> list[tuple[dict, list[pd.DataFrame]]]:
    """Each Altair/Vega-Lite chart of the page: its spec and the data frames of its layers, in the spec's order."""
    found = []
    for chart in [*app.get("vega_lite_chart"), *app.get("arrow_vega_lite_chart")]:
        spec = json.loads(chart.proto.spec)
        frames = {item.name: pa.ipc.open_stream(item.data.data).read_pandas() for item in chart.proto.datasets}
        found.append((spec, [frames[layer["data"]["name"]] for layer in spec.get("layer", [spec])
                             if "data" in layer and layer["data"].get("name") in frames]))
    return found
