"""The gateway's page in a real browser: headless Chromium over WebDriver (selenium), against the
real `tether serve` binary over the OpenCode simulator (`tether simulate opencode`), loopback only.

Each scenario prints PASS/FAIL; the last line is "N passed, N failed". Run by page-test.sh.
"""

import datetime
import json
import os
import signal
import socket
import subprocess
import sys
import shutil
import tempfile
import threading
import time
import traceback
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

TETHER = os.environ["TETHER_BIN"]
OUT = os.environ["PAGE_OUT"]  # .build-page: screenshots and logs
TOKEN = "page-test-token-5b1e"
CW_TOKEN = "page-test-worker-7c2d"
PLAIN_PROMPT = "Say hello in three words"
PLAIN_ANSWER = ("Hello from the OpenCode simulator. You said: \u201cSay hello in three words\u201d. "
                "Nothing here needs a tool, so this streamed text is the whole answer.")
APPROVAL_PROMPT = "Clean the build dir and say done"
APPROVAL_ANSWER = "Done. The build directory has been removed."

passed = 0
failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("PASS: " + name, flush=True)
    else:
        failed += 1
        print("FAIL: " + name + (" — " + detail if detail else ""), flush=True)
    return ok


def wait_for(what, predicate, timeout=20.0, interval=0.1):
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except (StaleElementReferenceException, WebDriverException, OSError, ValueError) as error:
            last_error = error
        time.sleep(interval)
    raise TimeoutError("timed out after %.0f s waiting for %s%s" % (timeout, what, (": %s" % last_error) if last_error else ""))


