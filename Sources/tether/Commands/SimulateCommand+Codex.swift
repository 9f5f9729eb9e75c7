import ArgumentParser
import Foundation
import Synchronization
import Logging
import TetherSim

/// `tether simulate codex`: the `codex app-server` simulator over ws (default), a unix socket
/// (`--unix`) or stdio (`--stdio`).
extension SimulateCommand {
    func validateCodex() throws {
        let codexOnly = stdio || unix != nil || overloadEvery != nil || drainOnSigterm
        if codexOnly, backend != .codex {
            throw ValidationError("--stdio, --unix, --overload-every and --drain-on-sigterm are for `simulate codex`")
        }
        guard backend == .codex else { return }
        if stdio, unix != nil { throw ValidationError("--stdio and --unix are two transports: pick one") }
        if token != nil, stdio || unix != nil {
            throw ValidationError("--token is for the WebSocket listener: stdio and the daemon's unix socket have no auth")
        }
        if let overloadEvery, overloadEvery < 1 { throw ValidationError("--overload-every takes a positive number of requests") }
        if let scenario, CodexAppServerScenario(rawValue: scenario) == nil {
            throw ValidationError("unknown scenario \"\(scenario)\"; use one of: \(CodexAppServerScenario.allCases.map(\.rawValue).joined(separator: ", "))")
        }
    }

    func runCodex(logger: Logger) async throws {
        var simOptions = CodexAppServerSimulator.Options(
            token: token, pacing: .nanoseconds(Int64((pacing * 1_000_000).rounded())),
            scenario: scenario.flatMap(CodexAppServerScenario.init(rawValue:)), overloadEvery: overloadEvery)
        if let codexHome { simOptions.codexHome = codexHome }
        simOptions.flood = flood
        simOptions.floodClose = floodClose
        let simulator = CodexAppServerSimulator(options: simOptions, logger: logger)
        // A peer gone mid-write (a closed stdout, a cut socket) must not kill the simulator.
        signal(SIGPIPE, SIG_IGN)
        if stdio {
            // stdout carries the protocol only (logs go to stderr).
            await simulator.runStdio()
            return
        }
        let printed: String
        if let unix {
            printed = try await simulator.start(unixPath: unix).absoluteString
        } else {
            printed = try await simulator.start(host: listen.host, port: UInt16(listen.port)).absoluteString
        }
        LineOutput.standardOutput.write(printed + "\n")
        LineOutput.standardError.write("tether simulate: codex app-server simulator listening on \(printed); Ctrl-C stops it\n")
        if let profile = profileReaching(printed) {
            LineOutput.standardError.write("a profile that reaches it (for your config.toml; `tether -p sim check` tries it):\n\(profile)")
        }
        if drainOnSigterm {
            await waitForDrain(simulator)
        } else {
            await waitForInterrupt()
        }
        await simulator.stop()
    }

    /// SIGINT stops at once. The first SIGTERM drains (returns once no turn runs); a second
    /// SIGTERM returns at once (codex's shutdown, note §6d).
    private func waitForDrain(_ simulator: CodexAppServerSimulator) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = OnceFlag()
            let terms = TermCounter()
            var sources: [any DispatchSourceSignal] = []
            for signalNumber in [SIGINT, SIGTERM] {
                signal(signalNumber, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
                source.setEventHandler {
                    if signalNumber == SIGTERM, terms.next() == 1 {
                        LineOutput.standardError.write("tether simulate: draining (SIGTERM again stops at once)\n")
                        simulator.beginDrain()
                        Task {
                            await simulator.waitUntilDrained()
                            if once.set() { continuation.resume() }
                        }
                        return
                    }
                    if once.set() { continuation.resume() }
                }
                source.resume()
                sources.append(source)
            }
            SignalSources.keep(sources)
        }
    }
}

private final class TermCounter: Sendable {
    private let count = Mutex(0)
    func next() -> Int {
        count.withLock { count in
            count += 1
            return count
        }
    }
}
