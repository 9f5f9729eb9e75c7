import Foundation
import Logging

/// A stand-in for the real `codex app-server` (codex 0.163), written from
/// `protocols/codex-app-server.md` and its transcripts, independently of Tether's adapter.
///
/// One process-wide world (threads, turns, items, pending server requests, the server-request id
/// counter) served over any number of connections: WebSocket text frames
/// (`CodexAppServerSimulator+WebSocket`), the same over a unix socket, or NDJSON on stdio
/// (`CodexAppServerSimulator+Stdio`). Turns are scripted by the prompt's words
/// (`CodexAppServerScenario`).
public final class CodexAppServerSimulator: Sendable {
    let options: Options
    let logger: Logger
    let state = Locked(State())
    let transport = Locked(Transport())
    /// Fired once a drain has nothing left to wait for.
    let drained = CodexMonitorSignal()

    public init(options: Options = Options(), logger: Logger? = nil) {
        self.options = options
        self.logger = logger ?? .simulatorNoOp
        if options.flood != nil { state.withLock { Self.addFloodThread(to: &$0) } }
    }

    // MARK: - Connections

    /// Registers a connection; its messages go to `outbound`.
    func open(_ outbound: Outbound) -> Int {
        state.withLock { state in
            state.nextConnection += 1
            state.connections[state.nextConnection] = ConnectionState(outbound: outbound)
            return state.nextConnection
        }
    }

    /// The connection is gone. Its subscriptions end; its threads, turns and pending requests
    /// stay (note §7.1).
    func close(_ connection: Int) {
        state.withLock { _ = $0.connections.removeValue(forKey: connection) }
        logger.debug("codex app-server sim connection closed", metadata: ["connection": "\(connection)"])
    }

    /// Connections open now (for tests).
    public var openConnections: Int {
        state.withLock { $0.connections.count }
    }

    /// Threads with a running turn (for tests).
    public var activeTurns: Int {
        state.withLock { $0.threads.values.count { $0.active != nil } }
    }

    // MARK: - Input

    /// One message from a connection: a line of stdio or a WebSocket text frame. Anything that is
    /// not one JSON object is dropped without a word (note §1).
    func receive(_ text: String, from connection: Int) {
        guard let value = CodexMonitorJSONParser.parse(Array(text.utf8)), value.objectMembers != nil else {
            logger.debug("codex app-server sim: Failed to deserialize JSONRPCMessage", metadata: ["connection": "\(connection)"])
            return
        }
        if let method = value["method"]?.stringValue {
            guard let id = value["id"], id != .null else {
                return  // `initialized` and the rest: nothing to answer
            }
            handleRequest(id: id, method: method, params: value["params"], from: connection)
        } else if let id = value["id"]?.intValue, value["result"] != nil || value["error"] != nil {
            answer(requestID: id, result: value["result"])
        }
    }

    private func handleRequest(id: JSON, method: String, params: JSON?, from connection: Int) {
        do {
            let overloaded = state.withLock { state -> Bool in
                state.requestCount += 1
                guard let every = options.overloadEvery, every > 0 else { return false }
                return state.requestCount % every == 0
            }
            if overloaded { throw CodexAppServerRPCError.overloaded }
            guard let known = Method(rawValue: method) else {
                throw CodexAppServerRPCError("Invalid request: unknown variant `\(method)`, expected one of "
                    + Method.allCases.map { "`\($0.rawValue)`" }.joined(separator: ", "))
            }
            guard let params else { throw CodexAppServerRPCError.missingField("params") }
            let (initialized, draining) = state.withLock { ($0.connections[connection]?.initialized ?? false, $0.draining) }
            if known == .initialize {
                if initialized { throw CodexAppServerRPCError.alreadyInitialized }
            } else if !initialized {
                throw CodexAppServerRPCError.notInitialized
            }
            if draining, [.threadStart, .turnStart, .threadResume].contains(known) { throw CodexAppServerRPCError.draining }
            try dispatch(known, id: id, params: params, from: connection)
        } catch let error as CodexAppServerRPCError {
            state.withLock { $0.send(CodexAppServerWire.error(id: id, error), to: connection) }
        } catch {
            state.withLock { $0.send(CodexAppServerWire.error(id: id, CodexAppServerRPCError("\(error)")), to: connection) }
        }
    }

