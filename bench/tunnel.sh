#!/usr/bin/env bash
# Tether's SSH tunnel (`tether tunnel`, libssh2 direct-tcpip) side by side with OpenSSH's
# `ssh -N -L` against the same throwaway local sshd, in the same run:
#   - bulk: BULK_MB (500) MB pushed through each tunnel into a sink, timed until the sink has
#     counted every byte; MB/s and the ratio tether/ssh (target ≥ 0.8×).
#   - round trip: RTT_COUNT (2000) sequential 64-byte request/response exchanges over one
#     connection to an echo server; p50/p99 in ms and the p50 difference (target within 0.2 ms).
# Targets are printed (table rows, see rows.py), not asserted.
#
# A third side, with LIBSSH2_CEILING=1 (the default): libssh2-forward.c, a minimal C forwarding
# loop on the same libssh2 (one thread, non-blocking, poll, 256 KiB buffers), compiled here with
# `cc -O2 … -lssh2`, against the same sshd, sink and payload, alternating with tether: the
# ceiling of this machine's libssh2, so "tether is at the library's limit" is a measurement.
# Tether's bulk rate is reported as a ratio to `ssh -N -L` and to that ceiling.
#
# Ciphers differ: Debian 12's libssh2 1.10 has neither chacha20-poly1305 nor AES-GCM, so tether
# negotiates aes128-ctr + hmac-sha2-256, while OpenSSH prefers chacha20-poly1305@openssh.com.
# The ciphers each side used are read from sshd's DEBUG1 log ("kex: client->server cipher: ...")
# and printed. With SAME_CIPHER=1 (the default) one more OpenSSH run is forced onto tether's
# cipher and MAC (-c aes128-ctr -m hmac-sha2-256), to separate cipher cost from tunnel cost.
#
# Everything is loopback-only and self-contained: its own sshd on a free port, host key, client
# key, known_hosts and state dirs in a temp dir, all removed on exit. Needs /usr/sbin/sshd, ssh,
# ssh-keygen, ssh-keyscan and python3. Logs go to bench/out/tunnel-*.
source "$(dirname "$0")/lib.sh"
BULK_MB=${BULK_MB:-500}
RTT_COUNT=${RTT_COUNT:-2000}
RTT_SIZE=64
SAME_CIPHER=${SAME_CIPHER:-1}
SSHD=${SSHD:-/usr/sbin/sshd}
BULK_BYTES=$((BULK_MB * 1000 * 1000))
# Generous bounds: at least 60 s, or the time to move the data at 2 MB/s.
BULK_TIMEOUT=$((BULK_MB / 2 > 60 ? BULK_MB / 2 : 60))
RTT_TIMEOUT=$((RTT_COUNT / 10 > 60 ? RTT_COUNT / 10 : 60))

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tether-tunnel-bench.XXXXXX")
SSHD_LOG="$OUT_DIR/tunnel-sshd.log"
PIDS=()
cleanup() {
    local pid
    # Clients first (their sshd children then exit), then sshd and the target server.
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
        pid=${PIDS[i]}
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${PIDS[@]}"; do
        for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# kill_pid PID: stops one process started here and forgets it.
kill_pid() {
    local pid=$1 keep=() p
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    for p in "${PIDS[@]}"; do [ "$p" = "$pid" ] || keep+=("$p"); done
    PIDS=("${keep[@]}")
}
die() { echo "bench tunnel: $*" >&2; exit 1; }
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# --- The target: a sink (header = 8-byte big-endian length, then that many bytes; replies with
# the count it read) and an echo server (returns every byte), both threaded, both on loopback.
cat > "$WORK/target.py" <<'PY'
import socket, struct, sys, threading

def serve(listener, handler):
    while True:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.settimeout(600)
        threading.Thread(target=handler, args=(conn,), daemon=True).start()

def read_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data

def sink(conn):
    with conn:
        try:
            header = read_exact(conn, 8)
            if header is None:
                return
            want, got = struct.unpack("!Q", header)[0], 0
            buffer = bytearray(1 << 20)
            view = memoryview(buffer)
            while got < want:
                n = conn.recv_into(view, min(len(buffer), want - got))
                if n == 0:
                    break
                got += n
            conn.sendall(struct.pack("!Q", got))
        except OSError:
            pass

def echo(conn):
    with conn:
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                conn.sendall(data)
        except OSError:
            pass

listeners = []
for handler in (sink, echo):
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    listeners.append(listener)
    threading.Thread(target=serve, args=(listener, handler), daemon=True).start()
print(listeners[0].getsockname()[1], listeners[1].getsockname()[1], flush=True)
threading.Event().wait()
PY

# --- The client: `bulk PORT BYTES` prints seconds; `rtt PORT COUNT SIZE` prints p50 and p99 in ms.
cat > "$WORK/client.py" <<'PY'
import math, socket, struct, sys, time

def connect(port):
    conn = socket.create_connection(("127.0.0.1", port), timeout=30)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn

def read_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            sys.exit(f"connection closed after {len(data)} of {n} bytes")
        data += chunk
    return data

def bulk(port, total):
    block = memoryview(bytes(range(256)) * 1024)  # 256 KiB
    start = time.monotonic()
    conn = connect(port)
    conn.sendall(struct.pack("!Q", total))
    left = total
    while left:
        n = min(left, len(block))
        conn.sendall(block[:n])
        left -= n
    conn.shutdown(socket.SHUT_WR)
    got = struct.unpack("!Q", read_exact(conn, 8))[0]
    elapsed = time.monotonic() - start
    conn.close()
    if got != total:
        sys.exit(f"the sink counted {got} of {total} bytes")
    print(f"{elapsed:.4f}")

def rtt(port, count, size):
    conn = connect(port)
    message = b"x" * size
    for _ in range(min(50, count)):  # warm-up: channel open, window, caches
        conn.sendall(message)
        read_exact(conn, size)
    times = []
    for _ in range(count):
        start = time.perf_counter()
        conn.sendall(message)
        read_exact(conn, size)
        times.append(time.perf_counter() - start)
    conn.close()
    times.sort()
    pick = lambda q: times[max(0, math.ceil(q * len(times)) - 1)] * 1000
    print(f"{pick(0.50):.3f} {pick(0.99):.3f}")

mode, port = sys.argv[1], int(sys.argv[2])
if mode == "bulk":
    bulk(port, int(sys.argv[3]))
else:
    rtt(port, int(sys.argv[3]), int(sys.argv[4]))
PY

python3 -u "$WORK/target.py" > "$WORK/target.out" 2> "$OUT_DIR/tunnel-target.err" &
PIDS+=($!)
for _ in $(seq 1 100); do [ -s "$WORK/target.out" ] && break; sleep 0.05; done
read -r SINK_PORT ECHO_PORT < "$WORK/target.out" || die "the target server did not start (see $OUT_DIR/tunnel-target.err)"

# --- sshd: own host key, own client key, own config, on a free loopback port.
ssh-keygen -q -t ed25519 -N "" -C tether-bench-host -f "$WORK/host_ed25519"
ssh-keygen -q -t ed25519 -N "" -C tether-bench-client -f "$WORK/client_ed25519"
cp "$WORK/client_ed25519.pub" "$WORK/authorized_keys"
SSH_PORT=$(free_port)
# DEBUG1 rather than ERROR: it is the cheap way to see each connection's negotiated cipher
# (logged once per key exchange; nothing per packet at this level).
cat > "$WORK/sshd_config" <<EOF
ListenAddress 127.0.0.1
HostKey $WORK/host_ed25519
PidFile none
AuthorizedKeysFile $WORK/authorized_keys
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
AllowTcpForwarding yes
LogLevel DEBUG1
EOF
mkdir -p /run/sshd
: > "$SSHD_LOG"
"$SSHD" -D -e -f "$WORK/sshd_config" -p "$SSH_PORT" 2>> "$SSHD_LOG" &
PIDS+=($!)
SSHD_PID=$!
for _ in $(seq 1 100); do
    ssh-keyscan -T 2 -p "$SSH_PORT" -t ed25519 127.0.0.1 > "$WORK/known_hosts" 2>/dev/null || true
    [ -s "$WORK/known_hosts" ] && break
    kill -0 "$SSHD_PID" 2>/dev/null || die "sshd exited (see $SSHD_LOG)"
    sleep 0.1
done
[ -s "$WORK/known_hosts" ] || die "sshd did not answer on 127.0.0.1:$SSH_PORT (see $SSHD_LOG)"
grep -q "^\[127.0.0.1\]:$SSH_PORT ssh-ed25519 " "$WORK/known_hosts" || die "unexpected known_hosts: $(cat "$WORK/known_hosts")"

# --- Tether's config: one tunnel, one profile per target.
cat > "$WORK/tether.toml" <<EOF
[profiles.sink]
backend = "codex-worker"
url = "http://127.0.0.1:$SINK_PORT"
tunnel = "bench"

[profiles.echo]
backend = "codex-worker"
url = "http://127.0.0.1:$ECHO_PORT"
tunnel = "bench"

[tunnels.bench]
host = "127.0.0.1"
port = $SSH_PORT
user = "root"
identity = "$WORK/client_ed25519"
known_hosts = "$WORK/known_hosts"
keepalive = 0
EOF
mkdir -p "$WORK/state" "$WORK/config"

log_mark() { wc -l < "$SSHD_LOG"; }
# cipher_since LINE: the client->server cipher and MAC of the first key exchange logged after LINE.
cipher_since() {
    tail -n +"$(($1 + 1))" "$SSHD_LOG" | grep -m1 -o 'kex: client->server cipher: [^ ]* MAC: [^ ]*' \
        | sed 's/kex: client->server cipher: \([^ ]*\) MAC: \(.*\)/\1 + \2/; s/ + <implicit>$//' || true
}

# start_tether PROFILE: runs `tether tunnel`, sets TETHER_PID and TETHER_PORT (from its first line).
start_tether() {
    local out="$WORK/tether-$1.out"
    # Gone before the start: a second run must not read the first run's port from it.
    rm -f "$out"
    XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config" \
        "$BIN" --config "$WORK/tether.toml" -p "$1" tunnel > "$out" 2> "$OUT_DIR/tunnel-tether-$1.err" &
    TETHER_PID=$!
    PIDS+=("$TETHER_PID")
    local line=""
    for _ in $(seq 1 150); do
        line=$(head -n1 "$out" 2>/dev/null || true)
        [ -n "$line" ] && break
        kill -0 "$TETHER_PID" 2>/dev/null || break
        sleep 0.1
    done
    [ -n "$line" ] || die "tether tunnel did not start (see $OUT_DIR/tunnel-tether-$1.err)"
    TETHER_PORT=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["local"].rsplit(":", 1)[1])' "$line")
}

