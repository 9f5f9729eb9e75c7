"""Drives `tether acp` with the real ACP client library (PyPI agent-client-protocol) against one
backend simulator, as an editor would. Prints one `PASS: …` or `FAIL: …` line per check.

Usage: acp_driver.py --tether BIN --config FILE --profile NAME --backend NAME --cwd DIR --logs DIR
       --plain TEXT --approval TEXT --cancel TEXT --secret S [--secret S]...
"""
import argparse
import asyncio
import json
import logging
import os
import subprocess
import sys
import time

from acp import spawn_agent_process, text_block
from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse
from acp.connection import StreamDirection
from acp.exceptions import RequestError

logging.basicConfig(level=logging.CRITICAL)  # the library logs the $/cancel_request it does not route

ARGS = None
RESULTS = []


def check(ok, what, detail=""):
    RESULTS.append(bool(ok))
    line = ("PASS: " if ok else "FAIL: ") + f"[{ARGS.backend}] {what}"
    if not ok and detail:
        line += f" — {detail}"
    print(line, flush=True)
    return ok


def kind_of(update):
    return getattr(update, "session_update", None)


def agent_text(updates, kind="agent_message_chunk"):
    return "".join(u.content.text for u in updates if kind_of(u) == kind and getattr(u.content, "text", None) is not None)


class Editor:
    """The client side: records updates and answers permission requests with `policy`."""

    def __init__(self):
        self.updates = {}
        self.requests = []
        self.policy = None

    def on_connect(self, conn):
        self.conn = conn

    async def session_update(self, session_id, update, **kwargs):
        self.updates.setdefault(session_id, []).append(update)

    async def request_permission(self, options, session_id, tool_call, **kwargs):
        before = list(self.updates.get(session_id, []))
        announced = any(kind_of(u) == "tool_call" and u.tool_call_id == tool_call.tool_call_id for u in before)
        request = {"session": session_id, "tool_call": tool_call, "options": options, "announced": announced}
        self.requests.append(request)
        return await self.policy(request)


def select(request, kind):
    option = next((o for o in request["options"] if o.kind == kind), None)
    if option is None:
        return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
    return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option.option_id))


def tether(*args, timeout=60):
    return subprocess.run([ARGS.tether, "--config", ARGS.config, "-p", ARGS.profile, "-o", "jsonl", *args],
                          capture_output=True, text=True, timeout=timeout)


def history_assistant_text(session):
    """The last turn's assistant text, as `tether history` (another process) reads it."""
    result = tether("history", session)
    turns, current = [], []
    for line in result.stdout.splitlines():
        event = json.loads(line)
        if event["type"] == "turn.started":
            current = []
            turns.append(current)
        data = event.get("data", {})
        if event["type"] == "part.completed" and data.get("kind") == "text" and data.get("role") == "assistant":
            current.append(data.get("text", ""))
    return "".join(turns[-1]) if turns else None


async def spawn(editor, log_name, protocol):
    stderr = open(os.path.join(ARGS.logs, log_name), "w")

    def observe(event):
        protocol.append((event.direction, event.message))

    context = spawn_agent_process(editor, ARGS.tether, "--config", ARGS.config, "-p", ARGS.profile, "-v", "acp",
                                  cwd=ARGS.cwd, transport_kwargs={"stderr": stderr.fileno(), "limit": 16 * 1024 * 1024},
                                  observers=[observe])
    return context, stderr


def tool_updates(updates, tool_call_id):
    return [u for u in updates if kind_of(u) in ("tool_call", "tool_call_update") and u.tool_call_id == tool_call_id]


async def prompt(conn, editor, session, text, timeout=60):
    start = len(editor.updates.get(session, []))
    response = await asyncio.wait_for(conn.prompt(session_id=session, prompt=[text_block(text)]), timeout)
    return response, editor.updates.get(session, [])[start:]


