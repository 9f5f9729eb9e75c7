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
    private struct State {
        /// The terminal's settings before key mode; nil when not in it.
        var saved: termios?
        /// Bumped to end the wait in progress (the approval was answered elsewhere, the turn ended).
        var generation = 0
    }

    /// One lock for both: a wait that starts late must not put the terminal in key mode after
    /// `stop` put it back (it stayed without echo after the process ended).
    private let state = Mutex(State())

    /// Whether a person can be asked here: stdin and stdout both terminals.
    static var interactive: Bool { isatty(0) == 1 && isatty(1) == 1 }

    /// Marks a point: `nextKey(after:)` returns nil at once if `stop` was called since.
    func mark() -> Int { state.withLock { $0.generation } }

    /// Waits for one key on a thread of its own (the stream goes on meanwhile); nil if `stop`
    /// was called since `mark` (now or during the wait) or stdin closed.
    func nextKey(after mine: Int) async -> UInt8? {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { [self] in
                defer { restore() }
                var descriptor = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
                while enterKeyMode(ifStill: mine) {
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
    func stop() {
        state.withLock { state in
            state.generation += 1
            Self.putBack(&state)
        }
    }

    /// Puts the terminal back as it was before the wait (a no-op when not waiting).
    func restore() { state.withLock { Self.putBack(&$0) } }

    private static func putBack(_ state: inout State) {
        guard var original = state.saved else { return }
        tcsetattr(0, TCSANOW, &original)
        state.saved = nil
    }

    /// Key mode, unless the wait `generation` was ended meanwhile (false then).
    private func enterKeyMode(ifStill generation: Int) -> Bool {
        state.withLock { state in
            guard state.generation == generation else { return false }
            var current = termios()
            guard state.saved == nil, tcgetattr(0, &current) == 0 else { return true }
            state.saved = current
            current.c_lflag &= ~tcflag_t(ICANON | ECHO)
            // A read returns as soon as one byte is there (Linux: c_cc[VMIN] is .6, c_cc[VTIME] .5).
            precondition(VMIN == 6 && VTIME == 5, "c_cc's layout is Linux's")
            current.c_cc.6 = 1
            current.c_cc.5 = 0
            tcsetattr(0, TCSANOW, &current)
            return true
        }
    }
}
