"""Open a page served by `kvtui serve` in headless Chromium, wait until the monitor shows live figures, and save a
screenshot: the browser check of tests/integration/test_serve_browser.py and of the README's screenshot
(`make screenshots`).

    python scripts/browser_check.py URL --png OUT.png [--want requests] [--timeout 40] [--size 1280x800]
                                        [--settle SECONDS]

It drives Chromium over the DevTools protocol (a websocket, with aiohttp, which textual-serve brings). The page
draws the terminal into a canvas (xterm.js), so the text on screen is not in the DOM: a script run before the
page's own catches the xterm.js ``Terminal`` object the page creates and reads its screen buffer, the text
xterm.js draws. "Live" = the screen holds ``--want`` and changes between two reads 1 s apart or more (the
monitor's figures move). Prints one JSON object (``text``: the last screen read, ``live``, ``seconds``,
``screens``: reads taken) and exits 0, or 1 when the page never showed live figures within ``--timeout``.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--remote-debugging-port=0", "--remote-allow-origins=*"]

# Before the page's scripts: the first object given a `terminal` property (textual-serve's page does
# `this.terminal = new Terminal(…)`) keeps it as its own property, and an xterm.js Terminal is kept in window.
HOOK = """
Object.defineProperty(Object.prototype, "terminal", {configurable: true, set(v) {
  Object.defineProperty(this, "terminal", {value: v, writable: true, configurable: true, enumerable: true});
  if (v && v.buffer && v.buffer.active) { window.__kvtuiTerm = v; }
}});
window.__kvtuiScreen = () => {
  const t = window.__kvtuiTerm;
  if (!t) { return ""; }
  const b = t.buffer.active, lines = [];
  for (let i = 0; i < t.rows; i++) {
    const l = b.getLine(b.viewportY + i);
    lines.push(l ? l.translateToString(true) : "");
  }
  return lines.join("\\n");
};
"""


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise SystemExit("browser_check: no chromium on PATH (Debian: apt-get install chromium)")


class DevTools:
    """One DevTools websocket: ``call(method, **params)`` returns the result, events are skipped."""

    def __init__(self, ws):
        self.ws, self.next_id = ws, 0

    async def call(self, method: str, **params):
        self.next_id += 1
        await self.ws.send_json({"id": self.next_id, "method": method, "params": params})
        while True:
            msg = json.loads((await self.ws.receive()).data)
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})


async def check(url: str, png: str | None, want: str, timeout: float, size: tuple[int, int],
                settle: float = 0.0) -> dict:
    import aiohttp

    profile = tempfile.mkdtemp(prefix="kvtui-chromium-")
    log = open(Path(profile) / "chromium.log", "wb")
    proc = subprocess.Popen([chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                             f"--window-size={size[0]},{size[1]}", "about:blank"],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    t0 = time.monotonic()
    try:
        port_file = Path(profile) / "DevToolsActivePort"
        while not (port_file.exists() and port_file.read_text().strip()):
            if proc.poll() is not None or time.monotonic() - t0 > timeout:
                tail = (Path(profile) / "chromium.log").read_text()[-500:]
                raise SystemExit(f"browser_check: chromium did not start ({tail})")
            await asyncio.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        async with aiohttp.ClientSession() as http:
            while True:  # the server answers (it may still be starting)
                try:
                    async with http.get(url) as r:
                        if r.status == 200:
                            break
                except aiohttp.ClientError:
                    pass
                if time.monotonic() - t0 > timeout:
                    raise SystemExit(f"browser_check: {url} did not answer within {timeout:g} s")
                await asyncio.sleep(0.2)
            while True:  # the page target of about:blank
                async with http.get(f"http://127.0.0.1:{port}/json/list") as r:
                    pages = [t for t in await r.json() if t.get("type") == "page"]
                if pages:
                    break
                await asyncio.sleep(0.1)
            async with http.ws_connect(pages[0]["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                dt = DevTools(ws)
                await dt.call("Page.enable")
                await dt.call("Emulation.setDeviceMetricsOverride", width=size[0], height=size[1],
                              deviceScaleFactor=1, mobile=False)  # the viewport itself, not the window
                await dt.call("Page.addScriptToEvaluateOnNewDocument", source=HOOK)
                await dt.call("Page.navigate", url=url)
                screens, first, text, live = 0, None, "", False
                while time.monotonic() - t0 < timeout:
                    await asyncio.sleep(0.5)
                    res = await dt.call("Runtime.evaluate",
                                        expression="window.__kvtuiScreen ? window.__kvtuiScreen() : ''",
                                        returnByValue=True)
                    text = res.get("result", {}).get("value") or ""
                    screens += 1
                    if want not in text:
                        continue
                    if first is None:
                        first = (time.monotonic(), text)
                    elif time.monotonic() - first[0] >= 1.0 and text != first[1]:
                        live = True
                        break
                if png:
                    if live and settle > 0:  # let the sparklines and the page grid fill before the picture
                        await asyncio.sleep(settle)
                    shot = await dt.call("Page.captureScreenshot", format="png")
                    Path(png).write_bytes(base64.b64decode(shot["data"]))
                await dt.call("Page.navigate", url="about:blank")  # closes the page's websocket: its monitor ends
        return {"text": text, "live": live, "seconds": round(time.monotonic() - t0, 2), "screens": screens}
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(profile, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("url")
    ap.add_argument("--png", help="save a screenshot of the page (PNG) here")
    ap.add_argument("--want", default="requests", help="text the screen must show (default: requests)")
    ap.add_argument("--timeout", type=float, default=40.0, help="seconds to wait for live figures (default 40)")
    ap.add_argument("--size", default="1280x800", help="browser viewport, pixels (default 1280x800)")
    ap.add_argument("--settle", type=float, default=0.0, help="seconds to wait after the figures are live, before "
                    "the screenshot (default 0)")
    a = ap.parse_args()
    w, h = (int(x) for x in a.size.split("x"))
    out = asyncio.run(check(a.url, a.png, a.want, a.timeout, (w, h), a.settle))
    print(json.dumps(out))
    return 0 if out["live"] else 1


if __name__ == "__main__":
    sys.exit(main())