# start_ssh TARGETPORT NAME [SSH OPTIONS...]: runs `ssh -N -L`, sets SSH_PID and SSH_LOCAL.
start_ssh() {
    local target=$1 name=$2; shift 2
    local err="$OUT_DIR/tunnel-ssh-$name.err"
    SSH_LOCAL=$(free_port)
    ssh -v -N -F /dev/null -L "127.0.0.1:$SSH_LOCAL:127.0.0.1:$target" -p "$SSH_PORT" \
        -i "$WORK/client_ed25519" -o IdentitiesOnly=yes -o UserKnownHostsFile="$WORK/known_hosts" \
        -o StrictHostKeyChecking=yes -o BatchMode=yes -o ExitOnForwardFailure=yes "$@" \
        root@127.0.0.1 2> "$err" &
    SSH_PID=$!
    PIDS+=("$SSH_PID")
    for _ in $(seq 1 150); do
        grep -q "Entering interactive session" "$err" 2>/dev/null && return 0
        kill -0 "$SSH_PID" 2>/dev/null || break
        sleep 0.1
    done
    die "ssh -L did not start (see $err)"
}

bulk() { timeout "$BULK_TIMEOUT" python3 "$WORK/client.py" bulk "$1" "$BULK_BYTES" || die "bulk transfer through port $1 failed"; }
rtt() { timeout "$RTT_TIMEOUT" python3 "$WORK/client.py" rtt "$1" "$RTT_COUNT" "$RTT_SIZE" || die "round trips through port $1 failed"; }
mbps() { python3 -c "import sys; print(f'{int(sys.argv[1]) / 1e6 / float(sys.argv[2]):.1f}')" "$BULK_BYTES" "$1"; }