def first_line(path, timeout=30.0):
    def line():
        with open(path) as handle:
            text = handle.readline()
        return text.strip() if text.endswith("\n") else None
    return wait_for("the first line of " + path, line, timeout)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Gateway:
    """`tether serve` on a fixed port and database, so it can be stopped and started again."""

    def __init__(self, work):
        self.work = work
        self.port = free_port()
        self.db = os.path.join(work, "gateway.sqlite")
        self.config = os.path.join(work, "config.toml")
        self.url = "http://127.0.0.1:%d" % self.port
        self.process = None
        self.runs = 0

    def start(self):
        self.runs += 1
        out = open(os.path.join(self.work, "serve%d.out" % self.runs), "w")
        err = open(os.path.join(self.work, "serve%d.err" % self.runs), "w")
        env = dict(os.environ, PAGE_TOKEN=TOKEN, CW_TOKEN=CW_TOKEN, XDG_STATE_HOME=os.path.join(self.work, "state"))
        self.process = subprocess.Popen([TETHER, "--config", self.config, "serve", "--listen", "127.0.0.1:%d" % self.port,
                                         "--db", self.db], stdout=out, stderr=err, env=env)
        line = json.loads(first_line(out.name))
        assert line["listen"] == self.url, line

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def request(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", "Bearer " + TOKEN)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=15) as response:
            return json.loads(response.read() or b"null")

    def logged(self, session=None):
        """Every logged event (the long-poll form), optionally of one session."""
        events, since = [], 0
        while True:
            reply = self.request("GET", "/v1/events?format=json&limit=1000&since=%d" % since)
            events += reply["events"]
            if not reply["events"]:
                break
            since = reply["next"]
        return [e for e in events if session is None or e.get("session") == session]


class DroppingProxy:
    """A loopback TCP forwarder between the browser and the gateway that can cut every open
    connection at once: what a phone's network change does to the page's event stream, while the
    gateway itself stays up (so the browser's own EventSource reconnect is what resumes)."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.open = set()
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.open.update([client, upstream])
            threading.Thread(target=self.pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self.pump, args=(upstream, client), daemon=True).start()

    def pump(self, source, sink):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def drop(self):
        """Cuts every connection open now; returns how many."""
        with self.lock:
            ends, self.open = self.open, set()
        for end in ends:
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            end.close()
        return len(ends) // 2

    def close(self):
        self.listener.close()
        self.drop()


class Page:
    def __init__(self, driver, gateway, proxy):
        self.driver = driver
        self.gateway = gateway
        self.proxy = proxy
        self.url = "http://127.0.0.1:%d/" % proxy.port

    def js(self, script, *args):
        return self.driver.execute_script(script, *args)

    def visible(self, element_id):
        return self.js("const e = document.getElementById(arguments[0]); return !!e && !e.closest('[hidden]');", element_id)

    def login(self, token):
        wait_for("the login form", lambda: self.visible("login"))
        field = self.driver.find_element(By.ID, "login-token")
        field.clear()
        field.send_keys(token)
        self.driver.find_element(By.ID, "login-submit").click()

    def at_end(self):
        """Whether the page is scrolled to its end (the newest message and the prompt box in view)."""
        return self.js("const s = document.scrollingElement; return s.scrollHeight - (s.scrollTop + window.innerHeight) < 130;")

    def newest_in_view(self):
        """The newest element of the open transcript is inside the viewport."""
        return self.js("""
            const items = document.querySelectorAll('#transcript > *');
            if (!items.length) return false;
            const r = items[items.length - 1].getBoundingClientRect();
            return r.bottom > 0 && r.top < window.innerHeight;""")

    def size(self, width, height):
        """The phone (390×844, touch) or the desktop (1280×800)."""
        mobile = width < 1000
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})
        self.driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": mobile})
        time.sleep(0.3)

    def part_texts(self):
        """data-part-id -> [body text of each element with that id] in the open transcript."""
        return self.js("""
            const out = {};
            for (const e of document.querySelectorAll('#transcript [data-part-id]')) {
              const body = e.querySelector('.body');
              (out[e.dataset.partId] = out[e.dataset.partId] || []).push(body ? body.textContent : e.textContent);
            }
            return out;""")

    def turn_ends(self):
        return self.js("return [...document.querySelectorAll('#transcript [data-turn-status]')].map(e => e.dataset.turnStatus);")

    def send(self, text):
        box = self.driver.find_element(By.ID, "prompt")
        box.clear()
        box.send_keys(text)
        self.driver.find_element(By.ID, "send").click()


def assistant_text_parts(gateway, session):
    """The final text of each assistant text part of a session, by part id, from the gateway's log."""
    return {e["part"]: e["data"].get("text", "") for e in gateway.logged(session)
            if e["type"] == "part.completed" and e["data"].get("kind") == "text" and e["data"].get("role") == "assistant"}


def rendered_part_ids(gateway, session):
    """The parts the page renders (all but steps), from the log."""
    return {e["part"] for e in gateway.logged(session)
            if e["type"].startswith("part.") and e["type"] != "part.removed" and e.get("part") and e["data"].get("kind") != "step"}


def scenario(name):
    def wrap(function):
        def run(*args):
            try:
                function(*args)
            except Exception as error:  # a scenario that blows up is a failure, and the rest still run
                traceback.print_exc(file=sys.stdout)
                check(name, False, "%s: %s" % (type(error).__name__, error))
        run.__name__ = function.__name__
        return run
    return wrap


@scenario("wrong token")
def wrong_token(page):
    page.driver.get(page.url)
    page.login("not-the-token")
    message = wait_for("the login error", lambda: page.driver.find_element(By.CSS_SELECTOR, "#login [role=alert]").text.strip())
    check("a wrong token shows a message in role=alert: " + repr(message), "refused" in message)
    check("the token field is emptied (the page keeps no token)",
          page.driver.find_element(By.ID, "login-token").get_attribute("value") == "")


@scenario("login")
def login(page):
    page.login(TOKEN)
    wait_for("the main view", lambda: page.visible("app"))
    profile = wait_for("profile oc", lambda: page.driver.find_elements(By.CSS_SELECTOR, "#profile-list [data-profile=oc]"))
    state = wait_for("a connected state", lambda: "Connected" in profile[0].text and profile[0].text)
    check("login shows the profiles with their connection state in words", "Connected" in state, state)
    stored = page.js("return JSON.stringify(localStorage) + JSON.stringify(sessionStorage) + document.cookie;")
    check("the token is not stored by the page (the cookie is HttpOnly)", TOKEN not in stored and "tether_session" not in stored, stored)


@scenario("streamed turn")
def streamed_turn(page, context):
    gateway = page.gateway
    session = gateway.request("POST", "/v1/profiles/oc/sessions", {"title": "page test"})["id"]
    context["session"] = session
    entry = wait_for("the new session in the list", lambda: page.driver.find_elements(
        By.CSS_SELECTOR, '#profile-list [data-profile=oc][data-session-id="%s"]' % session))
    entry[0].click()
    wait_for("the open transcript", lambda: page.driver.find_elements(
        By.CSS_SELECTOR, '#transcript[data-profile=oc][data-session-id="%s"]' % session))
    fragment = page.js("return location.hash;")
    check("the open session has its own URL fragment (%s)" % fragment, fragment == "#/s/oc/" + session)
    check("on the phone the session replaces the list", not page.js("return !!document.getElementById('side').getClientRects().length;"))
    page.send(PLAIN_PROMPT)
    seen = set()

    def done():
        for texts in page.part_texts().values():
            for text in texts:
                seen.add(text)
        return "completed" in page.turn_ends()
    wait_for("the turn to complete", done, timeout=30, interval=0.05)
    partial = [t for t in seen if t and t != PLAIN_ANSWER and PLAIN_ANSWER.startswith(t)]
    check("the reply streamed in (%d partial texts seen before the whole)" % len(partial), len(partial) >= 1)
    final = assistant_text_parts(gateway, session)
    texts = page.part_texts()
    check("the transcript holds the reply exactly, in the element of its part",
          len(final) == 1 and all(texts.get(part) == [text] for part, text in final.items()) and list(final.values()) == [PLAIN_ANSWER],
          json.dumps({"log": final, "page": texts}, ensure_ascii=False))
    user = [t for t in texts.values() if t == [PLAIN_PROMPT]]
    check("the prompt is in the transcript once", len(user) == 1, json.dumps(texts, ensure_ascii=False))


def phone_checks(page):
    width = page.js("return document.scrollingElement.scrollWidth;")
    check("no horizontal scroll at 390×844 (scrollWidth %d)" % width, width <= 390)
    controls = page.js("""
        const out = [];
        for (const e of document.querySelectorAll('button, input, textarea, summary, select')) {
          if (e.closest('[hidden]') || e.getClientRects().length === 0) continue;
          const labels = e.labels ? [...e.labels].map(l => l.textContent).join(' ') : '';
          const name = (e.getAttribute('aria-label') || labels || e.textContent || '').trim();
          out.push({id: e.id || e.dataset.decision || e.textContent.trim().slice(0, 30), h: e.getBoundingClientRect().height, name});
        }
        return out;""")
    short = [c for c in controls if c["h"] < 44]
    check("every visible control (%d) is at least 44 px tall" % len(controls), controls and not short, json.dumps(short))
    unnamed = [c for c in controls if not c["name"]]
    check("every visible control has an accessible name", not unnamed, json.dumps(unnamed))
    viewport = page.js("return document.querySelector('meta[name=viewport]').content;")
    check("the page declares width=device-width (%s)" % viewport, "width=device-width" in viewport)
    colours = {}
    for scheme in ["dark", "light"]:
        page.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
        colours[scheme] = page.js("return getComputedStyle(document.body).backgroundColor + ' / ' + getComputedStyle(document.body).color;")
    page.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    check("dark and light follow the system %s" % colours, colours["dark"] != colours["light"])


@scenario("approval")
def approval(page, context):
    gateway = page.gateway
    session = context["session"]
    page.send(APPROVAL_PROMPT)
    card = wait_for("an approval card in the open session", lambda: page.driver.find_elements(
        By.CSS_SELECTOR, '#transcript [data-approval-id][data-profile=oc][data-session-id="%s"]' % session), timeout=30)[0]
    shown_at = time.time()
    logged_request = [e for e in gateway.logged(session) if e["type"] == "approval.requested"][-1]
    requested = logged_request["data"]
    logged_at = datetime.datetime.strptime(logged_request["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()
    check("the card is on the page within 10 s of approval.requested (%.1f s)" % (shown_at - logged_at), shown_at - logged_at < 10)
    check("the card is the logged approval", card.get_attribute("data-approval-id") == requested["id"])
    listed = page.driver.find_elements(By.CSS_SELECTOR, '#approval-list [data-approval-id="%s"]' % requested["id"])
    check("the same approval is also on the main view's list", len(listed) == 1)
    before = page.js("const p = arguments[0].previousElementSibling; return p ? [p.dataset.partId || '', p.className, p.textContent] : null;", card)
    tool_parts = {e["part"] for e in gateway.logged(session) if e["type"].startswith("part.") and e["data"].get("kind") in ("tool", "command")}
    check("in the session it follows the tool call that asked (%s)" % (before and before[2][:60]),
          before is not None and before[0] in tool_parts and "tool" in before[1], json.dumps([before, sorted(tool_parts)]))
    check("the session view follows it: the card is in view", page.at_end())
    options = [b.get_attribute("data-decision") for b in card.find_elements(By.CSS_SELECTOR, "button[data-decision]")]
    check("one button per option %s" % options, options == requested["options"], str(requested["options"]))
    text = card.text
    check("the risk shows as the word %r" % requested["risk"], ("Risk: " + requested["risk"]).lower() in text.lower(), text)
    check("the card shows the command", requested.get("command", "") in text and "rm -rf build" in text, text)
    count = page.driver.find_element(By.ID, "approvals-count").text
    check("the header counts it (%s)" % count, count == "1")

    # The phone layout, with the card on screen.
    page.js("document.querySelector('#transcript [data-approval-id]').scrollIntoView({block: 'center'});")
    time.sleep(0.3)
    shot = os.path.join(OUT, "page-phone.png")
    page.driver.save_screenshot(shot)
    check("a 390×844 screenshot is saved at " + shot, os.path.getsize(shot) > 1000)
    heights = page.js("return [...document.querySelectorAll('#transcript [data-approval-id] button')].map(b => b.getBoundingClientRect().height);")
    check("approval buttons are at least 44 px tall %s" % heights, heights and min(heights) >= 44)
    phone_checks(page)

    card.find_element(By.CSS_SELECTOR, "button[data-decision=accept]").click()
    wait_for("the card to go", lambda: not page.driver.find_elements(By.CSS_SELECTOR, "[data-approval-id]"), timeout=10)
    check("accept: the card disappears", True)
    resolved = wait_for("approval.resolved in the log", lambda: [
        e for e in gateway.logged(session) if e["type"] == "approval.resolved" and e["data"]["id"] == requested["id"]])
    check("the gateway logged the decision accept", resolved[0]["data"]["decision"] == "accept", json.dumps(resolved))
    wait_for("the turn to complete", lambda: page.turn_ends().count("completed") >= 2, timeout=30)
    texts = page.part_texts()
    # Only the simulator's "permission granted" path says this: it received the accept.
    check("the simulator received accept and the turn completed with its answer",
          [APPROVAL_ANSWER] in texts.values(), json.dumps(texts, ensure_ascii=False))
    tools = page.js("return [...document.querySelectorAll('#transcript details.tool')].map(d => [d.open, d.querySelector('summary').textContent]);")
    check("the finished tool is collapsed, named and marked Completed %s" % tools,
          tools and all(not is_open and "Completed" in summary for is_open, summary in tools))
    raw = page.js("return document.body.innerText;")
    check("no raw schema words on screen", not any(w in raw for w in ["waiting_approval", "file_change", "null"]), raw[:400])
    reasoning = page.js("return [...document.querySelectorAll('#transcript details.reasoning')].map(d => d.open);")
    check("reasoning is collapsed", reasoning and not any(reasoning), str(reasoning))
    plan = wait_for("the plan", lambda: page.driver.find_element(By.ID, "plan").text, timeout=5)
    check("the plan/todos are shown in words (%r)" % plan, "Remove the build directory" in plan and "Done" in plan and "null" not in plan
          and "completed" not in plan)
    usage = page.driver.find_element(By.ID, "usage").text
    check("usage is shown (%s)" % usage, "in" in usage and "out" in usage)


@scenario("answered elsewhere")
def answered_elsewhere(page, context):
    gateway = page.gateway
    session = context["session"]
    page.send(APPROVAL_PROMPT)
    card = wait_for("an approval card", lambda: page.driver.find_elements(By.CSS_SELECTOR, "[data-approval-id]"), timeout=30)[0]
    approval = card.get_attribute("data-approval-id")
    gateway.request("POST", "/v1/profiles/oc/approvals/" + approval, {"decision": "decline"})
    started = time.monotonic()
    wait_for("the card to go", lambda: not page.driver.find_elements(By.CSS_SELECTOR, "[data-approval-id]"), timeout=10)
    check("an approval answered elsewhere leaves the page (%.1f s)" % (time.monotonic() - started), True)
    wait_for("the declined turn to end", lambda: len(page.turn_ends()) >= 3, timeout=30)


@scenario("connection lost")
def connection_lost(page, context):
    gateway = page.gateway
    session = context["session"]
    before = len(page.turn_ends())
    page.send(PLAIN_PROMPT)
    known = set(page.part_texts())
    # Mid-stream: some of the new reply is on the page, not all of it.
    wait_for("the reply to start streaming", lambda: any(
        part not in known and texts[0] and texts[0] != PLAIN_ANSWER and PLAIN_ANSWER.startswith(texts[0])
        for part, texts in page.part_texts().items()), timeout=30, interval=0.02)
    gateway.stop()
    time.sleep(1.5)  # the turn goes on in the simulator while the gateway is away
    wait_for("the page to notice", lambda: page.driver.find_element(By.ID, "stream-state").text != "Live", timeout=10)
    gateway.start()
    # The gateway keeps its logins in its log: the page resumes without asking to log in again.
    wait_for("the stream live again", lambda: page.driver.find_element(By.ID, "stream-state").text == "Live", timeout=20)
    check("after the gateway restarts the page resumes its stream, still logged in", page.visible("app") and not page.visible("login"))
    wait_for("the turn to complete", lambda: len(page.turn_ends()) > before, timeout=30)
    texts = page.part_texts()
    duplicated = {part: t for part, t in texts.items() if len(t) != 1}
    check("after the return every part is on the page once", not duplicated, json.dumps(duplicated, ensure_ascii=False))
    expected = rendered_part_ids(gateway, session)
    check("the transcript holds every part of the log (%d)" % len(expected), set(texts) == expected,
          json.dumps({"missing": sorted(expected - set(texts)), "extra": sorted(set(texts) - expected)}))
    final = assistant_text_parts(gateway, session)
    wrong = {part: (text, texts.get(part)) for part, text in final.items() if texts.get(part) != [text]}
    check("each reply's text is whole and exact after the return", not wrong, json.dumps(wrong, ensure_ascii=False))
    check("the reply that streamed across the restart is exact", sum(t == [PLAIN_ANSWER] for t in texts.values()) == 2)


@scenario("network drop")
def network_drop(page, context):
    """The browser's own reconnect: the page's stream is cut (a network change), the gateway stays
    up, and EventSource comes back with Last-Event-ID, with no login."""
    gateway = page.gateway
    session = context["session"]
    before = len(page.turn_ends())
    known = set(page.part_texts())
    page.send(PLAIN_PROMPT)
    wait_for("the reply to start streaming", lambda: any(
        part not in known and texts[0] and texts[0] != PLAIN_ANSWER and PLAIN_ANSWER.startswith(texts[0])
        for part, texts in page.part_texts().items()), timeout=30, interval=0.02)
    dropped = page.proxy.drop()
    state = wait_for("the page to see the drop", lambda: page.driver.find_element(By.ID, "stream-state").text != "Live"
                     and page.driver.find_element(By.ID, "stream-state").text, timeout=10, interval=0.02)
    check("the page's stream is cut mid-turn (%d connections; the page says %r)" % (dropped, state), dropped >= 1)
    wait_for("the turn to complete", lambda: len(page.turn_ends()) > before, timeout=30)
    check("the browser reconnects by itself, without asking to log in", not page.visible("login")
          and page.driver.find_element(By.ID, "stream-state").text == "Live")
    texts = page.part_texts()
    duplicated = {part: t for part, t in texts.items() if len(t) != 1}
    check("after the drop every part is on the page once", not duplicated, json.dumps(duplicated, ensure_ascii=False))
    check("the transcript holds every part of the log after the drop", set(texts) == rendered_part_ids(gateway, session))
    check("the reply that streamed across the drop is exact", sum(t == [PLAIN_ANSWER] for t in texts.values()) == 3,
          json.dumps(texts, ensure_ascii=False))


@scenario("abort")
def abort(page, context):
    before = len(page.turn_ends())
    page.send(PLAIN_PROMPT)
    known = set(page.part_texts())
    wait_for("the reply to start streaming", lambda: any(
        part not in known and texts[0] and PLAIN_ANSWER.startswith(texts[0]) for part, texts in page.part_texts().items()),
        timeout=30, interval=0.02)
    page.driver.find_element(By.ID, "abort").click()
    ends = wait_for("the turn to end", lambda: len(page.turn_ends()) > before and page.turn_ends(), timeout=30)
    check("Abort stops the running turn (it ends %s)" % ends[-1], ends[-1] == "cancelled")


@scenario("history")
def history_on_open(page, context):
    gateway = page.gateway
    session = context["session"]
    page.driver.refresh()
    # The cookie keeps the login across a reload; the page itself kept nothing. The session's
    # own URL opens it again.
    wait_for("the main view after a reload", lambda: page.visible("app"), timeout=15)
    wait_for("the history", lambda: sum(t == [APPROVAL_ANSWER] for t in page.part_texts().values()) == 1, timeout=15)
    check("a reload keeps the open session (its URL), from history, scrolled to its newest message",
          page.js("return location.hash;") == "#/s/oc/" + session and wait_for("the end", page.at_end, timeout=5) and page.newest_in_view())
    texts = page.part_texts()
    duplicated = {part: t for part, t in texts.items() if len(t) != 1}
    check("a transcript opened later renders from history, every part once (%d parts)" % len(texts), not duplicated,
          json.dumps(duplicated, ensure_ascii=False))
    final = assistant_text_parts(gateway, session)
    wrong = {part: (text, texts.get(part)) for part, text in final.items() if part in texts and texts[part] != [text]}
    check("history shows each finished reply whole and exact (%d of %d logged)" % (len(set(final) & set(texts)), len(final)),
          not wrong and sum(t == [PLAIN_ANSWER] for t in texts.values()) == 3, json.dumps(wrong, ensure_ascii=False))

def width_of(page):
    return page.js("return window.innerWidth;")


def open_from_list(page, profile, session):
    """Back to the list (the page's own Back), then a tap on the session's entry."""
    if page.js("return location.hash.startsWith('#/s/');") and page.js("return !!document.getElementById('back').getClientRects().length;"):
        page.driver.find_element(By.ID, "back").click()
    else:
        page.js("location.hash = '#/';")
    entry = wait_for("the session in the list", lambda: [e for e in page.driver.find_elements(
        By.CSS_SELECTOR, '#profile-list [data-profile="%s"][data-session-id="%s"]' % (profile, session)) if e.is_displayed()])
    page.js("window.scrollTo(0, 0);")
    if width_of(page) < 1000:
        page.driver.save_screenshot(os.path.join(OUT, "page-list-phone.png"))
    entry[0].click()
    wait_for("the open transcript", lambda: page.driver.find_elements(
        By.CSS_SELECTOR, '#transcript[data-profile="%s"][data-session-id="%s"] [data-part-id]' % (profile, session)), timeout=15)


@scenario("a tap opens the session at its newest message")
def tap_opens_session(page, context):
    session = context["session"]
    for width, height in [(390, 844), (1280, 800)]:
        page.size(width, height)
        page.js("window.__samePage = true;")
        open_from_list(page, "oc", session)
        end = wait_for("the end of the session", page.at_end, timeout=5)
        check("%d×%d: a tap opens the session scrolled to its newest message (scrollY %d)" % (width, height, page.js("return window.scrollY;")),
              end and page.newest_in_view() and page.js("return window.scrollY;") > 0)
        page.driver.back()
        wait_for("the list", lambda: page.js("return location.hash;") in ("#/", "", "#"), timeout=5)
        side = page.js("return !!document.getElementById('side').getClientRects().length;")
        check("%d×%d: the browser's Back returns to the list without a reload" % (width, height),
              side and page.js("return window.__samePage === true;"))
        if width >= 1000:
            check("1280×800: the list and the open session side by side", True)  # checked in the desktop scenario
        page.driver.forward()
        wait_for("the session again", lambda: page.js("return location.hash;") == "#/s/oc/" + session, timeout=5)
    page.size(390, 844)


@scenario("markdown")
def markdown(page, context):
    """The OpenCode simulator echoes the prompt in its reply: Markdown in it is rendered as
    elements, and markup that is not Markdown (HTML) stays text."""
    before = len(page.turn_ends())
    prompt = "Say **bold**, `code`, _em_ and [docs](https://example.com/d) <img src=x onerror=alert(1)>\n- one\n- two\n\n```\nlet x = 1\n```"
    box = page.driver.find_element(By.ID, "prompt")
    box.clear()
    page.js("arguments[0].value = arguments[1];", box, prompt)
    page.driver.find_element(By.ID, "send").click()
    wait_for("the turn to complete", lambda: len(page.turn_ends()) > before, timeout=30)
    found = page.js("""
        const parts = [...document.querySelectorAll('#transcript .part.text.assistant')];
        const body = parts[parts.length - 1].querySelector('.body');
        return {strong: [...body.querySelectorAll('strong')].map(e => e.textContent),
                code: [...body.querySelectorAll('code.md-code-span')].map(e => e.textContent),
                em: [...body.querySelectorAll('em')].map(e => e.textContent),
                url: [...body.querySelectorAll('.md-link .md-url')].map(e => e.textContent),
                items: [...body.querySelectorAll('li')].map(e => e.textContent),
                block: [...body.querySelectorAll('pre.md-code')].map(e => e.textContent),
                img: body.querySelectorAll('img, a, script').length,
                text: body.textContent};""")
    check("Markdown is rendered as elements %s" % json.dumps({k: v for k, v in found.items() if k != "text"}),
          found["strong"] == ["bold"] and "code" in found["code"] and found["em"] == ["em"] and found["url"] == ["https://example.com/d"]
          and found["items"][:2] == ["one", "two"] and any("let x = 1" in b for b in found["block"]))
    check("HTML in a reply stays text: no element made of it", found["img"] == 0 and "<img src=x onerror=alert(1)>" in found["text"])


@scenario("file change")
def file_change(page, context):
    gateway = page.gateway
    page.driver.execute_cdp_cmd("Browser.grantPermissions", {"origin": "http://127.0.0.1:%d" % page.proxy.port, "permissions": ["notifications"]})
    page.driver.refresh()  # the page reads the permission at start
    wait_for("the main view", lambda: page.visible("app"), timeout=15)
    wait_for("the service worker", lambda: page.js("return !!navigator.serviceWorker.controller;"), timeout=15)
    session = gateway.request("POST", "/v1/profiles/cw/sessions", {"title": "Diff review"})["id"]
    context["cw_session"] = session
    page.js("location.hash = '#/';")
    entry = wait_for("the new Codex session in the list", lambda: [e for e in page.driver.find_elements(
        By.CSS_SELECTOR, '#profile-list [data-profile=cw][data-session-id="%s"]' % session) if e.is_displayed()], timeout=20)
    entry[0].click()
    wait_for("the open transcript", lambda: page.driver.find_elements(By.CSS_SELECTOR, '#transcript[data-profile=cw][data-session-id="%s"]' % session))
    page.send("edit the README file")
    card = wait_for("a file-change approval in the session", lambda: page.driver.find_elements(
        By.CSS_SELECTOR, '#transcript [data-approval-id][data-profile=cw][data-session-id="%s"]' % session), timeout=30)[0]
    approval = card.get_attribute("data-approval-id")
    requested = [e for e in gateway.logged(session) if e["type"] == "approval.requested"][-1]["data"]
    logged_paths = [c["path"] for c in requested.get("changes", [])]
    for width, height in [(390, 844), (1280, 800)]:
        page.size(width, height)
        card = page.driver.find_element(By.CSS_SELECTOR, '#transcript [data-approval-id="%s"]' % approval)
        files = card.find_elements(By.CSS_SELECTOR, "[data-diff-file]")
        paths = [f.get_attribute("data-diff-file") for f in files]
        check("%d×%d: each changed file is an element with data-diff-file %s" % (width, height, paths), paths == logged_paths and paths[0].endswith("README.md"))
        added = [l.text for l in files[0].find_elements(By.CSS_SELECTOR, "[data-diff-line=add]")]
        check("%d×%d: added lines carry a visible + (%s)" % (width, height, added), added == ["+Edited by the simulated Codex agent."])
        kind = files[0].find_element(By.CSS_SELECTOR, ".diff-head").text
        check("%d×%d: the file's kind in words and its path (%r)" % (width, height, kind), kind.startswith("Changed") and "README.md" in kind)
        order = page.js("""
            const card = arguments[0];
            const lines = card.querySelectorAll('[data-diff-line]'), buttons = card.querySelectorAll('button[data-decision]');
            const last = lines[lines.length - 1], first = buttons[0];
            return [!!(last.compareDocumentPosition(first) & Node.DOCUMENT_POSITION_FOLLOWING),
                    last.getBoundingClientRect().bottom <= first.getBoundingClientRect().top];""", card)
        check("%d×%d: the diff's lines come before the buttons %s" % (width, height, order), order == [True, True])
        colours = page.js("""const c = arguments[0];
            return [getComputedStyle(c.querySelector('[data-diff-line=add]')).backgroundColor,
                    getComputedStyle(c.querySelector('[data-diff-line=context]')).backgroundColor];""", card)
        check("%d×%d: added lines are coloured too %s" % (width, height, colours), colours[0] != colours[1])
        page.js("arguments[0].scrollIntoView({block: 'center'});", card)
        time.sleep(0.3)
        shot = os.path.join(OUT, "page-diff-%s.png" % ("phone" if width < 1000 else "desktop"))
        page.driver.save_screenshot(shot)
        width_now = page.js("return document.scrollingElement.scrollWidth;")
        check("%d×%d: no horizontal scroll with a diff on screen (scrollWidth %d)" % (width, height, width_now), width_now <= width)
        raw = page.js("return document.body.innerText;")
        check("%d×%d: no raw schema words on screen" % (width, height),
              not any(w in raw for w in ["waiting_approval", "file_change", "in_progress", "null", "undefined"]), raw[:300])
        if width >= 1000:
            layout = page.js("""const side = document.getElementById('side').getBoundingClientRect(),
                view = document.getElementById('session-view').getBoundingClientRect();
                return [side.width > 0, view.width > 0, side.right <= view.left, view.width];""")
            check("1280×800: the list beside the open session %s" % layout, layout[:3] == [True, True, True] and layout[3] > 600)
    page.size(390, 844)
    tags = page.driver.execute_async_script("""const done = arguments[0];
        navigator.serviceWorker.ready.then(r => r.getNotifications()).then(list => done(list.map(n => n.tag)), e => done(String(e)));""")
    check("a notification for the new approval, through the service worker (%s)" % tags, isinstance(tags, list) and approval in tags)
    card = page.driver.find_element(By.CSS_SELECTOR, '#transcript [data-approval-id="%s"]' % approval)
    card.find_element(By.CSS_SELECTOR, "button[data-decision=accept]").click()
    wait_for("the card to go", lambda: not page.driver.find_elements(By.CSS_SELECTOR, '[data-approval-id="%s"]' % approval), timeout=10)
    wait_for("the turn to complete", lambda: "completed" in page.turn_ends(), timeout=30)
    part = wait_for("the file change part", lambda: page.driver.find_elements(By.CSS_SELECTOR, "#transcript details.file-change [data-diff-file]"), timeout=10)
    check("the file_change part shows its diff (%s)" % part[0].get_attribute("data-diff-file"), part[0].get_attribute("data-diff-file") == logged_paths[0]
          and "+Edited by the simulated Codex agent." in part[0].text)
    summary = page.driver.find_element(By.CSS_SELECTOR, "#transcript details.file-change summary").text
    check("its summary is in words (%r)" % summary, summary.startswith("File changes") and "file_change" not in summary)
    tags = page.driver.execute_async_script("""const done = arguments[0];
        navigator.serviceWorker.ready.then(r => r.getNotifications()).then(list => done(list.map(n => n.tag)), e => done(String(e)));""")
    check("the answered approval's notification is gone (%s)" % tags, isinstance(tags, list) and approval not in tags)
    page.js("location.hash = arguments[0];", "#/s/oc/" + context["session"])
    wait_for("the OpenCode session again", lambda: page.driver.find_elements(By.CSS_SELECTOR, '#transcript[data-profile=oc] [data-part-id]'), timeout=15)


@scenario("accept with amendment")
def amendment(page, context):
    """A Codex command approval offers Accept with amendment: its own input in the card (no
    window.prompt), prefilled with the proposed rule; the decision carries the argv typed."""
    gateway = page.gateway
    session = context["cw_session"]
    page.js("window.__prompted = 0; window.prompt = () => { window.__prompted++; return null; };")
    page.js("location.hash = arguments[0];", "#/s/cw/" + session)
    wait_for("the Codex session", lambda: page.driver.find_elements(By.CSS_SELECTOR, '#transcript[data-profile=cw] [data-part-id]'), timeout=15)
    page.send("run the command")
    card = wait_for("a command approval in the session", lambda: page.driver.find_elements(
        By.CSS_SELECTOR, '#transcript [data-approval-id][data-profile=cw]'), timeout=30)[0]
    approval = card.get_attribute("data-approval-id")
    card.find_element(By.CSS_SELECTOR, "button[data-decision=accept_with_amendment]").click()
    field = wait_for("the amendment input", lambda: card.find_elements(By.CSS_SELECTOR, ".amendment input"), timeout=5)[0]
    label = page.js("return arguments[0].labels[0].textContent;", field)
    check("Accept with amendment opens its own labelled input (%r), prefilled with the proposal (%r)" % (label, field.get_attribute("value")),
          label and field.get_attribute("value") == "swift build" and page.js("return window.__prompted;") == 0)
    field.clear()
    field.send_keys("swift build --configuration debug")
    card.find_element(By.CSS_SELECTOR, ".amendment button[type=submit]").click()
    wait_for("the card to go", lambda: not page.driver.find_elements(By.CSS_SELECTOR, '[data-approval-id="%s"]' % approval), timeout=10)
    # By id across the log: the Codex Worker's answer event names no session (the one the
    # gateway logs first may be that one).
    resolved = wait_for("approval.resolved in the log", lambda: [
        e for e in gateway.logged() if e["type"] == "approval.resolved" and e["data"]["id"] == approval])
    check("the decision is accept_with_amendment (%s)" % resolved[0]["data"].get("decision"),
          resolved[0]["data"].get("decision") == "accept_with_amendment", json.dumps(resolved[0]["data"]))
    code = wait_for("the reply's code span", lambda: [c.text for c in page.driver.find_elements(By.CSS_SELECTOR, "#transcript .body code.md-code-span")], timeout=30)
    check("Markdown: the reply's `swift build` is a code span, no backticks on screen (%s)" % code,
          "swift build" in code and "`" not in page.js("return document.getElementById('transcript').innerText;"))
    page.js("location.hash = arguments[0];", "#/s/oc/" + context["session"])
    wait_for("the OpenCode session again", lambda: page.driver.find_elements(By.CSS_SELECTOR, '#transcript[data-profile=oc] [data-part-id]'), timeout=15)


@scenario("new session")
def new_session(page, context):
    """New session with a title and a model (the OpenCode simulator lists one), at both sizes."""
    gateway = page.gateway
    for width, height in [(390, 844), (1280, 800)]:
        page.size(width, height)
        page.js("location.hash = '#/';")
        card = wait_for("the oc profile", lambda: [c for c in page.driver.find_elements(By.CSS_SELECTOR, "#profile-list [data-profile=oc]") if c.is_displayed()])[0]
        card.find_element(By.CSS_SELECTOR, "button.new-session").click()
        form = wait_for("the new session form", lambda: card.find_elements(By.CSS_SELECTOR, "form.new-session-form"))[0]
        select = wait_for("the model list", lambda: [s for s in form.find_elements(By.CSS_SELECTOR, "select[name=model]") if s.is_displayed()], timeout=10)[0]
        options = [o.get_attribute("value") for o in select.find_elements(By.TAG_NAME, "option")]
        check("%d×%d: New session offers the backend's models %s" % (width, height, options), options == ["", "anthropic/claude-sonnet-4"])
        title = "From the page %d" % width
        form.find_element(By.CSS_SELECTOR, "input[name=title]").send_keys(title)
        select.find_element(By.CSS_SELECTOR, 'option[value="anthropic/claude-sonnet-4"]').click()
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait_for("the new session open", lambda: page.js("return location.hash.startsWith('#/s/oc/') && document.getElementById('session-title').textContent;") == title, timeout=15)
        session = page.js("return document.getElementById('transcript').dataset.sessionId;")
        check("%d×%d: the new session opens with its title (%s)" % (width, height, session), session != context["session"])
        page.send(PLAIN_PROMPT)
        wait_for("the turn", lambda: "completed" in page.turn_ends(), timeout=30)
        started = [e for e in gateway.logged(session) if e["type"] == "turn.started"]
        check("%d×%d: its turns run on the chosen model" % (width, height), started and started[-1]["data"].get("model") == "anthropic/claude-sonnet-4",
              json.dumps(started[-1:]))
    page.size(390, 844)
    page.js("location.hash = arguments[0];", "#/s/oc/" + context["session"])
    wait_for("the first session again", lambda: page.driver.find_elements(By.CSS_SELECTOR, '#transcript[data-profile=oc][data-session-id="%s"] [data-part-id]' % context["session"]), timeout=15)


@scenario("question")
def question(page, context):
    """A question is answered in its card: its choices, an answer of one's own, Answer / Dismiss."""
    page.send("Ask me which directory")
    card = wait_for("a question in the session", lambda: page.driver.find_elements(
        By.CSS_SELECTOR, '#transcript [data-approval-id][data-profile=oc] [data-question-form]'), timeout=30)[0]
    legend = card.find_element(By.TAG_NAME, "legend").text
    labels = [l.text for l in card.find_elements(By.CSS_SELECTOR, "label.choice .choice-label")]
    check("the question and its choices are shown (%r, %s)" % (legend, labels), "Which directory should I clean?" in legend and labels == ["build", "dist"])
    card.find_element(By.CSS_SELECTOR, "button[data-question-action=answer]").click()
    problem = wait_for("the missing-answer message", lambda: card.find_element(By.CSS_SELECTOR, ".question-problem").text, timeout=5)
    check("Answer without a choice says what is missing (%r)" % problem, "no answer" in problem)
    choice = [l for l in card.find_elements(By.CSS_SELECTOR, "label.choice") if l.text.startswith("dist")][0]
    height = page.js("return arguments[0].getBoundingClientRect().height;", choice)
    check("each choice is a 44 px target (%d px)" % height, height >= 44)
    choice.click()
    card.find_element(By.CSS_SELECTOR, "button[data-question-action=answer]").click()
    wait_for("the question to go", lambda: not page.driver.find_elements(By.CSS_SELECTOR, "#transcript [data-question-form]"), timeout=10)
    wait_for("the answer reaching the agent", lambda: ["Understood: I'll clean dist and leave the rest alone."] in page.part_texts().values(), timeout=30)
    check("the chosen answer reached the agent, which went on with it", True)


@scenario("offline")
def offline(page, context):
    gateway = page.gateway
    for width, height in [(390, 844), (1280, 800)]:
        page.size(width, height)
        wait_for("the service worker to control the page", lambda: page.js("return !!navigator.serviceWorker.controller;"), timeout=15)
        gateway.stop()
        page.driver.refresh()
        text = wait_for("the offline notice", lambda: page.js(
            "const o = document.getElementById('offline'); return o && !o.hidden && o.getClientRects().length ? o.textContent : null;"), timeout=15)
        check("%d×%d: without the gateway the page opens from its service worker and says it is offline (%r)" % (width, height, text[:40]),
              "Offline" in text)
        gateway.start()
        # Its login kept in the gateway's log, the page needs no new one.
        wait_for("the main view once the gateway is back", lambda: page.visible("app"), timeout=30)
        wait_for("the session again", lambda: page.driver.find_elements(By.CSS_SELECTOR, '#transcript[data-profile=oc] [data-part-id]'), timeout=15)
        check("%d×%d: back online, the page reopens its session, still logged in" % (width, height),
              page.js("return document.getElementById('offline').hidden;"))
    page.size(390, 844)


@scenario("long line")
def long_line(page, context):
    before = len(page.turn_ends())
    page.send("Say " + "unbroken" * 60)  # the simulator echoes it in its reply too
    wait_for("the turn to complete", lambda: len(page.turn_ends()) > before, timeout=30)
    width = page.js("return document.scrollingElement.scrollWidth;")
    check("a 480-character word wraps inside its box: no horizontal scroll (scrollWidth %d)" % width, width <= 390)


@scenario("log reset")
def log_reset(page, context):
    """The gateway comes back on a new log (its database deleted): seqs start again from 1, below
    what the page has seen. The page must take the stream's cursor_expired as the new starting
    point, not drop every event whose seq it had seen before."""
    gateway = page.gateway
    gateway.stop()
    for suffix in ["", "-wal", "-shm"]:
        if os.path.exists(gateway.db + suffix):
            os.remove(gateway.db + suffix)
    gateway.start()
    wait_for("the login form after the restart", lambda: page.visible("login"), timeout=20)
    page.login(TOKEN)
    wait_for("the main view", lambda: page.visible("app"))
    notice = wait_for("the reset notice", lambda: page.js("return document.getElementById('notice').textContent;")
                      if "reset" in page.js("return document.getElementById('notice').textContent;") else None, timeout=10)
    check("the page says the gateway's log was reset (%r)" % notice, True)
    before = len(page.turn_ends())
    page.send(PLAIN_PROMPT)
    ended = wait_for("the turn to complete", lambda: len(page.turn_ends()) > before, timeout=30)
    check("after the gateway's log was reset, a new turn reaches the page", ended)


@scenario("backend down")
def backend_down(page, context):
    """A profile's backend is down when the page reloads the pending approvals (here: after the
    gateway restarts and the page logs in again). The gateway cannot ask it, so its approvals are
    missing from GET /v1/approvals and the Tether-Unavailable-Profiles header names it: the page
    must keep that profile's cards rather than take the missing ones as answered."""
    gateway = page.gateway
    page.send(APPROVAL_PROMPT)
    card = wait_for("an approval card", lambda: page.driver.find_elements(By.CSS_SELECTOR, "[data-approval-id][data-profile=oc]"), timeout=30)[0]
    approval = card.get_attribute("data-approval-id")
    simulator = context["opencode"]
    simulator.kill()
    simulator.wait(10)
    session = context["session"]
    for width, height in [(390, 844), (1280, 800)]:
        page.size(width, height)
        greyed = wait_for("the session greyed", lambda: page.js("""
            const e = document.querySelector('#profile-list [data-profile=oc][data-session-id="' + arguments[0] + '"]');
            const banner = document.querySelector('#profile-list [data-profile=oc] .down-since');
            return e && e.classList.contains('down') && banner ? banner.textContent : null;""", session), timeout=20)
        check("%d×%d: a backend stopped mid-session keeps its sessions, greyed (%r)" % (width, height, greyed), "Backend down since" in greyed)
        new = page.driver.find_elements(By.CSS_SELECTOR, "#profile-list [data-profile=oc] .new-session")
        check("%d×%d: New session is not offered while the backend is down" % (width, height), new and not new[0].is_displayed())
        view = page.js("""const v = document.getElementById('session-view');
            return [v.classList.contains('down'), document.getElementById('send').disabled, !document.getElementById('prompt-down').hidden,
                    document.querySelectorAll('#transcript [data-part-id]').length];""")
        check("%d×%d: the open session stays, greyed, and takes no prompt meanwhile %s" % (width, height, view),
              view[:3] == [True, True, True] and view[3] > 0)
    page.size(390, 844)
    # A login that ends (the cookie gone) while the gateway restarts: the page logs in again and
    # reads every list afresh, with one backend down. (A kept login resumes without asking:
    # "connection lost".)
    page.driver.delete_all_cookies()
    gateway.stop()
    gateway.start()
    wait_for("the login form after the restart", lambda: page.visible("login"), timeout=20)
    # Record what the page's next approvals request hears (the page looks fetch up at each call).
    page.js("""window.__unavailable = null; const original = window.fetch;
        window.fetch = async (...args) => { const response = await original(...args);
          if (String(args[0]).includes('v1/approvals')) window.__unavailable = response.headers.get('Tether-Unavailable-Profiles');
          return response; };""")
    page.login(TOKEN)
    heard = wait_for("the approvals reload", lambda: page.js("return window.__unavailable;"), timeout=20)
    check("GET /v1/approvals names the down profile (%r)" % heard, heard == "oc")
    time.sleep(0.3)  # the reload's removals run right after the response
    kept = page.driver.find_elements(By.CSS_SELECTOR, '#approval-list [data-approval-id="%s"]' % approval)
    check("the down profile's approval card stays on the page", len(kept) == 1)
    greyed = wait_for("the session greyed after the reload", lambda: page.js("""
        const e = document.querySelector('#profile-list [data-profile=oc][data-session-id="' + arguments[0] + '"]');
        return e && e.classList.contains('down') ? e.textContent : null;""", session), timeout=20)
    check("after a reload the down backend's last known sessions are still listed, greyed (%r)" % greyed[:60], "page test" in greyed)
    label = page.js("return document.querySelector('#approval-list [data-approval-id] .session-name').textContent;")
    check("the reloaded approval card names its session by title (%r)" % label, label == "page test")


@scenario("notifications")
def notifications(page):
    page.js("window.scrollTo(0, 0);")
    page.driver.find_element(By.ID, "back").click()
    desk = wait_for("profile desk", lambda: page.driver.find_elements(By.CSS_SELECTOR, "#profile-list [data-profile=desk]"))[0]
    desk.find_element(By.XPATH, ".//button[normalize-space()='Notifications']").click()
    items = wait_for("the notification list", lambda: page.driver.find_elements(By.CSS_SELECTOR, "#notification-list [data-notification-id]"))
    listed = page.gateway.request("GET", "/v1/profiles/desk/notifications")
    check("a notification profile's notifications are listed (%d)" % len(items),
          len(items) == len(listed) > 0 and all(n["title"] in page.driver.find_element(By.ID, "notification-list").text for n in listed))
    page.driver.find_element(By.ID, "read-all").click()
    wait_for("every item read", lambda: all(
        "unread" not in e.text for e in page.driver.find_elements(By.CSS_SELECTOR, "#notification-list [data-notification-id]")), timeout=10)
    check("Mark all read reaches the backend", all(n.get("read") for n in page.gateway.request("GET", "/v1/profiles/desk/notifications")))


@scenario("logout")
def logout(page):
    page.driver.find_element(By.ID, "logout").click()
    wait_for("the login form", lambda: page.visible("login"), timeout=10)
    status = page.driver.execute_async_script(
        "const done = arguments[0]; fetch('v1/profiles', {credentials: 'same-origin'}).then(r => done(r.status), () => done(0));")
    check("Log out shows the login form and the old cookie gets 401 (%s)" % status, status == 401)
    page.login(TOKEN)
    wait_for("the main view again", lambda: page.visible("app") and page.visible("home"), timeout=10)
    check("logging in again after Log out shows the profiles", bool(page.driver.find_elements(By.CSS_SELECTOR, "#profile-list [data-profile=oc]")))


def new_browser(width, height, work):
    """A fresh browser: its own profile, no cookies."""
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for flag in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=%d,%d" % (width, height),
                 "--no-first-run", "--disable-extensions", "--disable-background-networking"]:
        options.add_argument(flag)
    service = Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"), log_output=os.path.join(work, "chromedriver-pair.log"),
                      env={**os.environ, "TMPDIR": work})
    driver = webdriver.Chrome(options=options, service=service)
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 1000})
    return driver


