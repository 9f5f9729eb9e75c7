import Foundation
import Synchronization
import Testing
import TetherCore
import TetherNet
import TetherStreaming
@testable import TetherCodexMonitor

/// What a consumer reads from the RPC, in order.
enum Received: Equatable {
    /// A notification as the reader handed it (`.lines` when it kept lines as bytes).
    case incoming(CodexMonitorRPC.Incoming)
    /// This many were dropped after what came before.
    case lost(Int)
    case ended
}

extension CodexMonitorRPC {
    /// Everything handed on until a wait of `quiet` brings nothing, or the end (included).
    /// Long enough for the reader to hand on what it was given, on a loaded machine.
    func drain(quiet: Duration = .milliseconds(500)) async throws -> [Received] {
        var received: [Received] = []
        while true {
            switch try await notifications.next(timeout: quiet) {
            case .batch(let batch, let lost):
                received += batch.map(Received.incoming)
                if lost > 0 { received.append(.lost(lost)) }
            case .timedOut: return received
            case .ended: return received + [.ended]
            }
        }
    }
}

extension [Received] {
    /// The notifications, lines kept as bytes decoded as a consumer does.
    func decoded(by rpc: CodexMonitorRPC) -> [CodexMonitorRPC.Incoming] {
        flatMap { received -> [CodexMonitorRPC.Incoming] in
            guard case .incoming(let incoming) = received else { return [] }
            guard case .lines(let kept) = incoming else { return [incoming] }
            return (0..<kept.count).compactMap { rpc.decode(kept.line($0), strings: nil) }
        }
    }

    /// The `data` of each `terminal-output` notification, in order.
    func data(by rpc: CodexMonitorRPC) -> [String] {
        decoded(by: rpc).compactMap { incoming in
            guard case .notification(_, let params, _) = incoming else { return nil }
            return params["data"]?.string
        }
    }

    /// How many notifications came kept as their lines.
    var lines: Int { reduce(0) { if case .incoming(.lines(let kept)) = $1 { $0 + kept.count } else { $0 } } }
    var lost: Int { reduce(0) { if case .lost(let count) = $1 { $0 + count } else { $0 } } }
}

@Suite struct CodexMonitorRPCTests {
    func makeRPC(budget: Int = CodexMonitorRPC.channelBytes, callBudget: Int? = nil) -> (CodexMonitorRPC, MemoryLineConnection) {
        let connection = MemoryLineConnection()
        let rpc = CodexMonitorRPC(connection: connection, logger: quietLogger, budget: budget, callBudget: callBudget ?? budget)
        rpc.start()
        return (rpc, connection)
    }

    func answer(_ connection: MemoryLineConnection) async throws {
        let request = try #require(try await connection.nextRequest())
        connection.deliver("{\"id\":\(request["id"]!.serialized),\"result\":{\"ok\":true}}")
    }

    func output(_ index: Int, pad: Int = 0) -> String {
        let padding = pad > 0 ? #","pad":"\#(String(repeating: "x", count: pad))""# : ""
        return #"{"method":"terminal-output","params":{"workspaceId":"ws-1","terminalId":"t1","data":"\#(index)"\#(padding)}}"#
    }

