"""Start the Streamlit app and Debian's Chromium, for the browser test and the browser benchmark.

Shared by ``benchmarks/app.py`` and the browser tests (``tests/browser_support.py``), which load this file by its
path: a ``benchmarks`` package installed in the environment would shadow this folder on import. Chromium is
``/usr/bin/chromium``, driven by Playwright; the server is ``streamlit run app.py`` (or any command) headless on a
free local port.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
SERVER_FLAGS = ["--server.headless", "true", "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]

#: The claims table of a finished validation (app_pages/plan_validation.py: a Markdown table with a "claim" column).
CLAIMS_TABLE = '[data-testid="stMarkdown"] table:has(th:text-is("claim"))'

def have_chromium() -> bool:
    return Path(CHROMIUM).exists()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(command: Sequence[str], *, cwd: Path = ROOT, timeout: float = 60.0,
                     extra: Sequence[str] = (), env: Mapping[str, str] | None = None) -> Iterator[str]:
    """Run ``command`` (e.g. ``[python, -m, streamlit, run, app.py]``) headless on a free port until the block
    ends; yields the app's URL once ``/_stcore/health`` answers. ``env`` adds to (or overrides) this process's
    environment for the server. The server is terminated (killed if it lingers)."""
    port = free_port()
    server = subprocess.Popen([*command, *SERVER_FLAGS, "--server.port", str(port), *extra], cwd=cwd,
                              env=None if env is None else {**os.environ, **env},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError(f"streamlit did not start within {timeout:g} s") from None
                time.sleep(0.3)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def launch(playwright):
    """Headless Chromium from Debian's package."""
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS)
