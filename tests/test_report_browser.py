"""The HTML report as a reader sees it: opened in headless Chromium (Debian's `chromium` package).

The page is loaded over the DevTools protocol (a pipe, no port), and what the test reads is
`document.body.innerText`: the rendered text, which leaves out whatever is hidden (a closed
<details> shows only its summary). A reader first sees each response's summary line; opening it
(a click on every <details>, done here by setting `open`) shows each sentence with the method's
checker verdict, the passages it cited (title, source, character offsets) and the scorer's claim
verdicts. Hostile model output must show as text and never become an element or run.

Skipped when no chromium binary is found, except under EWE_REQUIRE_CHROMIUM=1 (.ci/run, which
installs the package when it can), where a missing browser is a failure.
"""
from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import time

import pytest
from test_eval_report import _claim, _summary, _write_details

from ewe.eval.report import write_report

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
if BROWSER is None:
    if os.environ.get("EWE_REQUIRE_CHROMIUM") == "1":
        raise RuntimeError("EWE_REQUIRE_CHROMIUM=1 but no chromium binary is on PATH "
                           "(Debian: apt-get install chromium)")
    pytest.skip("no chromium binary on PATH (Debian: apt-get install chromium); "
                "set EWE_REQUIRE_CHROMIUM=1 to fail instead", allow_module_level=True)

TIMEOUT_S = 90  # a cold start on a loaded 2-core machine once took over 30 s
HOSTILE = "He wrote <script>alert(1)</script> & <img src=x onerror=alert(2)> twice."


class Browser:
    """Headless Chromium driven over --remote-debugging-pipe: NUL-terminated JSON messages,
    written to its fd 3 and read from its fd 4."""

    def __init__(self, profile):
        profile.mkdir(parents=True, exist_ok=True)
        self.log = open(profile / "chromium.log", "w+b")  # a file, not a pipe nobody reads that could fill up
        to_r, self._to = os.pipe()
        self._from, from_w = os.pipe()

        def child_fds():  # in the child: the pipe ends become fds 3 and 4 (moved out of the way first)
            r, w = fcntl.fcntl(to_r, fcntl.F_DUPFD, 10), fcntl.fcntl(from_w, fcntl.F_DUPFD, 10)
            os.dup2(r, 3)
            os.dup2(w, 4)
            os.close(r)
            os.close(w)

        # close_fds=False: fds 3 and 4 need not exist here (pass_fds would ask that); every other fd
        # Python opened is non-inheritable, so only 0-4 reach the browser
        self.proc = subprocess.Popen(
            [BROWSER, "--headless", "--disable-gpu", "--no-sandbox", "--remote-debugging-pipe", "--no-first-run",
             "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1280,900", "about:blank"],
            close_fds=False, preexec_fn=child_fds, start_new_session=True, stdin=subprocess.DEVNULL, stdout=self.log,
            stderr=subprocess.STDOUT)
        os.close(to_r)
        os.close(from_w)
        self._buf, self._id, self.events = b"", 0, []
        self.deadline = time.monotonic() + TIMEOUT_S
        try:
            target = self.call("Target.createTarget", url="about:blank")["targetId"]
            self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        except BaseException:
            self.close()
            raise

    def _next(self) -> dict:
        while b"\0" not in self._buf:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([self._from], [], [], left)[0]:
                raise TimeoutError(f"chromium did not answer within {TIMEOUT_S} s")
            chunk = os.read(self._from, 1 << 16)
            if not chunk:
                self.log.seek(0)
                raise RuntimeError(f"chromium exited: {self.log.read().decode(errors='replace')[-2000:]}")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, session: str | None = None, **params) -> int:
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params, **({"sessionId": session} if session else {})}
        os.write(self._to, json.dumps(msg).encode() + b"\0")
        return self._id

    def wait(self, pred) -> dict:
        while True:
            msg = self._next()
            if msg.get("method") == "Page.javascriptDialogOpening":  # it would block the page: fail now
                raise AssertionError(f"the page ran script: a {msg['params'].get('type')} dialog saying "
                                     f"{msg['params'].get('message')!r}")
            if pred(msg):
                return msg
            self.events.append(msg)

    def call(self, method: str, page: bool = False, **params) -> dict:
        i = self.send(method, self.session if page else None, **params)
        msg = self.wait(lambda m: m.get("id") == i)
        if "error" in msg:
            raise RuntimeError(f"{method}: {msg['error']}")
        return msg["result"]

    def open(self, url: str) -> None:
        self.call("Page.enable", page=True)
        self.call("Page.navigate", page=True, url=url)
        self.wait(lambda m: m.get("method") == "Page.loadEventFired")

    def js(self, expression: str):
        result = self.call("Runtime.evaluate", page=True, expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def close(self) -> None:
        try:
            self.send("Browser.close")
            self.proc.wait(5)
        except Exception:  # the browser and its helpers, which share its new session's process group
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)
        finally:
            os.close(self._to)
            os.close(self._from)
            self.log.close()