# Direct to the sink (no tunnel), for scale.
DIRECT_S=$(bulk "$SINK_PORT")

# The libssh2 ceiling: built here, from bench/libssh2-forward.c.
LIBSSH2_CEILING=${LIBSSH2_CEILING:-1}
if [ "$LIBSSH2_CEILING" = 1 ]; then
    cc -O2 -o "$WORK/libssh2-forward" "$BENCH_DIR/libssh2-forward.c" -lssh2 2> "$OUT_DIR/tunnel-c-build.err" \
        || die "cannot build libssh2-forward.c (needs cc and libssh2-1-dev; see $OUT_DIR/tunnel-c-build.err)"
fi
# start_c TARGETPORT: runs the C forwarder, sets C_PID and C_PORT.
start_c() {
    rm -f "$WORK/c.out"  # a second run must not read the first run's port
    "$WORK/libssh2-forward" "$SSH_PORT" root "$WORK/client_ed25519" "$WORK/known_hosts" "$1" \
        > "$WORK/c.out" 2> "$OUT_DIR/tunnel-c.err" &
    C_PID=$!
    PIDS+=("$C_PID")
    C_PORT=""
    for _ in $(seq 1 150); do
        C_PORT=$(head -n1 "$WORK/c.out" 2>/dev/null || true)
        [ -n "$C_PORT" ] && return 0
        kill -0 "$C_PID" 2>/dev/null || break
        sleep 0.1
    done
    die "the libssh2 forwarder did not start (see $OUT_DIR/tunnel-c.err)"
}