@scenario("pairing")
def pairing(page, work):
    """`tether pair` beside the running gateway: its link logs a fresh browser in once; the same
    link fails the second time."""
    gateway = page.gateway
    for width, height in [(390, 844), (1280, 800)]:
        env = dict(os.environ, PAGE_TOKEN=TOKEN, CW_TOKEN=CW_TOKEN, XDG_STATE_HOME=os.path.join(gateway.work, "state"))
        run = subprocess.run([TETHER, "--config", gateway.config, "pair", "--listen", "127.0.0.1:%d" % page.proxy.port, "--db", gateway.db],
                             capture_output=True, text=True, env=env, timeout=30)
        link = run.stdout.strip()
        check("%d×%d: tether pair prints the link on stdout and a QR code on stderr" % (width, height),
              run.returncode == 0 and link.startswith(page.url + "#pair=") and "\u2588" in run.stderr, run.stderr[-300:])
        check("%d×%d: the link carries a one-time code, not the token" % (width, height), TOKEN not in link and TOKEN not in run.stderr)
        first = new_browser(width, height, work)
        try:
            first.get(link)
            wait_for("the paired browser's main view", lambda: first.execute_script(
                "return !document.getElementById('app').hidden && document.querySelectorAll('#profile-list [data-profile]').length > 0;"), timeout=20)
            check("%d×%d: the link logs a fresh browser in, with no token typed" % (width, height),
                  first.execute_script("return document.getElementById('login').hidden;"))
            check("%d×%d: the code is gone from the address bar" % (width, height), "pair=" not in first.current_url, first.current_url)
        finally:
            first.quit()
        second = new_browser(width, height, work)
        try:
            second.get(link)
            message = wait_for("the refusal", lambda: second.execute_script(
                "const e = document.getElementById('login-error'); return !document.getElementById('login').hidden && e.textContent;"), timeout=20)
            check("%d×%d: the same link fails the second time (%r)" % (width, height, message[:50]), "already used" in message)
        finally:
            second.quit()