@pytest.fixture
def browser(tmp_path):
    b = Browser(tmp_path / "profile")
    yield b
    b.close()


def _records():
    """EWE's two responses (checker verdicts, cited passages with offsets) and a plain method's one."""
    ewe = []
    for i in range(2):
        first, second = (HOSTILE, "Person died in 1950.") if i == 0 else ("Person was born in Warsaw.", "Person died.")
        claims = [_claim(f"ewe claim {i}.0", "supported"), _claim(f"ewe claim {i}.1", "unsupported")]
        ewe.append({
            "id": f"ewe-{i}", "prompt": f"Tell me a bio of person {i}.", "method": "ewe", "dataset": "bios",
            "response": f"{first} {second}", "K": 2,
            "sentences": [{"text": first, "claims": claims[:1]}, {"text": second, "claims": claims[1:]}],
            "n_claims": 2, "n_supported": 1, "precision": 0.5, "recall": 0.5, "f1": 0.5,
            "run_sentences": [
                {"text": first, "checked": True, "verdict": "supported", "needs_rewrite": False,
                 "evidence": [{"title": f"Person <b>{i}</b>", "source_id": f"wiki:Person_{i}#2", "start": 1200 + i,
                               "end": 1650, "score": 0.875, "claim": f"ewe claim {i}.0",
                               "text": f"Person {i} <i>passage</i> text."}]},
                {"text": " " + second, "checked": True, "verdict": "unsupported", "needs_rewrite": True,
                 "evidence": []}],
        })
    plain = [{"id": "ra-0", "prompt": "Tell me a bio of person 0.", "method": "ra", "dataset": "bios",
              "response": "Person was a painter.", "K": 2,
              "sentences": [{"text": "Person was a painter.", "claims": [_claim("ra claim", "supported")]}],
              "n_claims": 1, "n_supported": 1, "precision": 1.0, "recall": 0.5, "f1": 2 / 3}]
    return ewe, plain


@pytest.fixture
def report(tmp_path):
    ewe, plain = _records()
    summaries = [_summary("ewe", "bios", _write_details(tmp_path / "ewe.jsonl", ewe), 0.5, n=2,
                          in_loop_checker="judge:minilm-cross+rules"),
                 _summary("ra", "bios", _write_details(tmp_path / "ra.jsonl", plain), 0.667, n=1, in_loop_checker="-")]
    return write_report(summaries, tmp_path / "out")["index.html"]