async def approval_turn(conn, editor, session, choose, expect_status, label):
    async def policy(request):
        return select(request, choose)

    editor.policy = policy
    asked = len(editor.requests)
    response, updates = await prompt(conn, editor, session, ARGS.approval)
    requests = editor.requests[asked:]
    if not check(len(requests) == 1, f"{label}: one session/request_permission", f"{len(requests)} requests"):
        return
    request = requests[0]
    kinds = sorted(o.kind for o in request["options"])
    check({"allow_once", "allow_always", "reject_once"} <= set(kinds) and set(kinds) <= {"allow_once", "allow_always", "reject_once"},
          f"{label}: options are allow_once, allow_always, reject_once", f"{kinds}")
    check(request["announced"], f"{label}: the tool_call came before its permission request",
          f"{request['tool_call'].tool_call_id}")
    check(response.stop_reason == "end_turn", f"{label}: stop reason end_turn", response.stop_reason)
    statuses = [u.status for u in tool_updates(updates, request["tool_call"].tool_call_id) if u.status]
    check(statuses and statuses[-1] == expect_status, f"{label}: the tool call ends {expect_status}", f"{statuses}")


# The approvals that were questions: their answers are not among the decisions checked below.
QUESTION_APPROVALS = set()


def sent_approvals():
    """(approval id, outcome) of every answer tether acp logged as sent, in order."""
    path = os.path.join(ARGS.logs, "acp-a.log")
    if not os.path.exists(path):
        return []
    entries = []
    for line in open(path):
        if "[TetherACP] approval " in line and line.rstrip().endswith(" sent"):
            approval, _, outcome = line.split("approval ", 1)[1].strip().partition(": ")
            entries.append((approval, outcome))
    return entries


async def question_turn(conn, editor, session):
    """A question the backend answers: one permission request whose options are its choices
    (and a reject_once to dismiss it); the chosen label reaches the agent."""
    async def policy(request):
        option = next((o for o in request["options"] if o.name == ARGS.question_answer), None)
        if option is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option.option_id))

    editor.policy = policy
    asked = len(editor.requests)
    answered = len(sent_approvals())
    response, updates = await prompt(conn, editor, session, ARGS.question)
    QUESTION_APPROVALS.update(approval for approval, _ in sent_approvals()[answered:])
    requests = editor.requests[asked:]
    if not check(len(requests) == 1, "question: one session/request_permission", f"{len(requests)} requests"):
        return
    names = [o.name for o in requests[0]["options"]]
    kinds = [o.kind for o in requests[0]["options"]]
    check(ARGS.question_answer in names and kinds[-1] == "reject_once",
          "question: its choices are the options, and one dismisses it", f"{list(zip(names, kinds))}")
    check(response.stop_reason == "end_turn", "question: stop reason end_turn", response.stop_reason)
    check(ARGS.question_answer in agent_text(updates), "question: the chosen answer reached the agent", agent_text(updates))