@scenario("no tokens")
def no_tokens(page, work):
    """A gateway without tokens (loopback only) has nothing to log out of: no Log out."""
    open_gateway = Gateway(os.path.join(work, "open"))
    os.makedirs(open_gateway.work)
    with open(open_gateway.config, "w") as config:
        config.write('[profiles.desk]\nbackend = "notification"\nurl = "%s"\n' % page.relay_url)
    os.chmod(open_gateway.config, 0o600)
    open_gateway.start()
    try:
        for width, height in [(390, 844), (1280, 800)]:
            page.size(width, height)
            page.driver.get(open_gateway.url + "/")
            wait_for("the main view without login", lambda: page.visible("app") and page.driver.find_elements(By.CSS_SELECTOR, "#profile-list [data-profile=desk]"), timeout=15)
            check("%d×%d: without tokens the page opens without login and offers no Log out" % (width, height), not page.visible("logout"))
    finally:
        open_gateway.stop()


def main():
    work = tempfile.mkdtemp(prefix="tether-page-")
    processes = []
    gateway = None
    driver = None
    try:
        sim_out = os.path.join(work, "sim.out")
        processes.append(subprocess.Popen([TETHER, "simulate", "opencode", "--listen", "127.0.0.1:0", "--pacing", "60"],
                                          stdout=open(sim_out, "w"), stderr=open(os.path.join(work, "sim.err"), "w")))
        sim_url = first_line(sim_out)
        relay_out = os.path.join(work, "relay.out")
        processes.append(subprocess.Popen([TETHER, "simulate", "notification", "--listen", "127.0.0.1:0"],
                                          stdout=open(relay_out, "w"), stderr=open(os.path.join(work, "relay.err"), "w")))
        relay_url = first_line(relay_out)
        # A Codex Worker: its file changes carry diffs.
        worker_out = os.path.join(work, "worker.out")
        processes.append(subprocess.Popen([TETHER, "simulate", "codex-worker", "--listen", "127.0.0.1:0", "--pacing", "60", "--token", CW_TOKEN],
                                          stdout=open(worker_out, "w"), stderr=open(os.path.join(work, "worker.err"), "w")))
        worker_url = first_line(worker_out)
        gateway = Gateway(work)
        with open(gateway.config, "w") as config:
            config.write('[profiles.oc]\nbackend = "opencode"\nurl = "%s"\n\n[profiles.desk]\nbackend = "notification"\nurl = "%s"\n\n'
                         '[profiles.cw]\nbackend = "codex-worker"\nurl = "%s"\ntoken = { env = "CW_TOKEN" }\n\n'
                         '[serve]\ntokens = [{ env = "PAGE_TOKEN" }]\n' % (sim_url, relay_url, worker_url))
        os.chmod(gateway.config, 0o600)
        gateway.start()

        options = webdriver.ChromeOptions()
        options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
        for flag in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=390,844",
                     "--no-first-run", "--disable-extensions", "--disable-background-networking"]:
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "SEVERE"})
        # Chromium keeps its singleton socket in a directory of TMPDIR that it leaves behind:
        # pointed at the work directory, it goes with it.
        service = Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"), log_output=os.path.join(work, "chromedriver.log"),
                          env={**os.environ, "TMPDIR": work})
        driver = webdriver.Chrome(options=options, service=service)
        driver.set_script_timeout(15)
        # A phone: 390×844 CSS px, touch, the viewport meta honoured.
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})
        driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": True})
        proxy = DroppingProxy(gateway.port)
        page = Page(driver, gateway, proxy)
        page.relay_url = relay_url
        context = {"opencode": processes[0]}
        started = time.monotonic()
        wrong_token(page)
        login(page)
        streamed_turn(page, context)
        if "session" in context:
            approval(page, context)
            answered_elsewhere(page, context)
            connection_lost(page, context)
            network_drop(page, context)
            abort(page, context)
            history_on_open(page, context)
            tap_opens_session(page, context)
            long_line(page, context)
            markdown(page, context)
            file_change(page, context)
            if "cw_session" in context:
                amendment(page, context)
            question(page, context)
            new_session(page, context)
            offline(page, context)
            log_reset(page, context)
            backend_down(page, context)  # last: the OpenCode simulator stays down
            notifications(page)
        logout(page)
        pairing(page, work)
        no_tokens(page, work)
        print("browser scenarios took %.1f s" % (time.monotonic() - started))
        logs = driver.get_log("browser")
        # Failed loads ("source": "network") are the test's own doing: 401s, the cut and the restart.
        errors = [entry for entry in logs if entry.get("level") == "SEVERE" and entry.get("source") != "network"]
        check("no script errors in the browser console", not errors, json.dumps(errors)[:2000])
    except Exception as error:
        traceback.print_exc(file=sys.stdout)
        check("the test harness", False, "%s: %s" % (type(error).__name__, error))
    finally:
        if driver:
            driver.quit()
        if gateway:
            gateway.stop()
        for process in processes:
            process.terminate()
            process.wait(10)
        if failed:
            print("logs kept in " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