def _lines(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def _shown(lines: list[str], sentence: str) -> list[str]:
    """What follows a sentence where it is shown on its own (not in the full response): its verdicts."""
    [at] = [i for i, line in enumerate(lines) if line == sentence and lines[i + 1].startswith("checker")]
    return lines[at + 1:]


def test_a_reader_sees_each_sentence_its_verdicts_and_evidence(browser, report):
    t0 = time.monotonic()
    browser.open(report.resolve().as_uri())
    closed = browser.js("document.body.innerText")
    # at first: the table, the plots, one summary line per response; the sentences are behind a click
    assert "F1@K" in closed and "ewe-0" in closed and "ra-0" in closed
    assert "scorer: 1/2 claims supported · checker: 1/2 sentences supported" in closed
    assert "Person was born in Warsaw." not in closed
    assert browser.js("[...document.images].every(i => i.complete && i.naturalWidth > 100)")  # plots embedded, drawn

    browser.js("document.querySelectorAll('details').forEach(d => d.open = true)")  # the reader opens everything
    lines = _lines(browser.js("document.body.innerText"))
    text = "\n".join(lines)
    # each EWE sentence, then its checker verdict, the passage it cited, then the scorer's verdicts
    after = _shown(lines, "Person was born in Warsaw.")
    assert after[0] == "checker SUPPORTED"  # .verdict is upper-cased on screen
    assert after[1] == "Person <b>1</b> wiki:Person_1#2 · chars 1201–1650 · score 0.875 for “ewe claim 1.0”"
    assert after[2] == "Person 1 <i>passage</i> text."
    assert after[3] == "scorer 1/1 claim supported"
    assert after[4].startswith("SUPPORTED 0.900 ewe claim 1.0")
    after = _shown(lines, "Person died.")
    assert after[:2] == ["checker UNSUPPORTED no supporting passage", "scorer 0/1 claim supported"]
    # the plain method: no checker, said plainly, and the scorer's verdicts as before
    assert "checker: none, this method checks nothing while it writes" in text
    assert _shown(lines, "Person was a painter.")[:2] == ["checker none", "scorer 1/1 claim supported"]

    # hostile output: shown as the text it is, nowhere an element, nothing ran
    assert _shown(lines, HOSTILE)[0] == "checker SUPPORTED"
    assert HOSTILE in browser.js("document.querySelector('pre').innerText")  # the full response, too
    assert "Person <b>0</b> wiki:Person_0#2 · chars 1200–1650" in text
    assert browser.js("document.scripts.length") == 0
    assert browser.js("document.querySelectorAll('img').length") == 1  # the bar chart only: no injected <img>
    assert browser.js("document.querySelectorAll('b i, blockquote i, li > b > b').length") == 0

    shot = base64.b64decode(browser.call("Page.captureScreenshot", page=True, format="png")["data"])
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 10_000  # a drawn page, not a blank one
    assert time.monotonic() - t0 < TIMEOUT_S


def test_a_reader_opens_a_critiques_verification_tree(browser, tmp_path):
    """`ewe critique --report`: each text is one summary line; opened, the text shows with its claims
    and verdicts, and each tree opens level by level down to the sub-claim that decided."""
    from test_critique import PASSAGE, critic

    from ewe.critique.report import write_report

    text = "Marie Curie was born in 1880 in Paris. " + HOSTILE
    row = {"id": "text-1", "evidence": "given", **critic(ita=True).critique(text, evidence=[PASSAGE]).to_dict()}
    page = write_report([{"id": "text-1", "text": text}], [row], tmp_path / "critique")
    browser.open(page.resolve().as_uri())
    closed = browser.js("document.body.innerText")
    assert "text-1 · 2 claims · 1 rejected" in closed and "sub-claim rejected" not in closed

    browser.js("document.querySelectorAll('body > details').forEach(d => d.open = true)")  # the text, not its trees
    lines = _lines(browser.js("document.body.innerText"))
    assert "[reject] Marie Curie was born in 1880 in Paris." in lines
    assert "sub-claim rejected: Marie Curie was born in 1880." in lines
    assert "[reject] Marie Curie was born in 1880." not in lines  # the child: behind the tree's own click

    browser.js("document.querySelectorAll('details').forEach(d => d.open = true)")
    lines = _lines(browser.js("document.body.innerText"))
    assert "[reject] Marie Curie was born in 1880." in lines and "[unsubstantiated] Marie Curie was born in Paris." in lines
    assert any(line.startswith("← Marie Curie [0:") for line in lines)  # the reference: title and offsets
    assert HOSTILE in browser.js("document.body.innerText")
    assert browser.js("document.scripts.length") == 0 and browser.js("document.querySelectorAll('img').length") == 0
