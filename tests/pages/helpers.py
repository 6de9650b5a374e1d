"""Shared by the page tests (streamlit.testing AppTest, headless): where the pages are, a metric by label, and the
message a request gives for bad input (a page must show exactly that with ``st.error``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parent.parent.parent
PAGES = ROOT / "pages"


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