async def run():
    protocol = []
    editor = Editor()
    context, stderr_a = await spawn(editor, "acp-a.log", protocol)
    async with context as (conn, process):
        init = await asyncio.wait_for(conn.initialize(protocol_version=1), 30)
        check(init.protocol_version == 1 and init.agent_info and init.agent_info.name == "tether"
              and init.agent_capabilities.load_session and init.agent_capabilities.session_capabilities.list is not None
              and not init.auth_methods, "initialize: version 1, agentInfo tether, loadSession, session list, no auth",
              repr(init))

        created = await asyncio.wait_for(conn.new_session(cwd=ARGS.cwd, mcp_servers=[]), 30)
        session = created.session_id
        check(bool(session), f"session/new → {session}")

        # A plain prompt: the streamed text is exactly the turn's text as the backend keeps it.
        response, updates = await prompt(conn, editor, session, ARGS.plain)
        streamed = agent_text(updates)
        check(response.stop_reason == "end_turn", "plain prompt: stop reason end_turn", response.stop_reason)
        expected = history_assistant_text(session)
        check(streamed and streamed == expected, "plain prompt: the streamed text is exact",
              f"streamed {streamed!r}, backend {expected!r}")
        check(not any(kind_of(u) == "user_message_chunk" for u in updates), "plain prompt: the user's text is not echoed")

        await approval_turn(conn, editor, session, "allow_once", "completed", "allow_once")
        if ARGS.question:
            await question_turn(conn, editor, session)
        await approval_turn(conn, editor, session, "reject_once", "failed", "reject_once")

        # An approval answered by `tether approve` in another process while the request is open.
        withdrawn = asyncio.Event()
        answered_elsewhere = {}

        def watch_cancel(event):
            if event.direction == StreamDirection.INCOMING and event.message.get("method") == "$/cancel_request":
                answered_elsewhere.setdefault("cancelled", []).append(event.message.get("params", {}).get("requestId"))
                withdrawn.set()
        conn._conn.add_observer(watch_cancel)
        request_ids = {}

        def remember_request(event):
            message = event.message
            if event.direction == StreamDirection.INCOMING and message.get("method") == "session/request_permission":
                request_ids[message["params"]["toolCall"]["toolCallId"]] = message["id"]
        conn._conn.add_observer(remember_request)

        async def elsewhere(request):
            listed = await asyncio.to_thread(tether, "approvals", "--session", session)
            ids = [json.loads(l)["data"]["id"] for l in listed.stdout.splitlines() if '"approval.requested"' in l]
            answered_elsewhere["ids"] = ids
            if ids:
                approved = await asyncio.to_thread(tether, "approve", ids[0], "--decision", "accept")
                answered_elsewhere["status"] = approved.returncode
            try:
                await asyncio.wait_for(withdrawn.wait(), 30)
            except asyncio.TimeoutError:
                pass
            # The editor answers late; the agent must send nothing more to the backend.
            return select(request, "allow_once")

        editor.policy = elsewhere
        asked = len(editor.requests)
        response, updates = await prompt(conn, editor, session, ARGS.approval, timeout=90)
        await asyncio.sleep(1.0)  # let the late answer reach tether
        check(answered_elsewhere.get("status") == 0, "approved elsewhere: `tether approve` succeeded",
              f"{answered_elsewhere}")
        request = editor.requests[asked] if len(editor.requests) > asked else None
        request_id = request_ids.get(request["tool_call"].tool_call_id) if request else None
        check(request_id is not None and request_id in answered_elsewhere.get("cancelled", []),
              "approved elsewhere: the editor's request was withdrawn with $/cancel_request",
              f"request {request_id}, cancelled {answered_elsewhere.get('cancelled')}")
        check(response.stop_reason == "end_turn", "approved elsewhere: stop reason end_turn", response.stop_reason)
        if request:
            statuses = [u.status for u in tool_updates(updates, request["tool_call"].tool_call_id) if u.status]
            check(statuses and statuses[-1] == "completed", "approved elsewhere: the tool completes", f"{statuses}")
        approval_id = (answered_elsewhere.get("ids") or ["?"])[0]
        stderr_a.flush()
        sent = [l for l in open(os.path.join(ARGS.logs, "acp-a.log")) if f"approval {approval_id}:" in l and " sent" in l]
        check(not sent, "approved elsewhere: the late editor answer sent no decision", f"{sent}")

        # session/cancel mid-turn → cancelled within 10 s, and nothing after the answer.
        cancelled_at = {}

        async def cancel_then_dismiss(request):
            cancelled_at["t"] = time.monotonic()
            await conn.cancel(session_id=session)
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

        editor.policy = cancel_then_dismiss
        start = len(editor.updates.get(session, []))
        turn = asyncio.create_task(conn.prompt(session_id=session, prompt=[text_block(ARGS.cancel)]))
        deadline = time.monotonic() + 30
        while "t" not in cancelled_at and not turn.done() and time.monotonic() < deadline:
            if agent_text(editor.updates.get(session, [])[start:]):
                cancelled_at["t"] = time.monotonic()
                await conn.cancel(session_id=session)
                break
            await asyncio.sleep(0.05)
        try:
            response = await asyncio.wait_for(turn, 15)
            elapsed = time.monotonic() - cancelled_at.get("t", time.monotonic())
            check(response.stop_reason == "cancelled" and elapsed < 10, "session/cancel mid-turn: cancelled within 10 s",
                  f"{response.stop_reason} after {elapsed:.1f} s")
        except Exception as error:  # noqa: BLE001
            check(False, "session/cancel mid-turn: cancelled within 10 s", repr(error))
        count = len(editor.updates.get(session, []))
        await asyncio.sleep(1.5)
        check(len(editor.updates.get(session, [])) == count, "session/cancel: no update after the prompt's answer")

        # A failed turn is a JSON-RPC error carrying the backend's message.
        try:
            response, _ = await prompt(conn, editor, session, ARGS.fail)
            check(False, "failed turn → JSON-RPC error", f"answered {response.stop_reason}")
        except RequestError as error:
            message = str(error)
            check(message.startswith("the turn failed: ") and len(message) > len("the turn failed: ") + 3
                  and "no reason" not in message, f"failed turn → JSON-RPC error with the backend's message ({message})",
                  repr(error))

        # A session the backend does not know: an error that says what failed.
        try:
            await asyncio.wait_for(conn.load_session(cwd=ARGS.cwd, session_id="no-such-session", mcp_servers=[]), 30)
            check(False, "session/load of an unknown session → JSON-RPC error", "it answered")
        except RequestError as error:
            check("loading session no-such-session failed" in str(error),
                  "session/load of an unknown session → JSON-RPC error naming it", repr(error))

        listed = await asyncio.wait_for(conn.list_sessions(), 30)
        check(any(s.session_id == session for s in listed.sessions), "session/list lists the session")

        # EOF: exit 0 within 5 s.
        process.stdin.write_eof()
        eof_at = time.monotonic()
        try:
            code = await asyncio.wait_for(process.wait(), 5)
            check(code == 0, f"EOF on stdin: exit 0 within 5 s ({time.monotonic() - eof_at:.1f} s)", f"exit {code}")
        except asyncio.TimeoutError:
            check(False, "EOF on stdin: exit 0 within 5 s", "still running after 5 s")

    # Exactly one decision per answered request: allow_once's accept and reject_once's decline.
    # Not the late answer to the request withdrawn, not the `cancelled` that came with session/cancel.
    stderr_a.close()
    decisions = [f"{approval}: {outcome}" for approval, outcome in sent_approvals() if approval not in QUESTION_APPROVALS]
    check([d.split(": ")[-1] for d in decisions] == ["accept sent", "decline sent"],
          "decisions sent to the backend: exactly accept then decline", f"{decisions}")

    # A second editor loads the session: the history replays, each message once, then the answer.
    loader = Editor()
    context, _ = await spawn(loader, "acp-b.log", protocol)
    async with context as (conn, process):
        await asyncio.wait_for(conn.initialize(protocol_version=1), 30)
        # This editor has not opened the session yet: no prompt, no updates for it.
        try:
            await asyncio.wait_for(conn.prompt(session_id=session, prompt=[text_block(ARGS.plain)]), 30)
            check(False, "a session this editor did not open or load is refused", "the prompt ran")
        except RequestError as error:
            check("not open on this connection" in str(error) and not loader.updates,
                  "a session this editor did not open or load is refused, with no update", str(error))
        await asyncio.wait_for(conn.load_session(cwd=ARGS.cwd, session_id=session, mcp_servers=[]), 30)
        replayed = list(loader.updates.get(session, []))
        users = agent_text(replayed, "user_message_chunk")
        agents = agent_text(replayed)
        check(users.count(ARGS.plain) == 1, "session/load replays the user's prompt once", f"{users!r}")
        check(streamed and agents.count(streamed) == 1, "session/load replays the earlier reply once", f"{agents[:300]!r}")
        await asyncio.sleep(1.0)
        check(len(loader.updates.get(session, [])) == len(replayed), "session/load: nothing after the answer")

    # Nothing secret on stdout (the protocol) or stderr (the logs).
    transcript = json.dumps([m for _, m in protocol])
    logs = "".join(open(os.path.join(ARGS.logs, name)).read() for name in ("acp-a.log", "acp-b.log"))
    for secret in ARGS.secret:
        check(secret not in transcript and secret not in logs, "no secret on stdout or stderr")


