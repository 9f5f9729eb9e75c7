import Logging
import Synchronization
import TetherCodexProtocol
import TetherCore
import TetherStreaming

/// JSON-RPC with an app-server over one link, as Codex speaks it: no `jsonrpc` field, integer
/// ids for our requests, and the server's own requests (approvals) in an id space of its own.
///
/// Calls are matched to responses by id, each with its own timeout. Everything else the server
/// sends — notifications and its requests — is decoded here, on the reader's task and so ahead
/// of the consumers (item deltas and `item/started` straight from their bytes,
/// ``CodexHotMessage``; the rest parsed whole), and handed to `deliver` a read's worth at a
/// time, in order — what came before a response is handed on before its call is answered (the
/// hub puts it in each subscriber's bounded ``CodexAppServerInbox``); so is the connection's
/// end. The reader waits for `deliver`: a subscriber that is behind holds the
/// reading up, and the socket or pipe pushes back on the server — except while a call waits for
/// its response (``hasCallsWaiting``), which must still be read: then what does not fit is
/// dropped, counted (`onCall` tells the inboxes' owner a call started, so that a reader held up
/// asks again). Unparsable messages are logged and skipped, as the app-server itself skips
/// ours.
final class CodexAppServerRPC: Sendable {
    /// An app-server `{"error":{code,message,data}}`.
    struct RemoteError: Error, Sendable, CustomStringConvertible {
        var code: Int
        var message: String
        var data: JSONValue?

        /// `-32001 Server overloaded; retry later.`
        var isOverloaded: Bool { code == -32001 }
        /// A draining server (after SIGTERM) refuses new work until clients reconnect.
        var isShuttingDown: Bool { data?["reason"]?.string == "serverShuttingDown" }
        var description: String { "\(message) (\(code))" }
    }

    enum Failure: Error, Sendable {
        case remote(RemoteError)
        case timedOut(method: String, after: Duration)
        /// The connection ended: with this error, or nil when it was closed cleanly.
        case closed((any Error)?)
    }

    /// What the connection hands on, in order.
    enum Incoming: Sendable {
        /// Notifications (`method`, `params`) and server requests (also an `id`), in the order
        /// they came, and the size of their text.
        case messages([CodexAppServerMessage], bytes: Int)
        /// The connection ended: with this error, or nil when it was closed cleanly.
        case ended((any Error)?)
    }

    private struct State {
        var nextID: Int64 = 1
        var calls: [Int64: CheckedContinuation<Result<JSONValue, Failure>, Never>] = [:]
        var ended: Failure?
    }

    let link: any CodexAppServerLink
    private let logger: Logger
    private let deliver: @Sendable (Incoming, CodexAppServerRPC) async -> Void
    private let onCall: @Sendable () -> Void
    private let state = Mutex(State())

    /// `deliver` is given this RPC too, to ask whether a call waits; `onCall` is called once a
    /// call waits for its response (a reader held up by a full inbox must then read on).
    init(link: any CodexAppServerLink, logger: Logger, onCall: @escaping @Sendable () -> Void = {},
         deliver: @escaping @Sendable (Incoming, CodexAppServerRPC) async -> Void) {
        self.link = link
        self.logger = logger
        self.onCall = onCall
        self.deliver = deliver
    }

    func start() {
        Task { await self.readLoop() }
    }

    func close() async {
        await link.close()
        await finish(.closed(nil))
    }

    var hasEnded: Bool { state.withLock { $0.ended != nil } }

    /// A call is waiting for its response: the reader must not stop.
    var hasCallsWaiting: Bool { state.withLock { !$0.calls.isEmpty } }

    // MARK: Calls

