"""The report as a reader's browser sees it: headless Chromium driven over the DevTools protocol.

:func:`inspect_page` opens a page at a given width with the network switched off (``Network.
emulateNetworkConditions`` offline) and returns what a test or the README needs: every request other than
the page itself and ``data:`` URIs (there should be none), console errors and uncaught exceptions, the page
height in pixels and in screens, the sections, rendered plotly figures, and each image's natural and
rendered width against its container (clipped when the rendered box is wider than the container).

``python -m analysis.pagecheck reports/report.html`` prints it as JSON; ``--pdf out.pdf`` prints the page
to PDF instead (:func:`print_pdf`, ``make report-pdf``).  Needs Chromium (``make tools``
installs Debian's) and ``websocket-client`` (environment.yml).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

#: measured in the page once plotly's promise has settled (or at once when there is none)
_MEASURE = r"""
(async () => {
  if (window.plotlyReady) { try { await window.plotlyReady; } catch (e) {} }
  await new Promise(r => setTimeout(r, 300));
  const imgs = [...document.images].map(i => {
    const box = i.parentElement.getBoundingClientRect();
    const r = i.getBoundingClientRect();
    return {natural: i.naturalWidth, rendered: Math.round(r.width), container: Math.round(box.width),
            loaded: i.complete && i.naturalWidth > 0};
  });
  const wide = [...document.querySelectorAll('section')].filter(s => s.scrollWidth > s.clientWidth + 1).length;
  return JSON.stringify({
    height: document.documentElement.scrollHeight, width: document.documentElement.scrollWidth,
    viewport: window.innerHeight, sections: [...document.querySelectorAll('section')].map(s => s.id),
    section_heights: Object.fromEntries([...document.querySelectorAll('section')].map(
      s => [s.id, Math.round(s.getBoundingClientRect().height)])),
    section_tops: Object.fromEntries([...document.querySelectorAll('section')].map(
      s => [s.id, Math.round(s.getBoundingClientRect().top + window.scrollY)])),
    tallest_blocks: [...document.querySelectorAll('.output_area, .text_cell_render')]
      .map(e => [Math.round(e.getBoundingClientRect().height), (e.closest('section') || {}).id,
                 e.querySelector('img') ? 'image' : e.querySelector('.report-plotly') ? 'plotly'
                 : e.querySelector('table') ? 'table' : e.querySelector('details') ? 'details' : 'text'])
      .sort((a, b) => b[0] - a[0]).slice(0, 25),
    first_section: (document.querySelector('section') || {}).id || null,
    plotly: document.querySelectorAll('.js-plotly-plot').length,
    plotly_divs: document.querySelectorAll('.report-plotly').length,
    images: imgs, sections_wider_than_page: wide,
    broken_links: [...document.querySelectorAll('a[href^="#"]')].map(a => a.getAttribute('href').slice(1))
      .filter(id => id && !document.getElementById(id)),
    title: document.title});
})()
"""


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class _Cdp:
    def __init__(self, ws_url: str):
        import websocket
        self.ws = websocket.create_connection(ws_url, timeout=120, suppress_origin=True)
        self.n = 0
        self.events: list[dict] = []

    def call(self, method: str, **params) -> dict:
        self.n += 1
        self.ws.send(json.dumps({"id": self.n, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.n:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def drain(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        self.ws.settimeout(0.2)
        try:
            while time.monotonic() < end:
                try:
                    self.events.append(json.loads(self.ws.recv()))
                except Exception:  # timeout: nothing pending
                    pass
        finally:
            self.ws.settimeout(120)


@contextlib.contextmanager
def _page(page: str | Path, width: int, height: int):
    """Headless Chromium with ``page`` loaded offline at ``width`` × ``height`` CSS px: yields (DevTools
    session, the page's file URL)."""
    chrome = chromium_path()
    if chrome is None:
        raise FileNotFoundError("chromium is not installed (make tools installs Debian's chromium as root)")
    url = Path(page).resolve().as_uri()
    # Chromium's helper processes may still write to the profile when the browser has exited: the whole
    # process group is killed, and the profile removed ignoring what they left behind
    with tempfile.TemporaryDirectory(prefix="pagecheck-", ignore_cleanup_errors=True) as prof:
        proc = subprocess.Popen([chrome, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                 "--remote-debugging-port=0", f"--user-data-dir={prof}", "--no-first-run",
                                 f"--window-size={width},{height}", "about:blank"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        try:
            ws_url = None
            deadline = time.monotonic() + 60
            while ws_url is None and time.monotonic() < deadline:
                line = proc.stderr.readline()
                if not line and proc.poll() is not None:
                    break
                m = re.search(r"DevTools listening on (ws://\S+)", line)
                if m:
                    ws_url = m.group(1)
            if ws_url is None:
                raise RuntimeError("chromium did not start its DevTools endpoint")
            import urllib.request
            port = re.search(r":(\d+)/", ws_url).group(1)
            targets = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/json").read())
            page_ws = next(t["webSocketDebuggerUrl"] for t in targets if t.get("type") == "page")
            cdp = _Cdp(page_ws)
            for domain in ("Network", "Runtime", "Log", "Page"):
                cdp.call(f"{domain}.enable")
            cdp.call("Network.emulateNetworkConditions", offline=True, latency=0, downloadThroughput=-1,
                     uploadThroughput=-1)
            cdp.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                     mobile=False)
            cdp.call("Page.navigate", url=url)
            deadline = time.monotonic() + 120
            while not any(e.get("method") == "Page.loadEventFired" for e in cdp.events):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{page}: no load event in 120 s")
                cdp.drain(0.2)
            yield cdp, url
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            proc.stderr.close()


def inspect_page(page: str | Path, width: int = 1400, height: int = 900, settle_s: float = 1.0) -> dict[str, Any]:
    """Open ``page`` (a local HTML file) offline in headless Chromium at ``width`` × ``height`` CSS px."""
    with _page(page, width, height) as (cdp, url):
        res = cdp.call("Runtime.evaluate", expression=_MEASURE, awaitPromise=True, returnByValue=True)
        cdp.drain(settle_s)
        out = json.loads(res["result"]["value"])
        ev = cdp.events
    out["requests"] = sorted({e["params"]["request"]["url"] for e in ev
                              if e.get("method") == "Network.requestWillBeSent"
                              and not e["params"]["request"]["url"].startswith(("data:", url))})
    out["failed_requests"] = [e["params"].get("errorText") for e in ev if e.get("method") == "Network.loadingFailed"]
    out["console_errors"] = ([" ".join(str(a.get("value", a.get("description", ""))) for a in e["params"]["args"])
                              for e in ev if e.get("method") == "Runtime.consoleAPICalled"
                              and e["params"]["type"] in ("error", "assert")]
                             + [e["params"]["exceptionDetails"].get("exception", {}).get("description")
                                or e["params"]["exceptionDetails"].get("text")
                                for e in ev if e.get("method") == "Runtime.exceptionThrown"]
                             + [e["params"]["entry"]["text"] for e in ev
                                if e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error"])
    out["screens"] = out["height"] / height
    out["bytes"] = Path(page).stat().st_size
    out["clipped_images"] = [i for i in out["images"] if i["rendered"] > i["container"] + 1]
    return out


def print_pdf(page: str | Path, out: str | Path, width: int = 1400) -> Path:
    """``page`` printed to PDF by headless Chromium (A4, backgrounds, no header or footer) once its plotly
    figures are drawn; the page's print rules keep a figure or a table row from being cut across pages.
    Written to a temp file and renamed into place."""
    import base64
    out = Path(out)
    with _page(page, width, 900) as (cdp, _):
        cdp.call("Runtime.evaluate", expression=_MEASURE, awaitPromise=True, returnByValue=True)
        res = cdp.call("Page.printToPDF", printBackground=True, paperWidth=8.27, paperHeight=11.69,
                       marginTop=0.4, marginBottom=0.4, marginLeft=0.4, marginRight=0.4,
                       displayHeaderFooter=False, preferCSSPageSize=False)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    tmp.write_bytes(base64.b64decode(res["data"]))
    os.replace(tmp, out)
    return out


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("page", type=Path)
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=900)
    ap.add_argument("--pdf", type=Path, help="print the page to this PDF instead (make report-pdf)")
    a = ap.parse_args(argv)
    if a.pdf:
        print(print_pdf(a.page, a.pdf, a.width))
        return 0
    r = inspect_page(a.page, a.width, a.height)
    r["images"] = {"count": len(r["images"]), "natural_wider_than_box": sum(i["natural"] > i["container"] for i in r["images"]),
                   "not_loaded": sum(not i["loaded"] for i in r["images"])}
    print(json.dumps(r, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
