#!/usr/bin/env python3
"""Builds the fuzz targets' seed corpora from the recorded transcripts and fixtures under Tests/.

    python3 Fuzz/make-corpus.py OUT_DIR

writes OUT_DIR/<target>/<name> for each target in Fuzz/Package.swift, plus the crash inputs
kept under Tests/Fuzz/Regressions/<target>/, and OUT_DIR/wire.dict, a libFuzzer dictionary of
the keys and values the recorded messages use. Every seed is laid out as the targets read their
input (Fuzz/Sources/FuzzSupport): one options byte, then the bytes a peer sends. Deterministic:
the same checkout always gives the same corpus. Standard library only.
"""
import hashlib
import json
import os
import shutil
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = os.path.join(ROOT, "Tests")


def lines(path):
    with open(path, "rb") as handle:
        return [line for line in handle.read().split(b"\n") if line.strip()]


def transcripts(suite):
    folder = os.path.join(TESTS, suite, "Transcripts")
    return {name[: -len(".jsonl")]: lines(os.path.join(folder, name))
            for name in sorted(os.listdir(folder)) if name.endswith(".jsonl")}


def fixture(name):
    with open(os.path.join(TESTS, "TetherNotificationTests", "Fixtures", name + ".json"), "rb") as handle:
        value = json.load(handle)
    value.pop("_comment", None)
    return value


def compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


# --- Wire encodings -----------------------------------------------------------------------

def sse(messages, eol=b"\n", worker=False, extras=False):
    """An SSE body carrying each message as one event (the Codex Worker adds id and event)."""
    out = b""
    if extras:
        out += b": ok" + eol + b"retry: 1500" + eol + eol
    for message in messages:
        if worker:
            envelope = json.loads(message)
            out += b"id: %d" % envelope.get("seq", 0) + eol + b"event: " + envelope["type"].encode() + eol
        out += b"data: " + message + eol + eol
        if extras:
            out += b": heartbeat" + eol
    return out


def ws_frame(opcode, payload, fin=True, mask=None):
    """One RFC 6455 frame; `mask` (4 bytes) for client-to-server frames."""
    head = bytes([(0x80 if fin else 0) | opcode])
    bit = 0x80 if mask else 0
    if len(payload) <= 125:
        head += bytes([bit | len(payload)])
    elif len(payload) <= 0xFFFF:
        head += bytes([bit | 126]) + struct.pack(">H", len(payload))
    else:
        head += bytes([bit | 127]) + struct.pack(">Q", len(payload))
    if mask:
        payload = bytes(byte ^ mask[index % 4] for index, byte in enumerate(payload))
        head += mask
    return head + payload


def ws_text(text, fragment=None, mask=None):
    """A text message, split into `fragment`-byte continuation frames when given."""
    if not fragment or len(text) <= fragment:
        return ws_frame(0x1, text, mask=mask)
    parts = [text[i:i + fragment] for i in range(0, len(text), fragment)]
    out = b""
    for index, part in enumerate(parts):
        out += ws_frame(0x1 if index == 0 else 0x0, part, fin=index == len(parts) - 1, mask=mask)
    return out


def relay_response(result, error=None):
    return compact({"type": "message", "from": "pc-7f3a", "payload": {
        "type": "chainlesschain:command:response",
        "payload": {"jsonrpc": "2.0", "id": "r-1", "result": result, "error": error}}})


# --- Corpora ------------------------------------------------------------------------------

