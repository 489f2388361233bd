#!/usr/bin/env python3
"""Drives the web view of `runner serve` in headless Chromium, as tests/web.rs scripts it.

    drive.py BASE_URL SCREENSHOT_DIR AGENT TOKEN

Chromium is driven by Debian's chromedriver over the W3C WebDriver protocol, which is
plain HTTP and JSON: Python's standard library is all it takes. Every wait is bounded
(WAIT seconds each, DEADLINE in all). On success it prints one JSON line: the ids of the
runs it saw. On failure it writes `failure.png` beside the screenshots and exits 1.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

WAIT = 30
DEADLINE = time.monotonic() + 150
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"


class Failed(Exception):
    pass


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait(what, condition, timeout=WAIT):
    """Polls `condition` until it gives a true value, for at most `timeout` seconds."""
    end = min(time.monotonic() + timeout, DEADLINE)
    last = None
    while time.monotonic() < end:
        try:
            value = condition()
            if value:
                return value
        except Failed as error:
            last = error
        time.sleep(0.1)
    raise Failed(f"timed out waiting for {what}" + (f" (last: {last})" if last else ""))


class Browser:
    """A headless Chromium session through chromedriver."""

    def __init__(self):
        driver = shutil.which("chromedriver")
        chromium = shutil.which("chromium")
        if not driver or not chromium:
            raise Failed("chromium and chromedriver are needed (Debian: apt-get install chromium chromium-driver)")
        port = free_port()
        self.profile = tempfile.mkdtemp(prefix="runner-web-")
        self.process = subprocess.Popen(
            [driver, f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.base = f"http://127.0.0.1:{port}"
        wait("chromedriver to listen", self.listening)
        arguments = [
            "--headless=new",
            "--no-sandbox",
            "--disable-dev-shm-usage",
            "--disable-gpu",
            "--window-size=1100,1200",
            f"--user-data-dir={self.profile}",
        ]
        capabilities = {"browserName": "chrome", "goog:chromeOptions": {"binary": chromium, "args": arguments}}
        self.session = self.call("POST", "/session", {"capabilities": {"alwaysMatch": capabilities}})["sessionId"]

    def listening(self):
        try:
            with socket.create_connection(("127.0.0.1", int(self.base.rsplit(":", 1)[1])), timeout=1):
                return True
        except OSError:
            return False

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.load(response)["value"]
        except urllib.error.HTTPError as error:
            value = json.load(error).get("value", {})
            raise Failed(f"{method} {path}: {value.get('error')}: {value.get('message', '')[:300]}")

    def command(self, method, path, body=None):
        return self.call(method, f"/session/{self.session}{path}", body)

    def go(self, url):
        self.command("POST", "/url", {"url": url})

    def all(self, css):
        found = self.command("POST", "/elements", {"using": "css selector", "value": css})
        return [element[ELEMENT] for element in found]

    def one(self, css):
        """The first element `css` selects, waited for."""
        return wait(f"`{css}`", lambda: (self.all(css) or [None])[0])

    def text(self, element):
        return self.command("GET", f"/element/{element}/text")

    def attribute(self, element, name):
        return self.command("GET", f"/element/{element}/attribute/{name}")

    def click(self, element):
        self.command("POST", f"/element/{element}/click", {})

    def type(self, element, text):
        self.command("POST", f"/element/{element}/value", {"text": text})

    def text_of(self, css):
        return " ".join(self.text(element) for element in self.all(css))

    def screenshot(self, path):
        import base64

        with open(path, "wb") as file:
            file.write(base64.b64decode(self.command("GET", "/screenshot")))

    def quit(self):
        try:
            self.command("DELETE", "")
        except (Failed, OSError):
            pass
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


def scenario(browser, base, shots, agent, token):
    browser.go(base)
    # The server needs a token: the page asks for it once, then every request carries it.
    field = browser.one("#token-value")
    wait("the token field", lambda: browser.command("GET", f"/element/{field}/displayed"))
    browser.type(field, token + "\ue007")
    card = f'article.agent[data-agent="{agent}"]'
    # Start the agent from its form: its input field is made from `inputs:`; Enter submits.
    topic = browser.one(f'{card} input[name="topic"]')
    browser.type(topic, "milk\ue007")
    run = browser.one(".run[data-run]")
    first = browser.attribute(run, "data-run")
    # While the run is live: its steps, the sub-agent's call, and the sub-agent's own tool
    # call folded under it.
    browser.one(".run .step")
    call = browser.one('.run details.tool[data-call] > summary')
    wait("the sub-agent's tool call", lambda: browser.all(".run details.sub details.tool .result"))
    if "helper" not in browser.text(call):
        raise Failed(f"the first tool call is not the sub-agent's: {browser.text(call)}")
    # Expand the call, then the sub-agent's work, then its tool call: its result shows.
    browser.click(call)
    browser.click(browser.one(".run details.sub > summary"))
    browser.click(browser.one(".run details.sub details.tool > summary"))
    wait("the sub-agent's tool result, visible", lambda: "remember the milk" in browser.text_of(".run details.sub .result"))
    status = browser.text(browser.one(".run .status[role=status]"))
    if status != "running":
        raise Failed(f"the run was no longer live when its tool calls were shown: {status}")
    browser.screenshot(os.path.join(shots, "live-run.png"))
    # The shell call waits for approval: approve it from the page.
    wait("the approval form", lambda: browser.all("form.answer fieldset.call"))
    if "shell" not in browser.text_of("form.answer fieldset.call legend"):
        raise Failed("the approval form does not name the shell call")
    browser.click(browser.one("form.answer button[type=submit]"))
    wait("the answer of the continued run",
         lambda: "All done" in browser.text_of(".run .answer-text"))
    runs = [browser.attribute(element, "data-run") for element in browser.all(".run[data-run]")]
    statuses = browser.text_of(".run .status[role=status]")
    if len(runs) != 2 or statuses != "input_required completed":
        raise Failed(f"runs {runs} with statuses {statuses!r}")
    # Open the past run from the sessions: it is rendered again from its events.
    wait("the session in the list", lambda: browser.all("tr[data-session] a"))
    browser.click(browser.one("tr[data-session] a"))
    browser.click(browser.one(f'#session-view button[data-open-run="{first}"]'))
    wait("the past run", lambda: browser.all(f'.run[data-run="{first}"]') and len(browser.all(".run[data-run]")) == 1)
    wait("the past run's end", lambda: browser.text_of(".run .status[role=status]") == "input_required")
    if "helper" not in browser.text_of(".run details.tool > summary"):
        raise Failed("the past run does not show its tool call")
    browser.screenshot(os.path.join(shots, "past-run.png"))
    desk = desk_hands_over_and_asks(browser)
    # On a narrow window the columns become one and nothing needs a sideways scroll.
    browser.command("POST", "/window/rect", {"width": 400, "height": 900})
    wide = "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
    wait("the page to fit a narrow window", lambda: browser.command("POST", "/execute/sync", {"script": wide, "args": []}) <= 0)
    browser.screenshot(os.path.join(shots, "narrow.png"))
    return {"runs": runs, "desk": desk}


def desk_hands_over_and_asks(browser):
    """Starts the `desk` agent, which hands over to `filer`, which asks a question: the
    page shows the handoff, then the question with a field for the answer; answered from
    the page, the run goes on with the agent that had control. The runs' ids."""
    browser.click(browser.one('article.agent[data-agent="desk"] form.start button[type=submit]'))
    wait("the desk's run", lambda: browser.all('.run[data-run]') and "desk" in browser.text_of(".run .line"))
    handoff = browser.text_of(".run .line")
    if "desk → filer (transfer_to_filer)" not in handoff:
        raise Failed(f"the handoff is not shown as desk → filer (transfer_to_filer): {handoff!r}")
    answer = browser.one("form.answer textarea")
    question = browser.text_of("form.answer")
    if "Which shelf?" not in question or "sub-agent" in question:
        raise Failed(f"the question form says: {question!r}")
    browser.type(answer, "the top shelf")
    browser.click(browser.one("form.answer button[type=submit]"))
    wait("the answer of the continued run",
         lambda: "Filed on the top shelf." in browser.text_of(".run .answer-text"))
    answered = browser.text_of(".run .line")
    if "Which shelf? → the top shelf" not in answered:
        raise Failed(f"the given answer is not shown: {answered!r}")
    return [browser.attribute(element, "data-run") for element in browser.all(".run[data-run]")]


def main():
    base, shots, agent, token = sys.argv[1:5]
    os.makedirs(shots, exist_ok=True)
    browser = Browser()
    try:
        seen = scenario(browser, base, shots, agent, token)
    except Failed as error:
        try:
            browser.screenshot(os.path.join(shots, "failure.png"))
        except (Failed, OSError):
            pass
        shown = browser.text_of("#error")
        print(f"web view: {error}" + (f" (the page says: {shown})" if shown else ""), file=sys.stderr)
        return 1
    finally:
        browser.quit()
    print(json.dumps(seen))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failed as error:
        print(f"web view: {error}", file=sys.stderr)
        sys.exit(1)
