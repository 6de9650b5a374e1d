"""fedplan Streamlit app from a checkout: ``streamlit run app.py`` (installed: ``fedplan app``).

The navigation lives in :mod:`fedplan.app`, so a checkout and an installed wheel run the same app.
"""

from fedplan.app import run

run()
