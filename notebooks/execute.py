"""Re-execute the notebooks in place and store their outputs, each Altair chart as a PNG.

    python notebooks/execute.py                           # all of them, one after another
    python notebooks/execute.py notebooks/mapa.ipynb      # some of them

Besides requirements.txt this needs vl-convert-python, which renders Altair charts without a browser:
`python -m pip install vl-convert-python` (only this script needs it, so requirements.txt does not list it).
Each notebook runs in a fresh kernel from the repository root, as tests/test_notebooks.py runs it, with Altair's
PNG renderer enabled before the first cell: a code host shows a PNG, whereas Altair's default output (HTML that
loads Vega from a CDN, with all the chart's data) shows nothing there and weighs far more. Executing a notebook
in Jupyter brings back the interactive charts. Each PNG is then stored with a palette of 256 colours (Pillow,
which Streamlit brings): a tenth of the bytes, no visible change. A failing cell stops the script with that cell's
error and leaves the stored notebook as it was.
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import io
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
#: Run by the kernel before the notebook's first cell, outside its history (execution counts start at 1).
PNG_CHARTS = "--IPKernelApp.exec_lines=import altair; altair.renderers.enable('png')"


def execute(path: Path) -> nbformat.NotebookNode:
    """The notebook at ``path`` executed top to bottom.

    No timing metadata, and each cell's printed lines in one output however the kernel happened to flush them, so
    that executing an unchanged notebook again stores the same file.
    """
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=600, kernel_name="python3", record_timing=False, coalesce_streams=True,
                   extra_arguments=[PNG_CHARTS], resources={"metadata": {"path": str(ROOT)}}).execute()
    return notebook


def store_with_palette(notebook: nbformat.NotebookNode) -> int:
    """Re-encode every PNG output with a palette of 256 colours; returns how many there were."""
    images = [output["data"] for cell in notebook.cells for output in cell.get("outputs", [])
              if "image/png" in output.get("data", {})]
    for data in images:
        buffer = io.BytesIO()
        image = Image.open(io.BytesIO(base64.b64decode(data["image/png"])))
        image.quantize(colors=256, method=Image.Quantize.FASTOCTREE).save(buffer, "PNG", optimize=True)
        data["image/png"] = base64.b64encode(buffer.getvalue()).decode("ascii")
    return len(images)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebooks/*.ipynb")
    args = parser.parse_args(argv)
    if importlib.util.find_spec("vl_convert") is None:
        print("notebooks/execute.py renders the charts with vl-convert-python: "
              "python -m pip install vl-convert-python", file=sys.stderr)
        return 2
    for path in args.notebooks or sorted((ROOT / "notebooks").glob("*.ipynb")):
        start = time.perf_counter()
        notebook = execute(path)
        charts = store_with_palette(notebook)
        nbformat.write(notebook, path)
        print(f"{path.name}: executed in {time.perf_counter() - start:.0f} s, {charts} PNG, "
              f"{path.stat().st_size / 1000:.0f} kB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
