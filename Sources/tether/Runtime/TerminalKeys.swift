#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Synchronization

/// Single keys from the terminal on stdin: the terminal is put in non-canonical mode without
/// echo for as long as a key is awaited (a key counts without Enter and is not echoed), and put
/// back as it was after, on every path out (an interrupt calls `restore` too). Signals stay on:
/// Ctrl-C still interrupts.
final class TerminalKeys: Sendable {
    private let saved = Mutex<termios?>(nil)
    /// Bumped to end the wait in progress (the approval was answered elsewhere).
    private let generation = Mutex(0)

    /// Whether a person can be asked here: stdin and stdout both terminals.
    static var interactive: Bool { isatty(0) == 1 && isatty(1) == 1 }

    /// Waits for one key on a thread of its own (the stream goes on meanwhile); nil if `stop`
    /// ended the wait or stdin closed.
    func nextKey() async -> UInt8? {
        let mine = generation.withLock { $0 }
        return await withCheckedContinuation { continuation in
            DispatchQueue.global().async { [self] in
                enterKeyMode()
                defer { restore() }
                var descriptor = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
                while generation.withLock({ $0 }) == mine {
                    let ready = poll(&descriptor, 1, 100)
                    if ready < 0, errno == EINTR { continue }
                    if ready < 0 { break }
                    guard ready > 0 else { continue }
                    var byte: UInt8 = 0
                    let count = read(0, &byte, 1)
                    if count < 0, errno == EINTR { continue }
                    if count == 1 {
                        continuation.resume(returning: byte)
                        return
                    }
                    break  // end of input
                }
                continuation.resume(returning: nil)
            }
        }
    }

    /// Ends the wait in progress, if any (it returns nil).
    func stop() { generation.withLock { $0 += 1 } }

    /// Puts the terminal back as it was before the wait (a no-op when not waiting).
    func restore() {
        saved.withLock { saved in
            guard var original = saved else { return }
            tcsetattr(0, TCSANOW, &original)
            saved = nil
        }
    }

    private func enterKeyMode() {
        saved.withLock { saved in
            var current = termios()
            guard saved == nil, tcgetattr(0, &current) == 0 else { return }
            saved = current
            current.c_lflag &= ~tcflag_t(ICANON | ECHO)
            // A read returns as soon as one byte is there (Linux: c_cc[VMIN] is .6, c_cc[VTIME] .5).
            precondition(VMIN == 6 && VTIME == 5, "c_cc's layout is Linux's")
            current.c_cc.6 = 1
            current.c_cc.5 = 0
            tcsetattr(0, TCSANOW, &current)
        }
    }
}
