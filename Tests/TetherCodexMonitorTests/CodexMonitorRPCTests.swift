import Foundation
import Testing
import TetherCore
import TetherNet
@testable import TetherCodexMonitor

@Suite struct CodexMonitorRPCTests {
    func makeRPC(budget: Int = 2 << 20, callBudget: Int? = nil) -> (CodexMonitorRPC, MemoryLineConnection) {
        let connection = MemoryLineConnection()
        let rpc = CodexMonitorRPC(connection: connection, logger: quietLogger, notificationBudget: budget,
                                  callBudget: callBudget ?? budget)
        rpc.start()
        return (rpc, connection)
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
        let a = try await rpc.nextNotification()
        let b = try await rpc.nextNotification()
        guard case .notification("app-server-event", let pa, _)? = a, case .notification(_, let pb, _)? = b else {
            Issue.record("expected two notifications, got \(String(describing: a)), \(String(describing: b))")
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
        #expect(try await rpc.nextNotification() != nil)
        await #expect(throws: CodexMonitorRPC.Failure.self) { _ = try await rpc.nextNotification() }
        // And later calls fail at once.
        await #expect(throws: CodexMonitorRPC.Failure.self) { _ = try await rpc.call("ping", timeout: .seconds(5)) }
    }

    @Test func aConsumerThatFallsBehindIsToldHowManyNotificationsWereDropped() async throws {
        let line = #"{"method":"app-server-event","params":{"workspace_id":"ws-1","message":{"method":"x"}}}"#
        // Three lines before the reader pauses, six while a call waits for its response.
        let (rpc, connection) = makeRPC(budget: line.utf8.count * 3, callBudget: line.utf8.count * 6)
        for _ in 0..<13 { connection.deliver(line) }
        // A call still gets through: the reader never waits for the notification consumer.
        async let answer = rpc.call("ping", timeout: .seconds(5))
        let request = try #require(try await connection.nextRequest())
        connection.deliver("{\"id\":\(request["id"]!.serialized),\"result\":{\"ok\":true}}")
        #expect(try await answer == ["ok": true])

        var received: [CodexMonitorRPC.Incoming] = []
        for _ in 0..<7 { received.append(try #require(try await rpc.nextNotification())) }
        #expect(received.prefix(6).allSatisfy { if case .notification = $0 { true } else { false } })
        #expect(received[6] == .lost(count: 7))
        #expect(try await rpc.poll(timeout: .milliseconds(50)) == .timedOut)
    }

    /// With no call waiting for a response, a consumer that falls behind pauses the reader
    /// (TCP pushes back on the daemon) instead of losing notifications: a flood arrives whole.
    @Test func aConsumerThatFallsBehindWithNoCallPendingLosesNothing() async throws {
        let line = #"{"method":"app-server-event","params":{"workspace_id":"ws-1","message":{"method":"x"}}}"#
        let (rpc, connection) = makeRPC(budget: line.utf8.count * 3)
        for _ in 0..<50 { connection.deliver(line) }
        try await Task.sleep(for: .milliseconds(50))  // the reader runs ahead until the queue is full
        var received = 0
        while received < 50 {
            guard case .notification = try #require(try await rpc.nextNotification()) else {
                Issue.record("a notification was dropped")
                return
            }
            received += 1
        }
        #expect(try await rpc.poll(timeout: .milliseconds(50)) == .timedOut)
        // And a call made now still gets its answer.
        async let answer = rpc.call("ping", timeout: .seconds(5))
        let request = try #require(try await connection.nextRequest())
        connection.deliver("{\"id\":\(request["id"]!.serialized),\"result\":{\"ok\":true}}")
        #expect(try await answer == ["ok": true])
    }

    @Test func pollingWithATimeoutLosesNothing() async throws {
        let (rpc, connection) = makeRPC()
        #expect(try await rpc.poll(timeout: .milliseconds(20)) == .timedOut)
        connection.deliver(#"{"method":"terminal-output","params":{"data":"1"}}"#)
        guard case .incoming(.notification(_, let params, _)) = try await rpc.poll(timeout: .seconds(5)) else {
            Issue.record("expected the notification")
            return
        }
        #expect(params["data"] == "1")
        connection.inbound.finish()
        #expect(try await rpc.poll(timeout: .seconds(5)) == .ended)
    }

    /// Notification lines are queued as bytes and parsed by the consumer: one that only looks
    /// like a notification is skipped there, in order, and what follows still comes.
    @Test func aQueuedLineThatIsNotJSONIsSkippedByTheConsumer() async throws {
        let (rpc, connection) = makeRPC()
        connection.deliver(#"{"method":"terminal-output","params":{"data":"1"}}"#)
        connection.deliver(#"{"method":"terminal-output","params":{"data":tru}}"#)
        connection.deliver(#"{"method":"terminal-output","params":{"data":"2"}}"#)
        // A response between them is answered at once, whatever the consumer does.
        async let answer = rpc.call("ping", timeout: .seconds(5))
        let request = try #require(try await connection.nextRequest())
        connection.deliver("{\"id\":\(request["id"]!.serialized),\"result\":{\"ok\":true}}")
        #expect(try await answer == ["ok": true])
        var data: [String] = []
        for _ in 0..<2 {
            guard case .notification(_, let params, let raw)? = try await rpc.nextNotification() else {
                Issue.record("expected a notification")
                return
            }
            #expect(raw["params"] == params)
            data.append(params["data"]?.string ?? "?")
        }
        #expect(data == ["1", "2"])
        #expect(try await rpc.poll(timeout: .milliseconds(50)) == .timedOut)
    }

    /// A follower's reader decodes notifications as the consumer would have: the same values in
    /// the same order, deltas read from their bytes when no `raw` is kept, a line that is not
    /// JSON skipped — and a response between them still answered.
    @Test(arguments: [true, false]) func decodingAheadHandsOverWhatTheConsumerWouldHaveDecoded(keepingRaw: Bool) async throws {
        let lines = [
            #"{"method":"app-server-event","params":{"workspace_id":"ws-1","message":{"method":"item/agentMessage/delta","params":{"threadId":"th","turnId":"tu","itemId":"i1","delta":"Hel"}}}}"#,
            #"{"method":"terminal-output","params":{"data":tru}}"#,
            #"{"method":"app-server-event","params":{"workspace_id":"ws-1","message":{"method":"turn/started","params":{"threadId":"th","turn":{"id":"tu"}}}}}"#,
            #"{"method":"terminal-output","params":{"data":"1"}}"#,
        ]
        func received(decodingAhead: Bool) async throws -> [CodexMonitorRPC.Incoming] {
            let (rpc, connection) = makeRPC()
            rpc.setDecoding(.init(keepingRaw: keepingRaw, ahead: decodingAhead))
            for line in lines.prefix(2) { connection.deliver(line) }
            async let answer = rpc.call("ping", timeout: .seconds(5))
            let request = try #require(try await connection.nextRequest())
            connection.deliver("{\"id\":\(request["id"]!.serialized),\"result\":{\"ok\":true}}")
            for line in lines.dropFirst(2) { connection.deliver(line) }
            #expect(try await answer == ["ok": true])
            var incoming: [CodexMonitorRPC.Incoming] = []
            while case .incoming(let next) = try await rpc.poll(timeout: .milliseconds(100)) {
                incoming.append(next)
            }
            return incoming
        }
        let ahead = try await received(decodingAhead: true)
        #expect(ahead == (try await received(decodingAhead: false)))
        #expect(ahead.count == 3)
        guard case .hot(let hot) = ahead.first, case .delta(_, _, _, _, let delta) = hot.message else {
            #expect(keepingRaw, "without raw, a delta comes read from its bytes")
            return
        }
        #expect(!keepingRaw)
        #expect(delta == "Hel")
    }

    /// Decoded notifications take more memory than their lines: the reader decodes ahead only up
    /// to its budget and pauses there; while a call waits (and it must read on for the response)
    /// what queues past the budget waits as bytes. Everything still arrives, in order.
    @Test func decodingAheadIsBoundedAndLosesNothing() async throws {
        func line(_ index: Int) -> String {
            #"{"method":"terminal-output","params":{"workspaceId":"ws-1","terminalId":"t1","data":"\#(index)"}}"#
        }
        let count = 30_000  // well past the budget: some must wait as bytes
        let (rpc, connection) = makeRPC(budget: 2 << 20, callBudget: 8 << 20)
        rpc.setDecoding(.init(keepingRaw: true, ahead: true))
        #expect(count * line(0).utf8.count > 2 * CodexMonitorRPC.decodeAheadBudget)
        for index in 0..<count { connection.deliver(line(index)) }
        try await Task.sleep(for: .milliseconds(100))  // the reader runs ahead until it pauses
        let paused = rpc.queued
        #expect(paused.lines == 0)
        #expect(paused.decoded > 0)
        #expect(paused.bytes <= CodexMonitorRPC.decodeAheadBudget + line(count).utf8.count)

        // A call: the reader reads on for its response, queueing the rest as bytes.
        async let answer = rpc.call("ping", timeout: .seconds(5))
        let request = try #require(try await connection.nextRequest())
        connection.deliver("{\"id\":\(request["id"]!.serialized),\"result\":{\"ok\":true}}")
        #expect(try await answer == ["ok": true])
        let behind = rpc.queued
        #expect(behind.decoded + behind.lines == count)
        #expect(behind.lines > 0)
        // Lines queued as bytes share buffers (runs of up to 64 KiB), not an allocation each.
        #expect(behind.buffers * 50 < behind.lines, "\(behind.lines) lines in \(behind.buffers) buffers")
        #expect(behind.decoded * line(0).utf8.count <= CodexMonitorRPC.decodeAheadBudget + 2 * line(count).utf8.count)

        for index in 0..<count {
            guard case .notification(_, let params, _)? = try await rpc.nextNotification() else {
                Issue.record("notification \(index) missing")
                return
            }
            #expect(params["data"]?.string == "\(index)")
        }
        #expect(try await rpc.poll(timeout: .milliseconds(50)) == .timedOut)
    }

    /// A follower takes what is queued in one hand-over: in order, never more than it asked for,
    /// a line that is not JSON skipped (by the reader when it decodes ahead, else by the
    /// consumer: it passes for a notification until parsed), and the end of the connection only
    /// after the last line.
    @Test(arguments: [false, true]) func aBatchIsWhatIsQueuedInOrderUpToItsLimit(decodingAhead: Bool) async throws {
        func line(_ index: Int) -> String {
            #"{"method":"terminal-output","params":{"workspaceId":"ws-1","terminalId":"t1","data":"\#(index)"}}"#
        }
        let (rpc, connection) = makeRPC()
        rpc.setDecoding(.init(keepingRaw: true, ahead: decodingAhead))
        #expect(try await rpc.poll(upTo: 8, timeout: .milliseconds(20)) == .timedOut)
        for index in 0..<5 { connection.deliver(line(index)) }
        connection.deliver(#"{"method":"terminal-output","params":{"data":tru}}"#)
        for index in 5..<10 { connection.deliver(line(index)) }
        connection.close()
        let queued = decodingAhead ? 10 : 11
        for _ in 0..<500 where rpc.queued.lines + rpc.queued.decoded < queued { try await Task.sleep(for: .milliseconds(10)) }
        #expect(rpc.queued.lines + rpc.queued.decoded == queued)
        var data: [String] = []
        var sizes: [Int] = []
        polling: while true {
            switch try await rpc.poll(upTo: 4, timeout: .seconds(5)) {
            case .incoming(let batch):
                sizes.append(batch.count)
                for incoming in batch {
                    guard case .notification(_, let params, _) = incoming else {
                        Issue.record("expected a notification, got \(incoming)")
                        return
                    }
                    data.append(params["data"]?.string ?? "?")
                }
            case .timedOut: Issue.record("timed out with \(data.count) read")
                return
            case .ended: break polling
            }
        }
        #expect(data == (0..<10).map(String.init))
        #expect(sizes == (decodingAhead ? [4, 4, 2] : [4, 3, 3]))
    }

    /// Lines queued as bytes behind a call go into runs; a line too long for a run stays on its
    /// own. Whatever the sizes and however few a poll takes (a run is split then), every line
    /// comes out once, in order, as it went in.
    @Test(arguments: [1, 3, 100]) func linesQueuedInRunsComeOutWhole(limit: Int) async throws {
        let sizes = [10, 300, 70_000, 5, 40_000, 30_000, 200, 65_536, 1, 2, 100_000, 7]
        func line(_ index: Int) -> String {
            let padding = String(repeating: "x", count: sizes[index])
            return #"{"method":"terminal-output","params":{"workspaceId":"ws-1","data":"\#(index)","pad":"\#(padding)"}}"#
        }
        let (rpc, connection) = makeRPC(budget: 64, callBudget: 8 << 20)
        async let answer = rpc.call("ping", timeout: .seconds(5))
        let request = try #require(try await connection.nextRequest())
        for index in sizes.indices { connection.deliver(line(index)) }
        connection.deliver("{\"id\":\(request["id"]!.serialized),\"result\":{\"ok\":true}}")
        #expect(try await answer == ["ok": true])
        let queued = rpc.queued
        #expect(queued.lines == sizes.count)
        #expect(queued.buffers < sizes.count)
        #expect(queued.bytes == sizes.indices.map { line($0).utf8.count }.reduce(0, +))
        var received: [String] = []
        while case .incoming(let batch) = try await rpc.poll(upTo: limit, timeout: .milliseconds(50)) {
            #expect(batch.count <= limit)
            // A split run stays one entry, shorter by what was split off: the count the hand-over
            // of a whole queue trusts stays what the queue holds.
            let left = rpc.queued
            #expect(left.counted == left.lines, "the queue counts \(left.counted) notifications and holds \(left.lines)")
            for case .notification(_, let params, _) in batch {
                guard received.count < sizes.count else {
                    Issue.record("more lines came out than went in")
                    return
                }
                #expect(params["pad"]?.string?.count == sizes[received.count])
                received.append(params["data"]?.string ?? "?")
            }
        }
        #expect(received == sizes.indices.map(String.init))
    }

    /// A notification larger than the room left in a queue at most half full waits for the
    /// consumer to make room, paused: it is offered again once per time the consumer takes,
    /// not in a busy loop while the consumer is slow (the reader would keep a thread, and on
    /// one core the consumer's, from running). Then it comes out in its place.
    @Test func aNotificationTooLargeForTheRoomLeftWaitsPaused() async throws {
        func line(_ index: Int, pad: Int) -> String {
            #"{"method":"terminal-output","params":{"workspaceId":"ws-1","data":"\#(index)","pad":"\#(String(repeating: "x", count: pad))"}}"#
        }
        let (rpc, connection) = makeRPC(budget: 1000)
        for index in 0..<3 { connection.deliver(line(index, pad: 20)) }  // ~100 bytes each: under half the budget
        connection.deliver(line(3, pad: 800))                             // does not fit beside them
        connection.deliver(line(4, pad: 20))
        for _ in 0..<500 where rpc.queued.lines < 3 { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(100))  // the consumer is slow
        #expect(rpc.queued.lines == 3)
        #expect(rpc.reoffers <= 2, "the reader offered the large line \(rpc.reoffers) times while the consumer took nothing")
        var received: [String] = []
        while case .incoming(let batch) = try await rpc.poll(upTo: 1, timeout: .milliseconds(100)) {
            for case .notification(_, let params, _) in batch { received.append(params["data"]?.string ?? "?") }
        }
        #expect(received == ["0", "1", "2", "3", "4"])
    }

    /// A run reserves room for the lines that may follow; once it is no longer the last entry —
    /// another entry follows it, or the marker of lines dropped past the call budget — it gives
    /// back what they did not take: the bound in wire bytes stays the bound in memory.
    @Test func aRunCutShortGivesBackItsRoom() async throws {
        func line(_ index: Int) -> String {
            #"{"method":"terminal-output","params":{"workspaceId":"ws-1","data":"\#(index)","pad":"\#(String(repeating: "x", count: 250))"}}"#
        }
        let (rpc, connection) = makeRPC(budget: 64, callBudget: 4096)
        async let answer = rpc.call("ping", timeout: .seconds(5))
        let request = try #require(try await connection.nextRequest())
        for index in 0..<40 { connection.deliver(line(index)) }  // past the call budget: some dropped
        connection.deliver("{\"id\":\(request["id"]!.serialized),\"result\":{\"ok\":true}}")
        #expect(try await answer == ["ok": true])
        let queued = rpc.queued
        #expect(queued.buffers == 1 && queued.lines > 1 && queued.bytes <= 4096)
        #expect(queued.reserved < 2 * 4096, "a run followed by a drop marker reserves \(queued.reserved) bytes")
        var received: [CodexMonitorRPC.Incoming] = []
        while case .incoming(let batch) = try await rpc.poll(upTo: 100, timeout: .milliseconds(50)) { received += batch }
        #expect(received.count == queued.lines + 1)
        #expect(received.last == .lost(count: 40 - queued.lines))
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
