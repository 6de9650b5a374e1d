"""The app's entry point (:mod:`fedplan.app`): what it does around the pages' runs."""

from __future__ import annotations

import subprocess
import sys
import textwrap

# In a child interpreter: freezing the objects of pytest's own process would keep its garbage for good.
FREEZE_SCRIPT = textwrap.dedent("""
    import gc, sys
    import streamlit as st
    import fedplan.app as app

    class Navigation:
        def __init__(self, importing):
            self.importing = importing
        def run(self):
            if self.importing:
                import colorsys  # a module no earlier import brought in
            raise RuntimeError("the page's run ends with an exception (Streamlit's rerun is one)")

    def freeze_count(importing):
        st.navigation = lambda pages: Navigation(importing)
        try:
            app.run()
        except RuntimeError:
            pass
        return gc.get_freeze_count()

    assert "colorsys" not in sys.modules
    first = freeze_count(importing=False)  # the first run froze what the server had imported
    garbage = [[] for _ in range(1000)]  # young objects: frozen only by a run that imports
    again = freeze_count(importing=False)
    imported = freeze_count(importing=True)
    print(first, again, imported)
""")


def test_a_run_freezes_the_objects_of_what_was_imported_and_only_then():
    completed = subprocess.run([sys.executable, "-c", FREEZE_SCRIPT], capture_output=True, text=True, check=True)
    first, again, imported = map(int, completed.stdout.split())
    assert first > 20_000  # the objects of Streamlit's modules and fedplan's (46 000 here)
    # no module imported: the 1000 young lists stay young (collectable); frozen objects may have died meanwhile
    assert again < first + 1000
    assert imported >= again + 1000  # colorsys imported: the young objects, the 1000 lists among them, frozen