# --- Bulk throughput. With the C ceiling, tether and the ceiling alternate (A B A B) and each
# side's median (of two: the mean) is kept; runs vary by ±10-15 % on 2 shared cores.
MARK=$(log_mark); start_tether sink
T_BULK_S=$(bulk "$TETHER_PORT"); kill_pid "$TETHER_PID"
T_CIPHER=$(cipher_since "$MARK")
if [ "$LIBSSH2_CEILING" = 1 ]; then
    MARK=$(log_mark); start_c "$SINK_PORT"
    C_BULK_1=$(bulk "$C_PORT"); kill_pid "$C_PID"
    C_CIPHER=$(cipher_since "$MARK")
    start_tether sink
    T_BULK_2=$(bulk "$TETHER_PORT"); kill_pid "$TETHER_PID"
    start_c "$SINK_PORT"
    C_BULK_2=$(bulk "$C_PORT"); kill_pid "$C_PID"
    T_BULK_RUNS="$T_BULK_S $T_BULK_2"
    T_BULK_S=$(python3 -c "import sys; print(f'{(float(sys.argv[1]) + float(sys.argv[2])) / 2:.4f}')" "$T_BULK_S" "$T_BULK_2")
    C_BULK_S=$(python3 -c "import sys; print(f'{(float(sys.argv[1]) + float(sys.argv[2])) / 2:.4f}')" "$C_BULK_1" "$C_BULK_2")
fi
MARK=$(log_mark); start_ssh "$SINK_PORT" sink
S_BULK_S=$(bulk "$SSH_LOCAL"); kill_pid "$SSH_PID"
S_CIPHER=$(cipher_since "$MARK")
if [ "$SAME_CIPHER" = 1 ]; then
    MARK=$(log_mark); start_ssh "$SINK_PORT" sink-aes -c aes128-ctr -m hmac-sha2-256
    A_BULK_S=$(bulk "$SSH_LOCAL"); kill_pid "$SSH_PID"
    A_CIPHER=$(cipher_since "$MARK")
fi