async def raw_bad_input():
    """Garbage, an unknown method, then initialize on one stdin; then EOF."""
    process = await asyncio.create_subprocess_exec(
        ARGS.tether, "--config", ARGS.config, "-p", ARGS.profile, "acp", cwd=ARGS.cwd,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(os.path.join(ARGS.logs, "acp-raw.log"), "w"))
    process.stdin.write(b"this is not json\n")
    process.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"no/such/method","params":{}}\n')
    process.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}\n')
    await process.stdin.drain()
    lines = []
    try:
        for _ in range(3):
            lines.append(json.loads(await asyncio.wait_for(process.stdout.readline(), 20)))
    except Exception as error:  # noqa: BLE001
        check(False, "garbage on stdin", f"{error!r} after {lines}")
    by_id = {json.dumps(l.get("id")): l for l in lines}
    parse = by_id.get("null", {})
    check(parse.get("error", {}).get("code") == -32700 and parse.get("jsonrpc") == "2.0",
          "garbage on stdin → -32700 with id null", f"{lines}")
    check(by_id.get("1", {}).get("error", {}).get("code") == -32601, "unknown method → -32601", f"{lines}")
    check(by_id.get("2", {}).get("result", {}).get("protocolVersion") == 1, "after garbage the process keeps serving",
          f"{lines}")
    process.stdin.close()
    try:
        code = await asyncio.wait_for(process.wait(), 5)
        check(code == 0, "EOF after garbage: exit 0 within 5 s", f"exit {code}")
    except asyncio.TimeoutError:
        process.kill()
        check(False, "EOF after garbage: exit 0 within 5 s", "still running")


