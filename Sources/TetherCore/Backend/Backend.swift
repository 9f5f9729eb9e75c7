import TetherStreaming

/// One backend behind Tether, as the CLI sees it. Adapters implement this; the CLI knows nothing
/// else about them. Every stream comes out as domain `Event`s; every failure as a `TetherError`.
/// Methods a backend cannot do are never called: the CLI checks `capabilities` first.
public protocol Backend: Sendable {
    var kind: BackendKind { get }
    var capabilities: BackendCapabilities { get }

    /// Connect, authenticate, read health and version.
    func check() async throws -> CheckReport

    func listSessions(_ request: SessionListRequest) async throws -> [Session]
    func createSession(_ request: SessionCreateRequest) async throws -> Session
    func session(id: String) async throws -> Session
    /// Archive or unarchive a session (only backends with `.archive`).
    func setArchived(_ archived: Bool, session: String) async throws -> Session

    /// Past turns of a session as normalized events.
    func history(session: String, limit: Int?) async throws -> [Event]

    /// Start a turn. Returns at once with what the backend knows of the new turn.
    func send(_ request: SendRequest) async throws -> SendReceipt

    /// Start a turn and stream it to its `turn.completed`. Adapters that must subscribe before
    /// sending (so nothing is missed) override the default, which sends then follows.
    func sendAndFollow(_ request: SendRequest) -> EventStream

    /// The normalized event stream.
    func events(_ request: EventsRequest) -> EventStream

    func pendingApprovals(session: String?) async throws -> [Approval]
    func approve(id: String, answer: ApprovalAnswer) async throws -> Event
    func abort(session: String, turn: String?) async throws
}

public struct SessionListRequest: Sendable {
    public var includeArchived: Bool
    public init(includeArchived: Bool = false) { self.includeArchived = includeArchived }
}

public struct SessionCreateRequest: Sendable {
    public var title: String?
    public var directory: String?
    public init(title: String? = nil, directory: String? = nil) {
        self.title = title
        self.directory = directory
    }
}

public struct SendRequest: Sendable {
    public var session: String
    public var text: String
    /// `provider/model` or a bare model id, as the backend names it.
    public var model: String?
    /// For `sendAndFollow`: each event carries its wire message as `raw` (`--raw`); see
    /// `EventsRequest.raw`.
    public var raw: Bool
    /// The prompt's idempotency key, for backends that take one (Codex's `clientUserMessageId`):
    /// a prompt sent again after a lost connection is recognised instead of run twice.
    public var clientMessageID: String?
    public init(session: String, text: String, model: String? = nil, raw: Bool = true, clientMessageID: String? = nil) {
        self.session = session
        self.text = text
        self.model = model
        self.raw = raw
        self.clientMessageID = clientMessageID
    }
}

public struct SendReceipt: Sendable {
    public var session: String
    /// The turn's id, when the backend names it at once.
    public var turn: String?
    public var data: JSONObject
    public init(session: String, turn: String?, data: JSONObject = [:]) {
        self.session = session
        self.turn = turn
        self.data = data
    }
}

public struct EventsRequest: Sendable {
    public var session: String?
    public var turn: String?
    /// An opaque cursor from an earlier event's `cursor`.
    public var since: String?
    /// Keep streaming live events; without it, print what is current and stop.
    public var follow: Bool
    /// Stop after this turn's `turn.completed` (used by `send --follow`).
    public var untilTurnCompletes: Bool
    /// Each event carries the wire message it came from as `raw` (what `--raw` prints). A
    /// consumer that never writes it says false, and adapters may then read their busiest
    /// messages without building them as a tree.
    public var raw: Bool

    public init(session: String? = nil, turn: String? = nil, since: String? = nil, follow: Bool = false,
                untilTurnCompletes: Bool = false, raw: Bool = true) {
        self.session = session
        self.turn = turn
        self.since = since
        self.follow = follow
        self.untilTurnCompletes = untilTurnCompletes
        self.raw = raw
    }
}

extension Backend {
    public func setArchived(_ archived: Bool, session: String) async throws -> Session {
        throw TetherError.unsupported("archiving sessions", backend: kind)
    }

    public func sendAndFollow(_ request: SendRequest) -> EventStream {
        EventChannel.stream { channel in
            let receipt = try await send(request)
            let stream = events(EventsRequest(session: receipt.session, turn: receipt.turn, follow: true,
                                              untilTurnCompletes: true, raw: request.raw))
            for try await batch in stream.batches { try await channel.send(contentsOf: batch) }
        }
    }
}

/// The notification backend's extra surface (`tether notifications …`).
public protocol NotificationBackend: Backend {
    func listNotifications(unreadOnly: Bool, limit: Int?, offset: Int?) async throws -> [Notification]
    func unreadCount() async throws -> Int
    func markRead(ids: [String]) async throws -> JSONObject
    func markAllRead() async throws -> JSONObject
    func deleteNotification(id: String) async throws -> JSONObject
    func clearNotifications() async throws -> JSONObject
    func settings(set: [String: String]) async throws -> JSONObject
    func sendNotification(title: String, body: String, priority: String?) async throws -> JSONObject
    func push(title: String, body: String, device: String?) async throws -> JSONObject
    func broadcast(title: String, body: String) async throws -> JSONObject
    func watch() -> EventStream
    /// Commands queued while the desktop was unreachable, oldest first.
    func pendingQueue() -> [JSONObject]
}
