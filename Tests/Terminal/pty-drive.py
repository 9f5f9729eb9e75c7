#!/usr/bin/env python3
"""Runs a command on a pseudo-terminal, as a person at a terminal would, and drives it.

    pty-drive.py [--timeout S] [--rows R --cols C] STEP... -- COMMAND ARG...

Steps, in order:
    expect:TEXT   wait until the terminal has shown TEXT (after what earlier steps matched)
    send:TEXT     type TEXT (backslash escapes: \\r Enter, \\x03 Ctrl-C)
    sleep:S       wait S seconds

The command is a session leader with the pty as its controlling terminal, so Ctrl-C typed on it
is a SIGINT from the terminal driver, not one sent by hand. Everything the terminal showed goes to
stdout as it comes, then a last line `[exit N]` (N = 128 + signal when killed by one). Exits 0 when every
step ran, 3 when an `expect` timed out (the transcript so far is printed all the same).
"""
import codecs, fcntl, os, pty, select, signal, struct, sys, termios, time

def main(argv):
    timeout, rows, cols = 30.0, 24, 80
    steps = []
    i = 0
    while i < len(argv) and argv[i] != "--":
        arg = argv[i]
        if arg == "--timeout": timeout = float(argv[i + 1]); i += 2; continue
        if arg == "--rows": rows = int(argv[i + 1]); i += 2; continue
        if arg == "--cols": cols = int(argv[i + 1]); i += 2; continue
        kind, _, value = arg.partition(":")
        steps.append((kind, value))
        i += 1
    command = argv[i + 1:]
    if not command:
        print("usage: pty-drive.py [--timeout S] STEP... -- COMMAND ARG...", file=sys.stderr)
        return 64

    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(command[0], command)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    shown = bytearray()
    matched = 0  # where the next `expect` starts looking
    deadline = time.monotonic() + timeout

    def pump(wait):
        """Reads what the terminal shows for up to `wait` seconds; False at EOF."""
        ready, _, _ = select.select([fd], [], [], max(0.0, wait))
        if not ready:
            return True
        try:
            data = os.read(fd, 65536)
        except OSError:
            return False
        if not data:
            return False
        shown.extend(data)
        # As it comes: a test may act on what the terminal shows while the command runs.
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return True

    status = 0
    alive = True
    for kind, value in steps:
        if kind == "expect":
            needle = value.encode()
            while alive and shown.find(needle, matched) < 0 and time.monotonic() < deadline:
                alive = pump(deadline - time.monotonic())
            found = shown.find(needle, matched)
            if found < 0:
                status = 3
                sys.stdout.buffer.write(("\n[pty-drive: timed out waiting for %r]\n" % value).encode())
                break
            matched = found + len(needle)
        elif kind == "send":
            os.write(fd, codecs.decode(value, "unicode_escape").encode("latin-1"))
        elif kind == "sleep":
            end = time.monotonic() + float(value)
            while alive and time.monotonic() < end:
                alive = pump(end - time.monotonic())
        else:
            print("unknown step %r" % kind, file=sys.stderr)
            return 64

    while alive and time.monotonic() < deadline:
        alive = pump(deadline - time.monotonic())
    if alive:
        os.kill(pid, signal.SIGKILL)
        status = status or 3
        sys.stdout.buffer.write(b"\n[pty-drive: the command did not exit in time; killed]\n")
    _, raw = os.waitpid(pid, 0)
    code = os.WEXITSTATUS(raw) if os.WIFEXITED(raw) else 128 + os.WTERMSIG(raw)
    sys.stdout.buffer.write(b"\n[exit %d]\n" % code)
    sys.stdout.buffer.flush()
    return status

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
