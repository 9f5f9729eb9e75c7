#!/usr/bin/env python3
"""Holds N silent SSE clients of the gateway in one process, the load of a fan-out row.

usage: silent_clients.py URL N SECONDS

Each client is a plain HTTP/1.1 `GET /v1/events` on its own TCP connection, as a phone's
EventSource on a page nobody looks at. One process holds them all and drains every socket
twice a second (a non-blocking read until it is empty): the kernel takes each event as the
gateway writes it, so the gateway does all of its work per client, while the harness costs the
two cores a few thousand reads a second instead of one read per client per event (an asyncio
reader, or N curl processes, would compete with the gateway for the CPU it is measured on).
It says on stderr when every client got its response head, and exits after SECONDS.
"""
import resource, socket, sys, time
from urllib.parse import urlsplit

DRAIN_INTERVAL = 0.5


def main(url, count, seconds):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    parts = urlsplit(url)
    started = time.monotonic()
    request = f"GET /v1/events HTTP/1.1\r\nHost: {parts.hostname}:{parts.port}\r\nAccept: text/event-stream\r\n\r\n".encode()
    clients = []
    for _ in range(count):
        sock = socket.create_connection((parts.hostname, parts.port))
        sock.sendall(request)
        clients.append(sock)
    received = 0
    for sock in clients:  # every response head, blocking
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(65536)
            if not chunk:
                break
            head += chunk
        received += len(head)
        sock.setblocking(False)
    print(f"bench: {len(clients)} silent SSE clients connected in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
    open_clients = list(clients)
    while open_clients and time.monotonic() - started < seconds:
        time.sleep(DRAIN_INTERVAL)
        still = []
        for sock in open_clients:
            closed = False
            while True:
                try:
                    chunk = sock.recv(1 << 20)
                except BlockingIOError:
                    break
                except OSError:
                    closed = True
                    break
                if not chunk:
                    closed = True
                    break
                received += len(chunk)
            if closed:
                sock.close()
            else:
                still.append(sock)
        open_clients = still
    print(f"bench: the silent clients read {received:,} bytes; {len(open_clients)} still connected", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
