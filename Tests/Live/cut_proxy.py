#!/usr/bin/env python3
"""A TCP proxy for live tests that cut the link (stdlib only).

Listens on 127.0.0.1 (a free port, written to --port-file) and relays each connection to
--target HOST:PORT. Whenever the file --cut appears, every connection open at that moment is
dropped (both sides closed) and the file is removed; new connections are relayed as before.
"""
import argparse
import os
import socket
import threading
import time

LOCK = threading.Lock()
OPEN = []


def pipe(source, sink):
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    for s in (source, sink):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(client, target):
    try:
        upstream = socket.create_connection(target)
    except OSError:
        client.close()
        return
    with LOCK:
        OPEN.append((client, upstream))
    threading.Thread(target=pipe, args=(client, upstream), daemon=True).start()
    threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()


def watch(cut_file):
    while True:
        if os.path.exists(cut_file):
            with LOCK:
                pairs, OPEN[:] = list(OPEN), []
            for pair in pairs:
                for s in pair:
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                        s.close()
                    except OSError:
                        pass
            os.remove(cut_file)
        time.sleep(0.05)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--cut", required=True)
    args = parser.parse_args()
    host, port = args.target.rsplit(":", 1)
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    with open(args.port_file + ".tmp", "w") as f:
        f.write(str(listener.getsockname()[1]))
    os.replace(args.port_file + ".tmp", args.port_file)
    threading.Thread(target=watch, args=(args.cut,), daemon=True).start()
    while True:
        client, _ = listener.accept()
        serve(client, (host, int(port)))


if __name__ == "__main__":
    main()