def corpora():
    opencode = transcripts("TetherOpenCodeTests")
    worker = transcripts("TetherCodexWorkerTests")
    monitor = transcripts("TetherCodexMonitorTests")
    frames = {name: compact(value) for name, value in fixture("relay-frames").items()}
    results = {}
    for family in ("contract", "desktop"):
        for name, value in fixture("results-" + family).items():
            results[family + "-" + name] = value
    seeds = {name: {} for name in (
        "FuzzSSEDecoder", "FuzzLineFramer", "FuzzWebSocketFrames", "FuzzJSONParser",
        "FuzzOpenCodeWire", "FuzzOpenCode2Wire", "FuzzCodexWorkerWire", "FuzzCodexMonitorWire", "FuzzNotificationWire")}

    # SSE: OpenCode's and the Worker's streams, LF and CRLF, with comments and retry, and with
    # options that report comments (bit 0) or cap lines at 1 + (options >> 2) bytes (bit 1).
    for name, messages in opencode.items():
        seeds["FuzzSSEDecoder"]["opencode-" + name] = b"\x00" + sse(messages)
        seeds["FuzzSSEDecoder"]["opencode-" + name + "-crlf-comments"] = b"\x01" + sse(messages, b"\r\n", extras=True)
        # 2.x transcripts (`v2-*`) seed the 2.x reader; the others, the 1.x decoder.
        target = "FuzzOpenCode2Wire" if name.startswith("v2-") else "FuzzOpenCodeWire"
        seeds[target][name] = b"\x00" + sse(messages)
        seeds[target][name + "-split"] = b"\x5a" + sse(messages, b"\r\n", extras=True)
    for name, messages in worker.items():
        seeds["FuzzSSEDecoder"]["worker-" + name] = b"\x03" + sse(messages, worker=True, extras=True)
        seeds["FuzzSSEDecoder"]["worker-" + name + "-short-lines"] = b"\xfe" + sse(messages, b"\r", worker=True)
        seeds["FuzzCodexWorkerWire"][name] = b"\x00" + sse(messages, worker=True)
        seeds["FuzzCodexWorkerWire"][name + "-split"] = b"\xa7" + sse(messages, b"\r\n", worker=True, extras=True)

    # JSON lines: CodexMonitor's TCP stream, LF and CRLF, under the large and a small limit.
    for name, messages in monitor.items():
        stream = b"\n".join(messages) + b"\n"
        seeds["FuzzLineFramer"][name] = b"\x80" + stream
        seeds["FuzzLineFramer"][name + "-crlf-small"] = b"\x7f" + stream.replace(b"\n", b"\r\n")
        seeds["FuzzCodexMonitorWire"][name] = b"\x00" + stream
        seeds["FuzzCodexMonitorWire"][name + "-split"] = b"\x33" + stream.replace(b"\n", b"\r\n")

    # WebSocket: the relay's frames as the server sends them (unmasked, to a client), some
    # fragmented, with a ping and a close; and masked, as a client sends them (option bit 0).
    relay = b"".join(ws_text(text, fragment=48 if index % 3 == 0 else None)
                     for index, text in enumerate(frames.values()))
    control = ws_frame(0x9, b"keepalive") + ws_frame(0xA, b"") + ws_frame(0x8, struct.pack(">H", 1000) + b"bye")
    seeds["FuzzWebSocketFrames"]["relay-frames"] = b"\x00" + relay + control
    seeds["FuzzWebSocketFrames"]["relay-frames-masked"] = b"\x01" + b"".join(
        ws_text(text, fragment=100, mask=b"\x37\xfa\x21\x3d") for text in frames.values())
    seeds["FuzzWebSocketFrames"]["relay-frames-small-limit"] = b"\x0c" + relay
    seeds["FuzzNotificationWire"]["relay-frames"] = b"\x00" + relay + control
    # …and as text frames one per line (options bit 0), which the target frames itself.
    seeds["FuzzNotificationWire"]["relay-frames-lines"] = b"\x01" + b"\n".join(frames.values())
    for name, text in frames.items():
        seeds["FuzzNotificationWire"]["frame-" + name] = b"\x01" + text
    for name, result in results.items():
        seeds["FuzzNotificationWire"]["result-" + name] = b"\x01" + relay_response(result)
        seeds["FuzzNotificationWire"]["result-" + name + "-ws"] = b"\x00" + ws_text(relay_response(result), fragment=64)
        seeds["FuzzJSONParser"]["result-" + name] = b"\x00" + compact(result)

    # JSON: every recorded message, as the wire carries it.
    for suite, messages_by_name in (("opencode", opencode), ("worker", worker), ("monitor", monitor)):
        for name, messages in messages_by_name.items():
            for index, message in enumerate(messages):
                seeds["FuzzJSONParser"]["%s-%s-%02d" % (suite, name, index)] = b"\x00" + message
    for name, text in frames.items():
        seeds["FuzzJSONParser"]["frame-" + name] = b"\x01" + text
    return seeds


def dictionary():
    """libFuzzer tokens: every object key and short string in the recorded messages, plus the
    awkward numbers and wire syntax a decoder must survive. Spliced in by the mutator, they
    reach the mappers' branches far sooner than random bytes do."""
    tokens = set()

    def walk(value):
        if isinstance(value, dict):
            for key, item in value.items():
                tokens.add(json.dumps(key, ensure_ascii=False))
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str) and len(value) <= 40:
            tokens.add(json.dumps(value, ensure_ascii=False))
            if value.startswith("{"):
                try:
                    walk(json.loads(value))
                except ValueError:
                    pass

    for suite in ("TetherOpenCodeTests", "TetherCodexWorkerTests", "TetherCodexMonitorTests"):
        for messages in transcripts(suite).values():
            for message in messages:
                walk(json.loads(message))
    for name in ("relay-frames", "results-contract", "results-desktop"):
        walk(fixture(name))
    tokens |= {"null", "true", "false", "-0", "1e999", "-1e999", "1e300", "9223372036854775808",
               "-9223372036854775809", "0.5", "\"nan\"", "\"inf\"", "\"-1e300\"", "\\u0000", "\\ud800",
               "\\udc00", "data: ", "event: ", "id: ", "retry: ", "\r\n", "\ufeff"}
    out = []
    for token in sorted(tokens):
        data = token.encode()
        escaped = "".join(chr(b) if 32 <= b < 127 and b not in (34, 92) else "\\x%02x" % b for b in data)
        out.append('"%s"' % escaped)
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make-corpus.py OUT_DIR")
    out = sys.argv[1]
    regressions = os.path.join(TESTS, "Fuzz", "Regressions")
    for target, seeds in corpora().items():
        folder = os.path.join(out, target)
        os.makedirs(folder, exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(folder, "seed-" + name), "wb") as handle:
                handle.write(data)
        kept = os.path.join(regressions, target)
        if os.path.isdir(kept):
            for name in sorted(os.listdir(kept)):
                shutil.copyfile(os.path.join(kept, name), os.path.join(folder, "regression-" + name))
        print("%s: %d seeds" % (target, len(os.listdir(folder))), file=sys.stderr)
    with open(os.path.join(out, "wire.dict"), "w") as handle:
        handle.write(dictionary())


if __name__ == "__main__":
    main()