    func call(_ method: String, params: JSONValue, timeout: Duration) async throws(Failure) -> JSONValue {
        let id: Int64
        switch state.withLock({ state -> Result<Int64, Failure> in
            if let ended = state.ended { return .failure(ended) }
            defer { state.nextID += 1 }
            return .success(state.nextID)
        }) {
        case .success(let value): id = value
        case .failure(let failure): throw failure
        }
        let text = JSONValue.object(["id": .int(id), "method": .string(method), "params": params]).serialized
        let result: Result<JSONValue, Failure> = await withCheckedContinuation { continuation in
            let ended = state.withLock { state -> Failure? in
                if let ended = state.ended { return ended }
                state.calls[id] = continuation
                return nil
            }
            if let ended {
                continuation.resume(returning: .failure(ended))
                return
            }
            onCall()
            Task {
                do {
                    try await link.send(text)
                } catch {
                    self.complete(id, .failure(.closed(error)))
                    return
                }
                try? await Task.sleep(for: timeout)
                self.complete(id, .failure(.timedOut(method: method, after: timeout)))
            }
        }
        return try result.get()
    }

    /// Answers the server's request `id` (kept exactly as it came: a number stays a number).
    func respond(to id: JSONValue, result: JSONValue) async throws {
        try await link.send(JSONValue.object(["id": id, "result": result]).serialized)
    }

    func notify(_ method: String) async throws {
        try await link.send(JSONValue.object(["method": .string(method)]).serialized)
    }

    private func complete(_ id: Int64, _ result: Result<JSONValue, Failure>) {
        let waiting = state.withLock { $0.calls.removeValue(forKey: id) }
        waiting?.resume(returning: result)
    }

    // MARK: Incoming

    private func readLoop() async {
        // The reader's own table, for what it decodes (a table is one task's).
        let strings = JSONStringTable(vocabulary: CodexHotMessage.deltaMethods)
        do {
            while let texts = try await link.receive() {
                strings.startBatch()
                var messages: [CodexAppServerMessage] = []
                var bytes = 0
                for text in texts {
                    switch decode(text, strings: strings) {
                    case .message(let message):
                        messages.append(message)
                        bytes += text.count
                    case .response(let id, let result):
                        // What came before it is handed on first, as it came first.
                        if !messages.isEmpty { await deliver(.messages(messages, bytes: bytes), self) }
                        (messages, bytes) = ([], 0)
                        complete(id, result)
                    case .skipped:
                        break
                    }
                }
                if !messages.isEmpty { await deliver(.messages(messages, bytes: bytes), self) }
            }
            await finish(.closed(nil))
        } catch {
            await finish(.closed(error))
        }
    }

    private enum Decoded {
        case message(CodexAppServerMessage)
        case response(Int64, Result<JSONValue, Failure>)
        case skipped
    }

    /// Decodes one message: a notification or server request to hand on, or a call's response.
    private func decode(_ text: [UInt8], strings: JSONStringTable) -> Decoded {
        if let hot = CodexHotMessage.read(text, strings: strings) { return .message(.hot(hot, text: text)) }
        guard let message = try? JSONParser.parse(text, strings: strings), message.object != nil else {
            logger.debug("skipping a message that is not a JSON object", metadata: ["bytes": "\(text.count)"])
            return .skipped
        }
        if message["method"]?.string == nil, let id = message["id"]?.int {
            guard let error = message["error"], !error.isNull else { return .response(Int64(id), .success(message["result"] ?? .null)) }
            return .response(Int64(id), .failure(.remote(RemoteError(code: error["code"]?.int.map { Int($0) } ?? 0,
                                                                     message: error["message"]?.string ?? error.serialized,
                                                                     data: error["data"]))))
        }
        guard message["method"]?.string != nil else {
            logger.debug("skipping a response to no call of ours", metadata: ["id": "\(message["id"]?.serialized ?? "none")"])
            return .skipped
        }
        return .message(.whole(message))
    }

    private func finish(_ end: Failure) async {
        let (calls, first) = state.withLock { state -> ([CheckedContinuation<Result<JSONValue, Failure>, Never>], Bool) in
            let first = state.ended == nil
            if first { state.ended = end }
            let calls = Array(state.calls.values)
            state.calls = [:]
            return (calls, first)
        }
        for call in calls { call.resume(returning: .failure(end)) }
        guard first else { return }
        if case .closed(let error) = end { await deliver(.ended(error), self) } else { await deliver(.ended(nil), self) }
    }
}