async def raw_lines(process, count, timeout=20):
    lines = []
    for _ in range(count):
        lines.append(json.loads(await asyncio.wait_for(process.stdout.readline(), timeout)))
    return lines


async def raw_eof_mid_turn():
    """The editor quits while a turn waits for its approval: exit 0 within 5 s all the same."""
    process = await asyncio.create_subprocess_exec(
        ARGS.tether, "--config", ARGS.config, "-p", ARGS.profile, "acp", cwd=ARGS.cwd,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(os.path.join(ARGS.logs, "acp-eof.log"), "w"))
    try:
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                                        "params": {"cwd": ARGS.cwd, "mcpServers": []}}).encode() + b"\n")
        await process.stdin.drain()
        session = (await raw_lines(process, 1))[0]["result"]["sessionId"]
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
            "sessionId": session, "prompt": [{"type": "text", "text": ARGS.approval}]}}).encode() + b"\n")
        await process.stdin.drain()
        while True:
            message = (await raw_lines(process, 1, timeout=30))[0]
            if message.get("method") == "session/request_permission":
                break
        process.stdin.close()
        eof_at = time.monotonic()
        code = await asyncio.wait_for(process.wait(), 5)
        check(code == 0, f"EOF mid-turn (a permission request open): exit 0 within 5 s ({time.monotonic() - eof_at:.1f} s)",
              f"exit {code}")
    except Exception as error:  # noqa: BLE001
        process.kill()
        check(False, "EOF mid-turn: exit 0 within 5 s", repr(error))


async def raw_new_session_error(profile, cwd, expected, label):
    """session/new that the backend refuses: a JSON-RPC error that says what failed and what to do."""
    process = await asyncio.create_subprocess_exec(
        ARGS.tether, "--config", ARGS.config, "-p", profile, "acp", cwd=ARGS.cwd,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(os.path.join(ARGS.logs, f"acp-{profile}.log"), "w"))
    request = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": cwd, "mcpServers": []}}
    process.stdin.write(json.dumps(request).encode() + b"\n")
    await process.stdin.drain()
    try:
        answer = (await raw_lines(process, 1))[0]
        message = answer.get("error", {}).get("message", "")
        check(all(part in message for part in expected), f"{label} ({message})", f"{answer}")
    except Exception as error:  # noqa: BLE001
        check(False, label, repr(error))
    process.stdin.close()
    await asyncio.wait_for(process.wait(), 5)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    for name in ("tether", "config", "profile", "backend", "cwd", "logs", "plain", "approval", "cancel", "fail"):
        parser.add_argument("--" + name, required=True)
    parser.add_argument("--secret", action="append", default=[])
    parser.add_argument("--refusing-profile", help="a profile whose backend refuses an unknown cwd")
    parser.add_argument("--dead-profile", help="a profile whose backend does not listen")
    parser.add_argument("--question", help="a prompt whose turn asks a question the backend lets us answer")
    parser.add_argument("--question-answer", help="the choice to pick for --question")
    ARGS = parser.parse_args()
    try:
        asyncio.run(run())
    except Exception as error:  # noqa: BLE001
        check(False, "the ACP session ran to its end", repr(error))
    asyncio.run(raw_bad_input())
    asyncio.run(raw_eof_mid_turn())
    if ARGS.refusing_profile:
        asyncio.run(raw_new_session_error(ARGS.refusing_profile, "/no/such/project", ["/no/such/project"],
                                          "session/new with a cwd the backend refuses → error naming it"))
    if ARGS.dead_profile:
        asyncio.run(raw_new_session_error(ARGS.dead_profile, ARGS.cwd, ["failed:", "cannot connect", "tether check"],
                                          "a backend that is down → error saying what failed and what to do"))
    sys.exit(0 if all(RESULTS) else 1)


if __name__ == "__main__":
    main()