    @Test func responsesAreMatchedByIdInAnyOrderWithNotificationsInterleaved() async throws {
        let (rpc, connection) = makeRPC()
        async let first = rpc.call("list_workspaces", timeout: .seconds(5))
        async let second = rpc.call("ping", timeout: .seconds(5))
        async let third = rpc.call("daemon_info", timeout: .seconds(5))

        var requests: [JSONValue] = []
        for _ in 0..<3 { requests.append(try #require(try await connection.nextRequest())) }
        // Every request carries its own id, no jsonrpc field, and params only when given.
        #expect(Set(requests.compactMap { $0["id"]?.int }).count == 3)
        #expect(requests.allSatisfy { $0["jsonrpc"] == nil && $0["params"] == nil })
        func id(_ method: String) -> Int64 { requests.first { $0["method"]?.string == method }!["id"]!.int! }

        connection.deliver(#"{"method":"app-server-event","params":{"workspace_id":"ws-1","message":{"method":"a"}}}"#)
        connection.deliver("{\"id\":\(id("daemon_info")),\"result\":{\"name\":\"codex-monitor-daemon\"}}")
        connection.deliver(#"{"method":"app-server-event","params":{"workspace_id":"ws-1","message":{"method":"b"}}}"#)
        connection.deliver("{\"id\":\(id("ping")),\"result\":{\"ok\":true}}")
        connection.deliver("{\"id\":\(id("list_workspaces")),\"result\":[]}")

        #expect(try await first == [])
        #expect(try await second == ["ok": true])
        #expect(try await third == ["name": "codex-monitor-daemon"])
        // Read while calls waited: kept as their lines, decoded as the stream takes them.
        let received = try await rpc.drain().decoded(by: rpc)
        guard received.count == 2, case .notification("app-server-event", let pa, _) = received[0],
              case .notification(_, let pb, _) = received[1] else {
            Issue.record("expected two notifications, got \(received)")
            return
        }
        #expect(pa["message"]?["method"] == "a")
        #expect(pb["message"]?["method"] == "b")
    }

    @Test func manyCallsInFlightAnsweredShuffled() async throws {
        let (rpc, connection) = makeRPC()
        let results = try await withThrowingTaskGroup(of: (Int, JSONValue).self) { group in
            for index in 0..<50 {
                group.addTask { (index, try await rpc.call("echo", params: ["n": .int(Int64(index))], timeout: .seconds(5))) }
            }
            var requests: [JSONValue] = []
            for _ in 0..<50 { requests.append(try await connection.nextRequest()!) }
            for request in requests.shuffled() {
                connection.deliver("{\"id\":\(request["id"]!.serialized),\"result\":{\"n\":\(request["params"]!["n"]!.serialized)}}")
            }
            var results: [Int: JSONValue] = [:]
            for try await (index, value) in group { results[index] = value }
            return results
        }
        #expect(results.count == 50)
        #expect(results.allSatisfy { $0.value["n"]?.int == Int64($0.key) })
    }

    @Test func garbageLinesAndUnknownIdsAreSkipped() async throws {
        let (rpc, connection) = makeRPC()
        async let answer = rpc.call("ping", timeout: .seconds(5))
        let request = try #require(try await connection.nextRequest())
        connection.deliver("this is not json")
        connection.deliver(#"{"id":999,"result":{"stray":true}}"#)
        connection.deliver(#"{"id":"abc","result":{}}"#)
        connection.deliver(#"[1,2,3]"#)
        connection.deliver(#"{"id":5,"method":"daemon/asks","params":{}}"#)
        connection.deliver("{\"id\":\(request["id"]!.serialized),\"result\":{\"ok\":true}}")
        #expect(try await answer == ["ok": true])
    }

    @Test func aDaemonErrorIsARemoteFailure() async throws {
        let (rpc, connection) = makeRPC()
        async let answer = rpc.call("connect_workspace", params: ["id": "nope"], timeout: .seconds(5))
        let request = try #require(try await connection.nextRequest())
        #expect(request["params"] == ["id": "nope"])
        connection.deliver("{\"id\":\(request["id"]!.serialized),\"error\":{\"message\":\"workspace not found\"}}")
        do {
            _ = try await answer
            Issue.record("expected a failure")
        } catch {
            guard let failure = error as? CodexMonitorRPC.Failure, case .remote(let remote) = failure else { Issue.record("unexpected \(error)"); return }
            #expect(remote.message == "workspace not found")
        }
    }

    @Test func eachCallHasItsOwnTimeoutAndALateAnswerIsDropped() async throws {
        let (rpc, connection) = makeRPC()
        let clock = ContinuousClock()
        let start = clock.now
        do {
            _ = try await rpc.call("resume_thread", timeout: .milliseconds(100))
            Issue.record("expected a timeout")
        } catch {
            guard case .timedOut(let method, _) = error else { Issue.record("unexpected \(error)"); return }
            #expect(method == "resume_thread")
        }
        #expect(clock.now - start < .seconds(3))
        let late = try #require(try await connection.nextRequest())
        connection.deliver("{\"id\":\(late["id"]!.serialized),\"result\":{\"late\":true}}")

        async let next = rpc.call("ping", timeout: .seconds(5))
        let request = try #require(try await connection.nextRequest())
        connection.deliver("{\"id\":\(request["id"]!.serialized),\"result\":{\"ok\":true}}")
        #expect(try await next == ["ok": true])
    }

    @Test func theEndOfTheConnectionFailsPendingCallsAndEndsNotifications() async throws {
        let (rpc, connection) = makeRPC()
        async let answer = rpc.call("resume_thread", timeout: .seconds(5))
        _ = try await connection.nextRequest()
        connection.deliver(#"{"method":"terminal-exit","params":{"workspaceId":"ws-1","terminalId":"t1"}}"#)
        connection.inbound.finish(throwing: NetError(.interrupted, url: "memory", detail: "reset by peer"))
        do {
            _ = try await answer
            Issue.record("expected a failure")
        } catch {
            guard let failure = error as? CodexMonitorRPC.Failure, case .closed(let net?) = failure else { Issue.record("unexpected \(error)"); return }
            #expect(net.kind == .interrupted)
        }
        // What arrived before the end is still delivered, then the failure.
        guard case .batch(let batch, 0) = try await rpc.notifications.next(timeout: .seconds(5)) else {
            Issue.record("what came before the end was not handed on")
            return
        }
        #expect(batch.count == 1)
        await #expect(throws: CodexMonitorRPC.Failure.self) { _ = try await rpc.notifications.next(timeout: .seconds(5)) }
        // And later calls fail at once.
        await #expect(throws: CodexMonitorRPC.Failure.self) { _ = try await rpc.call("ping", timeout: .seconds(5)) }
    }

    /// The reader waits for a consumer that is behind — until a call waits for its response,
    /// which comes behind the flood: then it reads on (the call rouses it), keeps what fits the
    /// call budget and drops the rest, counted.
    @Test func aConsumerThatFallsBehindIsToldHowManyNotificationsWereDropped() async throws {
        let line = #"{"method":"app-server-event","params":{"workspace_id":"ws-1","message":{"method":"x"}}}"#
        // Three lines before the reader waits, six while a call waits for its response.
        let (rpc, connection) = makeRPC(budget: line.utf8.count * 3, callBudget: line.utf8.count * 6)
        for _ in 0..<13 { connection.deliver(line) }
        // The reader fills the channel and waits.
        for _ in 0..<500 where rpc.notifications.bufferedWeight < line.utf8.count * 3 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(rpc.notifications.bufferedWeight == line.utf8.count * 3)
        // A call still gets through, though the consumer takes nothing.
        async let answered = rpc.call("ping", timeout: .seconds(5))
        try await answer(connection)
        #expect(try await answered == ["ok": true])

        let received = try await rpc.drain()
        #expect(received.decoded(by: rpc).count == 6)
        #expect(received.decoded(by: rpc).allSatisfy { if case .notification = $0 { true } else { false } })
        #expect(received.last == .lost(7))
        // Read while the call waited, lines wait as bytes: the 5th and 6th, and the 4th when the
        // reader had not reached it before the call began.
        #expect((2...3).contains(received.lines), "\(received.lines) lines kept as bytes")
    }

    /// A response read together with the notifications before it: they are handed on first,
    /// and the call still counts as waiting until it is answered — else the reader, finding no
    /// call waiting, would wait for a consumer that is itself waiting for the answer.
    @Test func aResponseBehindAFullChannelInTheSameReadIsAnswered() async throws {
        let (rpc, connection) = makeRPC(budget: output(0).utf8.count * 2, callBudget: output(0).utf8.count * 4)
        for index in 0..<2 { connection.deliver(output(index)) }
        for _ in 0..<500 where rpc.notifications.bufferedWeight < output(0).utf8.count * 2 { try await Task.sleep(for: .milliseconds(5)) }
        // Not awaited blindly: the bug this guards against leaves the call waiting for ever.
        let answered = Mutex<JSONValue?>(nil)
        Task {
            let answer = try? await rpc.call("ping", timeout: .seconds(5))
            answered.withLock { $0 = answer }
        }
        let request = try #require(try await connection.nextRequest())
        connection.deliver(together: [output(2), "{\"id\":\(request["id"]!.serialized),\"result\":{\"ok\":true}}"])
        for _ in 0..<500 where answered.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(10)) }
        #expect(answered.withLock { $0 } == ["ok": true], "the call was not answered")
        #expect(try await rpc.drain().data(by: rpc) == ["0", "1", "2"])
    }

    /// With no call waiting for a response, a consumer that falls behind holds the reader up
    /// (TCP pushes back on the daemon) instead of losing notifications: a flood arrives whole.
    @Test func aConsumerThatFallsBehindWithNoCallPendingLosesNothing() async throws {
        let (rpc, connection) = makeRPC(budget: output(0).utf8.count * 3)
        for index in 0..<50 { connection.deliver(output(index)) }
        var received: [Received] = []
        while received.count < 50 {
            try await Task.sleep(for: .milliseconds(5))  // a slow consumer
            received += try await rpc.drain(quiet: .milliseconds(1))
        }
        #expect(received.data(by: rpc) == (0..<50).map(String.init))
        #expect(received.lost == 0 && received.lines == 0)
        // And a call made now still gets its answer.
        async let answered = rpc.call("ping", timeout: .seconds(5))
        try await answer(connection)
        #expect(try await answered == ["ok": true])
    }

    @Test func waitingWithATimeoutLosesNothing() async throws {
        let (rpc, connection) = makeRPC()
        guard case .timedOut = try await rpc.notifications.next(timeout: .milliseconds(20)) else {
            Issue.record("expected a timeout")
            return
        }
        connection.deliver(output(1))
        connection.inbound.finish()
        #expect(try await rpc.drain().data(by: rpc) == ["1"])
        guard case .ended = try await rpc.notifications.next(timeout: .seconds(5)) else {
            Issue.record("expected the end")
            return
        }
    }

    /// A line that is not JSON is skipped, in its place; what follows still comes, and a
    /// response between them is answered.
    @Test func aLineThatIsNotJSONIsSkipped() async throws {
        let (rpc, connection) = makeRPC()
        connection.deliver(output(1))
        connection.deliver(#"{"method":"terminal-output","params":{"data":tru}}"#)
        async let answered = rpc.call("ping", timeout: .seconds(5))
        try await answer(connection)
        connection.deliver(output(2))
        #expect(try await answered == ["ok": true])
        let received = try await rpc.drain()
        #expect(received.data(by: rpc) == ["1", "2"])
        for case .notification(_, let params, let raw) in received.decoded(by: rpc) { #expect(raw["params"] == params) }
    }

    /// Without `raw`, deltas come read straight from their bytes; with it, parsed whole.
    @Test(arguments: [true, false]) func deltasAreReadStraightOnlyWithoutRaw(keepingRaw: Bool) async throws {
        let (rpc, connection) = makeRPC()
        rpc.setKeepingRaw(keepingRaw)
        connection.deliver(#"{"method":"app-server-event","params":{"workspace_id":"ws-1","message":{"method":"item/agentMessage/delta","params":{"threadId":"th","turnId":"tu","itemId":"i1","delta":"Hel"}}}}"#)
        connection.deliver(#"{"method":"app-server-event","params":{"workspace_id":"ws-1","message":{"method":"turn/started","params":{"threadId":"th","turn":{"id":"tu"}}}}}"#)
        let received = try await rpc.drain().decoded(by: rpc)
        #expect(received.count == 2)
        if case .notification(_, let params, _) = received.last { #expect(params["message"]?["method"] == "turn/started") }
        else { Issue.record("turn/started was not parsed whole") }
        switch received.first {
        case .hot(let hot)?:
            #expect(!keepingRaw, "with raw, a delta is parsed whole")
            guard case .delta(_, _, _, _, let delta) = hot.message else { Issue.record("not a delta"); return }
            #expect(delta == "Hel")
        case .notification(_, let params, _)?:
            #expect(keepingRaw, "without raw, a delta comes read from its bytes")
            #expect(params["message"]?["params"]?["delta"] == "Hel")
        default:
            Issue.record("the delta did not come")
        }
    }

    /// Decoded notifications take more memory than their lines: the reader decodes up to the
    /// channel's bound and waits there; while a call waits (and it must read on for the
    /// response) what comes past the bound waits as bytes, and decodes to what the reader would
    /// have made of it. Everything arrives, in order.
    @Test(arguments: [true, false]) func decodingIsBoundedAndLosesNothing(keepingRaw: Bool) async throws {
        let count = 30_000  // well past the bound: some must wait as bytes
        let (rpc, connection) = makeRPC(budget: 1 << 20, callBudget: 8 << 20)
        rpc.setKeepingRaw(keepingRaw)
        #expect(count * output(0).utf8.count > 2 * (1 << 20))
        for index in 0..<count { connection.deliver(output(index)) }
        try await Task.sleep(for: .milliseconds(100))  // the reader runs ahead until it waits
        #expect(rpc.notifications.bufferedWeight <= (1 << 20) + output(count).utf8.count)

        // A call: the reader reads on for its response, keeping the rest as bytes.
        async let answered = rpc.call("ping", timeout: .seconds(5))
        try await answer(connection)
        #expect(try await answered == ["ok": true])
        let received = try await rpc.drain()
        #expect(received.lines > 0 && received.lost == 0)
        #expect((count - received.lines) * output(0).utf8.count <= (1 << 20) + 2 * output(count).utf8.count)
        #expect(received.data(by: rpc) == (0..<count).map(String.init))
        // A line kept as bytes decodes as the reader decodes one.
        connection.deliver(output(7))
        guard case .incoming(let reader)? = try await rpc.drain().first, case .incoming(.lines(let kept))? = received.last else {
            Issue.record("expected a decoded notification and a line kept as bytes")
            return
        }
        #expect(rpc.decode(Array(output(7).utf8), strings: nil) == reader)
        #expect(rpc.decode(kept.line(kept.count - 1), strings: nil) == rpc.decode(Array(output(count - 1).utf8), strings: nil))
    }

    @Test func messagesAreClassifiedByTheDaemonsEnvelope() {
        typealias M = CodexMonitorRPC.Message
        #expect(M.classify(json(#"{"id":3,"result":{"ok":true}}"#)) == .response(id: 3, .success(["ok": true])))
        #expect(M.classify(json(#"{"id":3,"result":null}"#)) == .response(id: 3, .success(.null)))
        #expect(M.classify(json(#"{"id":4,"error":{"message":"unauthorized"}}"#)) == .response(id: 4, .failure(.init(message: "unauthorized"))))
        #expect(M.classify(json(#"{"method":"app-server-event","params":{"a":1}}"#)) == .notification(method: "app-server-event", params: ["a": 1]))
        #expect(M.classify(json(#"{"method":"x"}"#)) == .notification(method: "x", params: .null))
        if case .invalid = M.classify(json(#"{"id":-1,"result":{}}"#)) {} else { Issue.record("a negative id is not ours") }
        if case .invalid = M.classify(json(#"{"id":1}"#)) {} else { Issue.record("no result, no error") }
    }
}
