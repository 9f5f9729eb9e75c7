import Foundation
import Testing
import TetherCore
@testable import TetherTestSupport

/// Every backend × every fault: the real binary runs a long turn through `FaultProxy` while the
/// link is broken on purpose, and must deliver each `part.completed` / `turn.completed` exactly
/// once with the exact text, never crash, stay within its memory bound and exit as the design
/// says. Prints the summary table (scenario × backend) whatever happens.
@Suite(.serialized) struct FaultInjectionTests {
    /// Resident memory no run may exceed (the 10 MB frame included).
    static let memoryBoundMegabytes = 160.0

    /// `TETHER_FAULT_BACKENDS=opencode,notification` and `TETHER_FAULT_SCENARIOS=restarts,cuts`
    /// narrow a run while working on one cell (the references always run).
    static func rigs() -> [any FaultRig] {
        let all: [any FaultRig] = [OpenCodeRig(), OpenCodeRig(legacy: true), OpenCodeRig(generation: 2), CodexWorkerRig(),
                                   CodexMonitorRig(), NotificationRig(), GatewayRig()]
        guard let only = ProcessInfo.processInfo.environment["TETHER_FAULT_BACKENDS"] else { return all }
        let names = Set(only.split(separator: ",").map(String.init))
        return all.filter { names.contains($0.name) }
    }

    static func selected(_ scenario: FaultScenario) -> Bool {
        guard let only = ProcessInfo.processInfo.environment["TETHER_FAULT_SCENARIOS"] else { return true }
        return scenario.isReference || only.split(separator: ",").contains { $0 == "\(scenario)" }
    }

    @Test func everyBackendSurvivesEveryFault() async throws {
        var outcomes: [FaultOutcome] = []
        for rig in Self.rigs() {
            let port = try await rig.start()
            do {
                var references: [Int: [Event]] = [:]
                for scenario in FaultScenario.allCases where rig.supports(scenario) && Self.selected(scenario) {
                    let outcome = try await Self.run(scenario, on: rig, simulatorPort: port, references: &references)
                    outcomes.append(outcome)
                    print("fault harness: \(scenario.rawValue) × \(rig.name): \(outcome.passed ? "ok" : "FAIL \(outcome.problems)")")
                }
            } catch {
                await rig.stop()
                print(FaultLedger.table(outcomes))
                throw error
            }
            await rig.stop()
        }
        print("\nFault injection summary (\(Date()))\n" + FaultLedger.table(outcomes) + "\n")
        for outcome in outcomes where !outcome.passed {
            Issue.record(Comment(rawValue: "\(outcome.scenario) × \(outcome.backend): \(outcome.problems.joined(separator: "; "))"))
        }
    }

