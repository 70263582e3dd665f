"""Render Mermaid diagrams in headless Chromium, offline (tests/test_diagram_browser.py).

``scripts/setup-browser.sh`` installs Debian's ``chromium`` and the ``mermaid`` npm package
into ``.browser/`` (git-ignored). One page loads ``mermaid.min.js`` from there over
``file://`` (no network: every networking feature of Chromium is switched off), renders
every diagram with ``mermaid.render`` and writes the outcome into the DOM, which
``--dump-dom`` prints: ``document.title`` is ``OK`` or ``ERROR``, and ``<pre id="result">``
holds one JSON record per diagram (error message, size, text, count of HTML elements that
must never appear). PNGs are then taken one page load per diagram with ``--screenshot``,
the window sized from the first pass.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support import PROJECT

MERMAID_JS = PROJECT / ".browser" / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
#: What keeps Chromium off the network and away from any profile but a fresh one.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--allow-file-access-from-files",
    "--hide-scrollbars",
)
TIMEOUT = 90


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def missing() -> str | None:
    """Why the browser test cannot run here, or None when it can."""
    if chromium() is None:
        return "chromium is not installed (scripts/setup-browser.sh installs it with apt-get as root)"
    if not MERMAID_JS.is_file():
        return f"mermaid is not installed in {MERMAID_JS.parent.parent} (scripts/setup-browser.sh runs npm)"
    return None


@dataclass(frozen=True)
class Rendered:
    """What the page reported for one diagram."""

    ok: bool
    error: str
    width: int
    height: int
    text: str
    forbidden: int  # <img>, <script>, <iframe>, <a> elements inside the rendered SVG


_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>PENDING</title>
<style>body {{ margin: 0; background: #fff; }} .d {{ display: inline-block; padding: 8px; }}</style>
<script src="{mermaid}"></script></head>
<body><div id="out"></div><pre id="result"></pre>
<script id="diagrams" type="application/json">{diagrams}</script>
<script>
(async () => {{
  const only = new URLSearchParams(location.search).get("only");
  const all = JSON.parse(document.getElementById("diagrams").textContent);
  const results = [];
  try {{
    mermaid.initialize({{startOnLoad: false, securityLevel: "strict", flowchart: {{htmlLabels: true, useMaxWidth: false}}}});
  }} catch (e) {{
    document.title = "ERROR:init " + e;
    return;
  }}
  for (let i = 0; i < all.length; i++) {{
    if (only !== null && String(i) !== only) continue;
    try {{
      const r = await mermaid.render("d" + i, all[i]);
      const div = document.createElement("div");
      div.className = "d";
      div.innerHTML = r.svg;
      document.getElementById("out").appendChild(div);
      const svg = div.querySelector("svg");
      const box = svg.getBoundingClientRect();
      results.push({{ok: true, error: "", width: Math.ceil(box.width), height: Math.ceil(box.height),
        text: Array.from(svg.querySelectorAll(".nodeLabel")).map((n) => n.textContent).join("\\n"), forbidden: div.querySelectorAll("img, script, iframe, a, object, embed").length}});
    }} catch (e) {{
      results.push({{ok: false, error: String((e && e.message) || e), width: 0, height: 0, text: "", forbidden: 0}});
    }}
  }}
  if (only !== null) document.getElementById("result").style.display = "none";
  document.getElementById("result").textContent = JSON.stringify(results);
  document.title = results.every((r) => r.ok) ? "OK" : "ERROR";
}})();
</script></body></html>
"""


def _run(args: list[str], profile: Path) -> str:
    cmd = [chromium() or "chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    return done.stdout


def _page(tmp: Path, diagrams: list[str]) -> Path:
    page = tmp / "page.html"
    # JSON inside <script type=application/json>: only "</" could end it early.
    payload = json.dumps(diagrams).replace("</", "<\\/")
    page.write_text(_PAGE.format(mermaid=MERMAID_JS.as_uri(), diagrams=payload), encoding="utf-8")
    return page


def render(diagrams: list[str]) -> tuple[str, list[Rendered]]:
    """Render ``diagrams`` in one page load: ``(document title, one result per diagram)``."""
    with tempfile.TemporaryDirectory(prefix="grove-gitops-browser-") as tmp:
        page = _page(Path(tmp), diagrams)
        dom = _run(["--virtual-time-budget=60000", "--dump-dom", page.as_uri()], Path(tmp) / "profile")
    title = re.search(r"<title>(.*?)</title>", dom, re.S)
    found = re.search(r'<pre id="result"[^>]*>(.*?)</pre>', dom, re.S)
    records: list[dict[str, Any]] = json.loads(html.unescape(found.group(1))) if found and found.group(1) else []
    return (html.unescape(title.group(1)) if title else "NO PAGE"), [Rendered(**r) for r in records]


def screenshot(diagram: str, png: Path, size: Rendered) -> Path:
    """A PNG of one diagram, the window sized to what :func:`render` measured."""
    png.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="grove-gitops-browser-") as tmp:
        page = _page(Path(tmp), [diagram])
        window = f"--window-size={min(size.width + 16, 8000)},{min(size.height + 16, 8000)}"
        _run(["--virtual-time-budget=30000", window, f"--screenshot={png}", f"{page.as_uri()}?only=0"], Path(tmp) / "p")
    return png
