#!/usr/bin/env python3
"""The gateway benchmark's measurements (bench/gateway.sh starts the simulator and the gateway)."""
import argparse, json, os, socket, subprocess, sys, time, urllib.request
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rows


def get(url):
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.load(response)


def rss_kb(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def replay(host, port, since, last, deadline=300):
    """Reads SSE from `since` until the event with id `last`; returns (events, seconds)."""
    sock = socket.create_connection((host, port))
    started = time.perf_counter()
    sock.sendall(f"GET /v1/events?since={since} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    target = f"\nid: {last}\n".encode()
    tail, count = b"", 0
    while time.perf_counter() - started < deadline:
        chunk = sock.recv(1 << 20)
        if not chunk:
            break
        window = tail + chunk
        count += window.count(b"\nid: ") - tail.count(b"\nid: ")
        if target in window:
            break
        tail = window[-64:]
    elapsed = time.perf_counter() - started
    sock.close()
    return count, elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--events", type=int, required=True)
    parser.add_argument("--clients", type=int, required=True)
    options = parser.parse_args()
    host, port = options.url.split("//")[1].split(":")
    port = int(port)

    # 1. The flood into the log (the simulator floods the gateway's subscription at once).
    started = time.perf_counter()
    last = 0
    while time.perf_counter() - started < 600:
        batch = get(f"{options.url}/v1/events?format=json&since={max(last, options.events - 1)}&limit=1000&wait=5")
        if batch["events"]:
            last = batch["next"]
        if any(e.get("type") == "session.status" and e["data"].get("status") == "idle" for e in batch["events"]):
            break
    ingest = time.perf_counter() - started
    last = get(f"{options.url}/v1/events?format=json")["next"]
    # The flood may begin before this script starts watching, so the rate is read from the log
    # itself: its events' receive times, first to last (the stream hands a batch to the log only
    # once the last one is committed, so it cannot run ahead of the log by more than a batch).
    span = subprocess.run(["sqlite3", "-readonly", options.db, "SELECT count(*), max(ts) - min(ts) FROM event;"],
                          capture_output=True, text=True).stdout.strip().split("|")
    logged, seconds = int(span[0]), float(span[1]) / 1000
    # Beside it, in the same run: sqlite3 bulk-inserting the same rows (one transaction, the
    # same schema and indexes, WAL, synchronous=NORMAL as the gateway runs it).
    baseline_db = options.db + ".baseline"
    schema = subprocess.run(["sqlite3", "-readonly", options.db, ".schema event"], capture_output=True, text=True).stdout
    bulk = (f"PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; {schema}\n"
            f"ATTACH '{options.db}' AS src; BEGIN; INSERT INTO event SELECT * FROM src.event; COMMIT;")
    began = time.perf_counter()
    subprocess.run(["sqlite3", baseline_db], input=bulk, capture_output=True, text=True, check=True)
    bulk_seconds = time.perf_counter() - began
    rate, bulk_rate = logged / max(seconds, 1e-6), logged / bulk_seconds
    rows.add(f"gateway: log {logged:,} flood events (OpenCode simulator), a stream's batch a transaction",
             f"{rate:,.0f} events/s", f"sqlite3 bulk insert of the same rows: {bulk_rate:,.0f} rows/s",
             f"{rate / bulk_rate:.2f}×", "≥ 200,000 events/s", rate >= 200_000,
             notes=f"{seconds:.2f} s from the first event received to the last; the script saw the flood done after {ingest:.1f} s",
             raw={"events": logged, "seconds": seconds, "bulk_seconds": bulk_seconds})
    for path in (baseline_db, baseline_db + "-wal", baseline_db + "-shm"):
        if os.path.exists(path):
            os.remove(path)

    size = sum(os.path.getsize(p) for p in (options.db, options.db + "-wal") if os.path.exists(p))
    subprocess.run(["sqlite3", options.db, "PRAGMA wal_checkpoint(TRUNCATE);"], capture_output=True)
    checkpointed = os.path.getsize(options.db)
    per = checkpointed * 100_000 / max(last, 1)
    rows.add("gateway: log size per 100,000 events", f"{per / 1e6:.1f} MB", "—", f"{per / 1e6:.1f} MB", "—", None,
             notes=f"{checkpointed / 1e6:.1f} MB for {last:,} events after a checkpoint ({size / 1e6:.1f} MB with the WAL)",
             raw={"bytes": checkpointed, "events": last})

    # 2. Replay from the log to one client, beside reading the same rows with the sqlite3 CLI.
    count, seconds = replay(host, port, 0, last)
    t0 = time.perf_counter()
    subprocess.run(["sqlite3", "-readonly", options.db, "SELECT line FROM event ORDER BY seq;"],
                   stdout=subprocess.DEVNULL, check=True)
    baseline = time.perf_counter() - t0
    rate, base_rate = count / seconds, last / baseline
    rows.add(f"gateway: replay {count:,} events from the log to one SSE client", f"{rate:,.0f} events/s",
             f"sqlite3 CLI: {base_rate:,.0f} rows/s", f"{rate / base_rate:.2f}×", "≥ 200,000 events/s",
             rate >= 200_000, raw={"events": count, "seconds": seconds, "baseline_seconds": baseline})

    # 3. Memory with many clients: each replays the last 1,000 events, then stays connected live.
    sockets = []
    for _ in range(options.clients):
        sock = socket.create_connection((host, port))
        sock.sendall(f"GET /v1/events?since={max(0, last - 1000)} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        sockets.append(sock)
    target = f"\nid: {last}\n".encode()
    for sock in sockets:
        tail = b""
        sock.settimeout(60)
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk or target in tail + chunk:
                break
            tail = (tail + chunk)[-64:]
    time.sleep(1)
    rss = rss_kb(options.pid)
    peak = rss_kb(options.pid, "VmHWM")
    rows.add(f"gateway: RSS with {options.clients} SSE clients connected", f"{rss / 1024:.0f} MB", "—",
             f"{rss / 1024:.0f} MB", "< 80 MB", rss < 80 * 1024, notes=f"peak over the whole run {peak / 1024:.0f} MB",
             raw={"rss_kb": rss, "peak_kb": peak, "clients": options.clients})
    for sock in sockets:
        sock.close()


def fanout_row(title, gateway, events, target_ms=5, notes=""):
    """The fan-out row: one gateway client's latency beside `tether events` on the same flood."""
    ms = lambda us: f"{(us or 0) / 1000:.3f}"
    complete = gateway.get("complete") and events.get("complete")
    added99 = (gateway.get("p99_us") or 0) - (events.get("p99_us") or 0)
    rows.add(title, f"p50 {ms(gateway.get('p50_us'))} ms, p99 {ms(gateway.get('p99_us'))} ms",
             f"`tether events` p50 {ms(events.get('p50_us'))} ms, p99 {ms(events.get('p99_us'))} ms",
             f"added p99 {added99 / 1000:+.3f} ms" + ("" if complete else " (incomplete)"), f"added p99 < {target_ms:g} ms",
             bool(complete) and added99 < target_ms * 1000,
             notes=f"deltas {arrived(gateway)} through the gateway, {arrived(events)} by `tether events`" + (f"; {notes}" if notes else ""),
             raw={"gateway": gateway, "tether_events": events})


def arrived(reading):
    """Which deltas a latency.py reading saw: the first and last, and how many."""
    if not reading.get("stamped"):
        return "none"
    return f"{reading.get('first')}–{reading.get('last')} ({reading['stamped']:,}, " \
        + ("gap-free)" if reading.get("gap_free") else "with gaps)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["fanout-row"]:
        fanout_row(sys.argv[2], json.loads(sys.argv[3] or "{}"), json.loads(sys.argv[4] or "{}"),
                   float(sys.argv[5]) if len(sys.argv) > 5 else 5, sys.argv[6] if len(sys.argv) > 6 else "")
    else:
        main()