    /// One cell: a fresh proxy with the scenario's fault, a profile through it, one turn.
    static func run(_ scenario: FaultScenario, on rig: any FaultRig, simulatorPort: Int,
                    references: inout [Int: [Event]]) async throws -> FaultOutcome {
        let proxy = try FaultProxy(upstreamPort: simulatorPort, framing: rig.framing, fault: scenario.fault(rig.framing),
                                   isStream: { rig.isStream($0) })
        defer { proxy.stop() }
        // The tunnel scenario reaches the simulator through a real sshd instead of the proxy.
        let ssh = scenario == .sshdRestarted ? try SSHTunnelFixture() : nil
        defer { ssh?.server.stop() }
        let config = try TemporaryConfig("""
            [profiles.direct]
            \(rig.profile(port: simulatorPort))

            [profiles.faulty]
            \(rig.profile(port: ssh == nil ? proxy.port : simulatorPort))
            liveness = \(FaultScenario.liveness)
            reconnect_delay = \(FaultScenario.reconnectDelay)
            \(ssh == nil ? "" : "tunnel = \"vps\"")

            \(ssh?.tunnelTable ?? "")
            """)
        var outcome = FaultOutcome(scenario: scenario.rawValue, backend: rig.name)
        outcome.expectedExit = scenario == .revoked ? 77 : rig.successExit

        // Set up (a session) directly, so faults land only on the turn.
        let arguments = try await rig.turnArguments(length: scenario.turnLength, global: ["--config", config.path, "-p", "direct"])
        let verbose = ProcessInfo.processInfo.environment["TETHER_FAULT_VERBOSE"].map { _ in ["-vv"] } ?? []
        let run = try TetherProcess(arguments + ["--config", config.path, "-p", "faulty"] + verbose, environment: rig.environment)
        defer { if !verbose.isEmpty { print("--- stderr of \(scenario) × \(rig.name)\n\(run.stderrText)") } }

        async let driving: Void = rig.drive(run, length: scenario.turnLength)
        switch scenario {
        case .restarts:
            try await restartRepeatedly(proxy, while: run)
        case .sshdRestarted:
            if let ssh { outcome.faults = "\(try await ssh.restartRepeatedly(while: run)) sshd restarts" }
        case .revoked:
            _ = try await run.waitForEvent(.partDelta, timeout: .seconds(30))
            rig.setCredentialsRevoked(true)
            try await proxy.restart(downFor: .milliseconds(100))
        default:
            break
        }
        try await driving
        let result: TetherProcess.Result
        do {
            result = try await run.finish(timeout: .seconds(180))
        } catch {
            rig.setCredentialsRevoked(false)
            outcome.problems.append("did not finish: \(error)")
            return outcome
        }
        rig.setCredentialsRevoked(false)
        outcome.exitStatus = result.status
        outcome.peakRSSMegabytes = Double(run.peakRSSKilobytes) / 1024
        if ssh == nil {
            outcome.faults = describe(proxy.stats, scenario)
            outcome.restBytes = proxy.stats.restBytes
        }

        let events: [Event]
        do {
            events = try result.events()
        } catch {
            outcome.problems.append("stdout is not JSON Lines: \(error)")
            return outcome
        }
        if scenario.isReference { references[scenario.turnLength] = events }
        if result.status != outcome.expectedExit {
            outcome.problems.append("exit \(result.status), expected \(outcome.expectedExit); stderr: \(result.stderr.suffix(600))")
        }
        if result.status > 128, result.status != outcome.expectedExit {
            outcome.problems.append("crashed (signal \(result.status - 128)); stderr: \(result.stderr.suffix(600))")
        }
        if outcome.peakRSSMegabytes > memoryBoundMegabytes {
            outcome.problems.append("peak RSS \(Int(outcome.peakRSSMegabytes)) MB > \(Int(memoryBoundMegabytes)) MB")
        }

        if scenario == .revoked {
            // The turn cannot finish: what came before the revocation must not repeat, and the
            // error must say what failed without printing the secret.
            FaultLedger.judge(&outcome, events: events, reference: FaultLedger.completed(events))
            outcome.lost = 0
            outcome.textExact = outcome.duplicated == 0
            for secret in ["secret", "t0ken", "s3cret"] where result.stderr.contains(secret) {
                outcome.problems.append("stderr prints the secret")
            }
            if !result.stderr.contains("faulty") { outcome.problems.append("stderr does not name the profile: \(result.stderr)") }
        } else {
            FaultLedger.judge(&outcome, events: events, reference: references[scenario.turnLength] ?? [])
            if outcome.expected == 0 { outcome.problems.append("the reference run delivered nothing") }
        }
        if !checkFaultsLanded(proxy.stats, scenario, &outcome) {
            outcome.problems.append("the fault did not happen as planned: \(outcome.faults)")
        }
        return outcome
    }

    /// 20 restarts, each once the stream has delivered something since the last one.
    static func restartRepeatedly(_ proxy: FaultProxy, while run: TetherProcess) async throws {
        for _ in 0..<FaultScenario.restartCount {
            let before = proxy.stats.streamBytes
            let deadline = ContinuousClock.now + .seconds(30)
            while proxy.stats.streamBytes < before + 400, run.isRunning, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            guard run.isRunning else { return }
            try await proxy.restart(downFor: .milliseconds(150))
        }
    }

    static func describe(_ stats: FaultProxy.Stats, _ scenario: FaultScenario) -> String {
        switch scenario {
        case .baseline, .baselineLong: return "none"
        case .restarts: return "\(stats.restarts) restarts"
        case .stall: return "\(stats.stalls) stall"
        case .drip: return "\(stats.streamBytes) bytes, 1 per write"
        case .cuts: return "\(stats.cuts) cuts (positions 0–\(max(stats.cuts - 1, 0)))"
        case .malformed: return "\(stats.injected) bad frames"
        case .hugeLine: return "\(stats.injected) × 10 MB"
        case .revoked: return "\(stats.restarts) restart, new credentials"
        case .sshdRestarted: return "sshd restarts"
        }
    }

    static func checkFaultsLanded(_ stats: FaultProxy.Stats, _ scenario: FaultScenario, _ outcome: inout FaultOutcome) -> Bool {
        switch scenario {
        case .baseline, .baselineLong: return true
        case .restarts: return stats.restarts == FaultScenario.restartCount
        case .stall: return stats.stalls == 1
        case .drip: return stats.streamBytes > 1000
        case .cuts: return stats.cuts >= 150
        case .malformed: return stats.injected >= 10
        case .hugeLine: return stats.injected == 1
        case .revoked: return stats.restarts == 1
        case .sshdRestarted: return outcome.faults == "\(FaultScenario.sshdRestartCount) sshd restarts"
        }
    }
}
