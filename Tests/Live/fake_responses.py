#!/usr/bin/env python3
"""A tiny fake OpenAI Responses API for driving a real `codex` in live tests (stdlib only).

POST /v1/responses answers with SSE. If the newest user message asks to "run" something and no
function_call_output follows it, the reply is a shell function_call; "patch" asks for an
apply_patch that adds a file outside the workspace (so a workspace-write sandbox asks to approve
the file change); otherwise a short text, which "slow" streams a word every half second.
Every request body is appended (one JSON per line) to --log.
"""
import argparse
import json
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

LOCK = threading.Lock()
COUNTER = [0]
ARGS = None


def next_id(prefix):
    with LOCK:
        COUNTER[0] += 1
        return "%s_%d" % (prefix, COUNTER[0])


def text_of(item):
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = []
    for c in content or []:
        if isinstance(c, dict) and isinstance(c.get("text"), str):
            parts.append(c["text"])
    return "".join(parts)


def tool_names(body):
    names = []
    for tool in body.get("tools") or []:
        name = tool.get("name") or (tool.get("function") or {}).get("name")
        if name:
            names.append(name)
    return names


def decide(body):
    """('call', tool, args) or ('text', reply)."""
    items = body.get("input") or []
    last_user = None
    for index, item in enumerate(items):
        if item.get("role") == "user" and item.get("type", "message") == "message":
            text = text_of(item)
            if not text.lstrip().startswith("<"):  # skip environment_context / instructions blocks
                last_user = index
    if last_user is None:
        return ("text", "Hello from the fake model.")
    after = items[last_user + 1:]
    outputs = [i for i in after if i.get("type") in ("function_call_output", "custom_tool_call_output")]
    prompt = text_of(items[last_user]).lower()
    if outputs:
        out = outputs[-1].get("output")
        if not isinstance(out, str):
            out = json.dumps(out)
        return ("text", "The command finished. Output: " + out[:200])
    if "patch" in prompt:
        patch = "*** Begin Patch\n*** Add File: %s\n+hello from apply_patch\n*** End Patch\n" % ARGS.patch_path
        command = "apply_patch <<'EOF'\n" + patch + "EOF\n"
        names = tool_names(body)
        if "exec_command" in names:
            return ("call", "exec_command", {"cmd": command, "login": False})
        if "apply_patch" in names:
            return ("call", "apply_patch", {"input": patch})
        return ("text", "No patch tool offered (tools: %s)." % ", ".join(names))
    if "slow" in prompt:
        return ("text", "Slowly, word by word, the fake model answers your slow request now.")
    if "run" in prompt:
        names = tool_names(body)
        command = ARGS.command
        # codex 0.163 registers `exec_command` (unified exec). `require_escalated` makes the
        # command ask for approval even though the workspace-write sandbox would allow it.
        escalate = {"sandbox_permissions": "require_escalated", "justification": "The user asked to run this."}
        if "exec_command" in names:
            return ("call", "exec_command", dict(escalate, cmd=command, login=False))
        if "shell_command" in names:
            return ("call", "shell_command", dict(escalate, command=command, login=False))
        if "shell" in names:
            return ("call", "shell", dict(escalate, command=["bash", "-c", command]))
        return ("text", "No shell tool offered (tools: %s)." % ", ".join(names))
    return ("text", "Hello! I am the fake model and I say hello.")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        if ARGS.verbose:
            sys.stderr.write("fake_responses: " + (fmt % args) + "\n")

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            self.send_json({"object": "list", "data": [{"id": ARGS.model, "object": "model"}], "models": []})
        elif self.path == "/health":
            self.send_json({"ok": True})
        else:
            self.send_json({"error": {"message": "not found"}}, 404)

    def send_json(self, value, status=200):
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        with LOCK:
            with open(ARGS.log, "a") as f:
                f.write(json.dumps({"path": self.path, "headers": dict(self.headers), "body": body}) + "\n")
        if not self.path.rstrip("/").endswith("/responses"):
            self.send_json({"error": {"message": "not found"}}, 404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        seq = [0]

        def event(kind, payload):
            payload = dict(payload)
            payload["type"] = kind
            payload["sequence_number"] = seq[0]
            seq[0] += 1
            self.wfile.write(("event: %s\ndata: %s\n\n" % (kind, json.dumps(payload))).encode())
            self.wfile.flush()

        rid = next_id("resp")
        model = body.get("model") or ARGS.model
        base = {"id": rid, "object": "response", "created_at": 1767000000, "model": model, "output": []}
        event("response.created", {"response": dict(base, status="in_progress")})
        event("response.in_progress", {"response": dict(base, status="in_progress")})
        decision = decide(body)
        output = []
        if decision[0] == "call":
            _, name, args = decision
            item = {"type": "function_call", "id": next_id("fc"), "call_id": next_id("call"), "name": name,
                    "arguments": json.dumps(args), "status": "completed"}
            event("response.output_item.added", {"output_index": 0, "item": dict(item, arguments="", status="in_progress")})
            event("response.function_call_arguments.delta", {"output_index": 0, "item_id": item["id"], "delta": item["arguments"]})
            event("response.function_call_arguments.done", {"output_index": 0, "item_id": item["id"], "arguments": item["arguments"]})
            event("response.output_item.done", {"output_index": 0, "item": item})
            output.append(item)
        else:
            text = decision[1]
            mid = next_id("msg")
            empty = {"type": "message", "id": mid, "role": "assistant", "status": "in_progress", "content": []}
            event("response.output_item.added", {"output_index": 0, "item": empty})
            event("response.content_part.added", {"output_index": 0, "item_id": mid, "content_index": 0,
                                                   "part": {"type": "output_text", "text": "", "annotations": []}})
            words = text.split(" ")
            slow = text.startswith("Slowly")
            for i, word in enumerate(words):
                if slow:
                    time.sleep(0.5)
                event("response.output_text.delta", {"output_index": 0, "item_id": mid, "content_index": 0,
                                                      "delta": word + (" " if i < len(words) - 1 else "")})
            part = {"type": "output_text", "text": text, "annotations": []}
            event("response.output_text.done", {"output_index": 0, "item_id": mid, "content_index": 0, "text": text})
            event("response.content_part.done", {"output_index": 0, "item_id": mid, "content_index": 0, "part": part})
            item = {"type": "message", "id": mid, "role": "assistant", "status": "completed", "content": [part]}
            event("response.output_item.done", {"output_index": 0, "item": item})
            output.append(item)
        usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 20,
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 120}
        event("response.completed", {"response": dict(base, status="completed", output=output, usage=usage)})


class Server(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--port-file", help="write the bound port here once listening")
    parser.add_argument("--log", default="/dev/null")
    parser.add_argument("--model", default="fake-model")
    parser.add_argument("--command", default="echo hi > done.txt")
    parser.add_argument("--patch-path", default="../outside/patched.txt")
    parser.add_argument("--verbose", action="store_true")
    ARGS = parser.parse_args()
    server = Server(("127.0.0.1", ARGS.port), Handler)
    port = server.server_address[1]
    if ARGS.port_file:
        with open(ARGS.port_file + ".tmp", "w") as f:
            f.write(str(port))
        import os
        os.replace(ARGS.port_file + ".tmp", ARGS.port_file)
    print("fake_responses listening on 127.0.0.1:%d" % port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