# --- Round trips.
start_tether echo
read -r T_P50 T_P99 < <(rtt "$TETHER_PORT"); kill_pid "$TETHER_PID"
start_ssh "$ECHO_PORT" echo
read -r S_P50 S_P99 < <(rtt "$SSH_LOCAL"); kill_pid "$SSH_PID"
read -r D_P50 D_P99 < <(rtt "$ECHO_PORT")
[ -n "${T_P50:-}" ] && [ -n "${S_P50:-}" ] && [ -n "${D_P50:-}" ] || die "a round-trip run printed nothing"

T_MBPS=$(mbps "$T_BULK_S"); S_MBPS=$(mbps "$S_BULK_S"); DIRECT_MBPS=$(mbps "$DIRECT_S")
RATIO=$(python3 -c "import sys; print(f'{float(sys.argv[2]) / float(sys.argv[1]):.2f}')" "$T_BULK_S" "$S_BULK_S")
# at_least A B: yes when A >= B.
at_least() { python3 -c "import sys; print('yes' if float(sys.argv[1]) >= float(sys.argv[2]) else 'no')" "$1" "$2"; }
echo "bench: tunnel ciphers (client->server, from sshd's log): tether ${T_CIPHER:-?} | ssh -L ${S_CIPHER:-?}" >&2
row "tunnel bulk, $(commas "$BULK_MB") MB to a sink" "$T_MBPS MB/s (${T_CIPHER:-?})" \
    "\`ssh -N -L\` $S_MBPS MB/s (${S_CIPHER:-?})" "${RATIO}×" "≥ 0.8×" "$(at_least "$RATIO" 0.8)" \
    "same sshd, same sink; direct, no tunnel: $DIRECT_MBPS MB/s${T_BULK_RUNS:+; tether runs (s): $T_BULK_RUNS}"
if [ "$LIBSSH2_CEILING" = 1 ]; then
    C_RATIO=$(python3 -c "import sys; print(f'{float(sys.argv[2]) / float(sys.argv[1]):.2f}')" "$T_BULK_S" "$C_BULK_S")
    row "tunnel bulk, $(commas "$BULK_MB") MB, against libssh2's ceiling" "$T_MBPS MB/s (${T_CIPHER:-?})" \
        "minimal C forwarding loop on libssh2 $(pkg-config --modversion libssh2 2>/dev/null || echo '?') $(mbps "$C_BULK_S") MB/s (${C_CIPHER:-?})" \
        "${C_RATIO}×" "— (informational)" - \
        "bench/libssh2-forward.c: one thread, non-blocking, poll, 256 KiB buffers; same sshd, sink and payload; tether and it alternate A B A B, mean of 2 runs each (C runs (s): $C_BULK_1 $C_BULK_2)"
fi
if [ "$SAME_CIPHER" = 1 ]; then
    A_RATIO=$(python3 -c "import sys; print(f'{float(sys.argv[2]) / float(sys.argv[1]):.2f}')" "$T_BULK_S" "$A_BULK_S")
    row "tunnel bulk, $(commas "$BULK_MB") MB, OpenSSH on tether's cipher" "$T_MBPS MB/s" \
        "\`ssh -N -L -c aes128-ctr -m hmac-sha2-256\` $(mbps "$A_BULK_S") MB/s (${A_CIPHER:-?})" "${A_RATIO}×" "— (informational)" - \
        "separates the cipher's cost from the tunnel's"
fi
DIFF=$(python3 -c "import sys; print(f'{float(sys.argv[1]) - float(sys.argv[2]):+.3f}')" "$T_P50" "$S_P50")
row "tunnel round trip, $(commas "$RTT_COUNT") × $RTT_SIZE B" "p50 $T_P50 ms, p99 $T_P99 ms" \
    "\`ssh -N -L\` p50 $S_P50 ms, p99 $S_P99 ms" "p50 $DIFF ms" "p50 within 0.2 ms of ssh" \
    "$(at_least 0.2 "${DIFF#+}")" "direct, no tunnel: p50 $D_P50 ms, p99 $D_P99 ms"
