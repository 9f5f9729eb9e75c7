import TetherCore
import Dispatch
import Foundation
import Synchronization

/// Ctrl-C while `send --follow` streams stops this view, not the turn: the agent keeps working
/// (and `sessions list` shows it busy). Saying nothing left the user believing it had stopped.
/// While installed, SIGINT says what is still running and the exact commands that stop it or
/// follow it again, then exits 130.
final class FollowInterruption: Sendable {
    private struct Running {
        var session: String
        var turn: String?
        var finished = false
    }

    private let running: Mutex<Running>
    private let profile: String
    private let invocation: Invocation
    /// Run first when interrupted (a terminal in key mode is put back, and the wait for a key
    /// ended, so its thread cannot put it in key mode again before the process exits).
    private let cleanup: @Sendable () -> Void

    init(session: String, profile: String, invocation: Invocation, cleanup: @escaping @Sendable () -> Void = {}) {
        running = Mutex(Running(session: session))
        self.profile = profile
        self.invocation = invocation
        self.cleanup = cleanup
    }

    /// The turn the backend started (its id is what `abort --turn` takes).
    func noteTurn(_ turn: String) { running.withLock { $0.turn = turn } }

    /// The turn ended: an interruption now has nothing to report.
    func noteFinished() { running.withLock { $0.finished = true } }

    /// What Ctrl-C says, or nil once the turn has ended.
    func notice() -> String? {
        let state = running.withLock { $0 }
        guard !state.finished else { return nil }
        let what = state.turn.map { "the turn \($0) in session \(state.session)" } ?? "the turn in session \(state.session)"
        let abort = invocation.command("abort \(shellQuote(state.session))" + (state.turn.map { " --turn \(shellQuote($0))" } ?? ""))
        let follow = invocation.command("events --session \(shellQuote(state.session)) --follow")
        return """
            tether: interrupted: only this view stopped; \(what) is still running on \(profile)
              → stop it:      \(abort)
              → follow again: \(follow)

            """
    }

    /// Handles SIGINT until the returned source is cancelled (`uninstall`).
    func install() -> any DispatchSourceSignal {
        signal(SIGINT, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
        source.setEventHandler { [self] in
            cleanup()
            StatusLine.shared.clear()
            LineOutput.standardError.write("\n" + (notice() ?? ""))
            exit(130)
        }
        source.resume()
        return source
    }

    static func uninstall(_ source: any DispatchSourceSignal) {
        source.cancel()
        signal(SIGINT, SIG_DFL)
    }
}