    enum Method: String, CaseIterable {
        case initialize
        case threadStart = "thread/start"
        case threadResume = "thread/resume"
        case threadFork = "thread/fork"
        case threadArchive = "thread/archive"
        case threadUnsubscribe = "thread/unsubscribe"
        case threadNameSet = "thread/name/set"
        case threadUnarchive = "thread/unarchive"
        case threadList = "thread/list"
        case threadLoadedList = "thread/loaded/list"
        case threadRead = "thread/read"
        case threadTurnsList = "thread/turns/list"
        case threadItemsList = "thread/items/list"
        case turnStart = "turn/start"
        case turnSteer = "turn/steer"
        case turnInterrupt = "turn/interrupt"
    }

    private func dispatch(_ method: Method, id: JSON, params: JSON, from connection: Int) throws {
        switch method {
        case .initialize: try initialize(id: id, params: params, from: connection)
        case .threadStart: try threadStart(id: id, params: params, from: connection)
        case .threadResume: try threadResume(id: id, params: params, from: connection)
        case .threadFork: try threadFork(id: id, params: params, from: connection)
        case .threadArchive: try threadArchive(id: id, params: params, from: connection)
        case .threadUnarchive: try threadUnarchive(id: id, params: params, from: connection)
        case .threadUnsubscribe: try threadUnsubscribe(id: id, params: params, from: connection)
        case .threadNameSet: try threadNameSet(id: id, params: params, from: connection)
        case .threadList: threadList(id: id, params: params, from: connection)
        case .threadLoadedList: threadLoadedList(id: id, from: connection)
        case .threadRead: try threadRead(id: id, params: params, from: connection)
        case .threadTurnsList: try threadTurnsList(id: id, params: params, from: connection)
        case .threadItemsList: try threadItemsList(id: id, params: params, from: connection)
        case .turnStart: try turnStart(id: id, params: params, from: connection)
        case .turnSteer: try turnSteer(id: id, params: params, from: connection)
        case .turnInterrupt: try turnInterrupt(id: id, params: params, from: connection)
        }
    }

    // MARK: - initialize

    private func initialize(id: JSON, params: JSON, from connection: Int) throws {
        let clientInfo = try params.required("clientInfo")
        let name = try clientInfo.requiredString("name")
        let version = try clientInfo.requiredString("version")
        var optOut: Set<String> = []
        if let methods = params["capabilities"]?["optOutNotificationMethods"]?.arrayValue {
            optOut = Set(methods.compactMap(\.stringValue))
        }
        state.withLock { state in
            let originator = state.originator ?? name
            state.originator = originator
            state.connections[connection]?.initialized = true
            state.connections[connection]?.optOut = optOut
            state.connections[connection]?.experimental = params["capabilities"]?["experimentalApi"] == .bool(true)
            #if arch(arm64)
            let arch = "aarch64"
            #else
            let arch = "x86_64"
            #endif
            state.send(CodexAppServerWire.result(id: id, [
                "userAgent": .string("\(originator)/\(Shapes.cliVersion) (Tether simulator; \(arch)) tether-sim (\(name); \(version))"),
                "codexHome": .string(options.codexHome), "platformFamily": "unix", "platformOs": "linux",
            ]), to: connection)
            state.send(CodexAppServerWire.notification("remoteControl/status/changed", [
                "status": "disabled", "serverName": "tether-sim", "installationId": "00000000-0000-4000-8000-000000000000",
                "environmentId": .null,
            ]), to: connection)
        }
    }

    // MARK: - Server→client answers

    /// A client's answer to request `requestID`: the first wins (the request leaves the table and
    /// every subscriber gets `serverRequest/resolved`); later ones, and answers to unknown ids,
    /// are ignored (note §5).
    private func answer(requestID: Int, result: JSON?) {
        let box = state.withLock { state -> AnswerBox? in
            guard let pending = state.pending.removeValue(forKey: requestID) else { return nil }
            state.emit(CodexAppServerWire.notification("serverRequest/resolved", [
                "threadId": .string(pending.threadID), "requestId": .int(requestID),
            ]), thread: pending.threadID)
            return pending.box
        }
        box?.deliver(result ?? .null)
    }
}
