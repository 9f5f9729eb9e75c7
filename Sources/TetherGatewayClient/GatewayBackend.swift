import Foundation
import Logging
import TetherAdapterSupport
import TetherCore
import TetherNet
import TetherStreaming

/// The `gateway` backend: another `tether serve`, through its HTTP API. What the remote profile
/// can do, it does; events come from the gateway's durable log, resumed by its `seq`. See
/// adapters.md ("gateway") for how each route maps.
public struct GatewayBackend: Backend {
    public struct Configuration: Sendable {
        public var baseURL: String
        public var token: String?
        /// The local profile (this one) and the remote profile it stands for (nil: all).
        public var scope: GatewayRemoteScope
        /// No byte for this long reconnects the event stream (the gateway heartbeats every 15 s).
        public var liveness: Duration
        public var reconnect: ReconnectPolicy.Configuration
        /// What the remote profile can do, when read from the gateway (a gateway fanning this one
        /// in reads it at start); nil: everything this adapter can relay.
        public var remoteCapabilities: BackendCapabilities?
        /// Gateways this stream must not reach (the fanning-in gateway's own lineage): an event
        /// stream answered by one of them, or by one standing on one, is a loop, and fails.
        public var refusedGateways: Set<String> = []

        public init(baseURL: String, token: String?, scope: GatewayRemoteScope, liveness: Duration = .seconds(45),
                    reconnect: ReconnectPolicy.Configuration = .init()) {
            self.baseURL = baseURL
            self.token = token
            self.scope = scope
            self.liveness = liveness
            self.reconnect = reconnect
        }
    }

    /// Everything a served profile may offer through this adapter: what the remote backend
    /// cannot do, the gateway refuses with `unsupported` (`tether check` lists each remote
    /// profile's own capabilities).
    public static let relayedCapabilities: BackendCapabilities = [.sessions, .createSession, .history, .send, .events, .resume,
                                                                  .approvals, .abort, .questions, .notifications]

    public let kind = BackendKind.gateway
    public var capabilities: BackendCapabilities {
        configuration.remoteCapabilities.map { $0.intersection(Self.relayedCapabilities).union([.events, .resume]) } ?? Self.relayedCapabilities
    }

    public let configuration: Configuration
    let http: GatewayHTTP
    let logger: Logger
    var scope: GatewayRemoteScope { configuration.scope }

    public init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        http = GatewayHTTP(baseURL: configuration.baseURL, token: configuration.token, profile: configuration.scope.local,
                           http: HTTPClient(logger: logger))
    }

    public func check() async throws -> CheckReport {
        let health = try await http.get("/v1/health", doing: "reading its health")
        let profiles = try await http.get("/v1/profiles", doing: "listing its profiles").array ?? []
        if let remote = scope.remote, !profiles.contains(where: { $0["name"]?.string == remote }) {
            let names = profiles.compactMap { $0["name"]?.string }
            throw TetherError(.configuration, "the gateway at \(configuration.baseURL) serves no profile \(remote) (profile \(scope.local)'s remote_profile)",
                              hint: "set profiles.\(scope.local).remote_profile to one of: \(names.joined(separator: ", "))")
        }
        let details: JSONObject = ["profiles": .array(profiles)]
        return CheckReport(endpoint: configuration.baseURL, reachable: health["status"]?.string == "ok", authenticated: true,
                           version: health["version"]?.string, details: details)
    }

    // MARK: The gateway itself

    /// One profile a gateway serves, as `GET /v1/profiles` lists it.
    public struct RemoteProfile: Sendable, Equatable {
        public var name: String
        /// nil for a backend this tether does not know (a newer gateway).
        public var kind: BackendKind?
        public var capabilities: BackendCapabilities

        public init(name: String, kind: BackendKind?, capabilities: BackendCapabilities) {
            self.name = name
            self.kind = kind
            self.capabilities = capabilities
        }
    }

    /// The profiles the gateway serves.
    public func servedProfiles() async throws -> [RemoteProfile] {
        let profiles = try await http.get("/v1/profiles", doing: "listing its profiles").array ?? []
        return profiles.compactMap { profile in
            guard let name = profile["name"]?.string else { return nil }
            let names = Set(profile["capabilities"]?.array?.compactMap(\.string) ?? [])
            let capabilities = BackendCapabilities.all.filter { names.contains($0.1) }.reduce(into: BackendCapabilities()) { $0.insert($1.0) }
            return RemoteProfile(name: name, kind: profile["backend"]?.string.flatMap(BackendKind.init(rawValue:)), capabilities: capabilities)
        }
    }

    /// Who the gateway is (`GET /v1/health`); nil from a gateway too old to say.
    public func identity() async throws -> GatewayIdentity? {
        let health = try await http.get("/v1/health", doing: "reading its health")
        guard let id = health["gateway"]?.string else { return nil }
        return GatewayIdentity(id: id, upstream: health["upstream"]?.array?.compactMap(\.string) ?? [])
    }

    /// This backend standing for one remote profile (a gateway fanning this one in serves each
    /// as a profile of its own), refusing to reach any of `refused`.
    public func standing(for remote: RemoteProfile, refusing refused: Set<String>) -> GatewayBackend {
        var configuration = configuration
        configuration.scope = GatewayRemoteScope(local: scope.local, remote: remote.name)
        configuration.remoteCapabilities = remote.capabilities
        configuration.refusedGateways = refused
        return GatewayBackend(configuration: configuration, logger: logger)
    }

    /// The error for a gateway whose lineage meets `refused` (a fanning-in gateway's own id).
    public func loop(_ identity: GatewayIdentity, refusing refused: Set<String>) -> TetherError? {
        guard !identity.lineage.isDisjoint(with: refused) else { return nil }
        return TetherError(.configuration, "profile \(scope.local) would subscribe this gateway to itself: \(configuration.baseURL) is gateway \(identity.id)"
                           + (identity.upstream.isEmpty ? "" : ", which fans in \(identity.upstream.joined(separator: ", "))"),
                           hint: "remove the profile, or the gateway profile on the other side that points back here")
    }

    // MARK: Sessions

    /// The remote profiles this one stands for.
    func remoteProfiles() async throws -> [String] {
        if let remote = scope.remote { return [remote] }
        let profiles = try await http.get("/v1/profiles", doing: "listing its profiles").array ?? []
        return profiles.filter { profile in profile["capabilities"]?.array?.contains(.string("sessions")) ?? false }
            .compactMap { $0["name"]?.string }
    }

    public func listSessions(_ request: SessionListRequest) async throws -> [Session] {
        var sessions: [Session] = []
        for profile in try await remoteProfiles() {
            let list = try await http.get("/v1/profiles/\(try PathSegment(profile, what: "profile"))/sessions",
                                          doing: "listing the sessions of \(profile)")
            sessions += try (list.array ?? []).map { try session($0, profile: profile) }
        }
        return sessions
    }

    public func createSession(_ request: SessionCreateRequest) async throws -> Session {
        guard let profile = scope.remote else {
            throw TetherError(.usage, "profile \(scope.local) stands for every profile of its gateway: which one should hold the session?",
                              hint: "set profiles.\(scope.local).remote_profile, or add a profile with backend = \"gateway\" and remote_profile = NAME")
        }
        let body = JSONValue.object(.compact(["title": JSONValue(request.title), "directory": JSONValue(request.directory)]))
        let created = try await http.post("/v1/profiles/\(try PathSegment(profile, what: "profile"))/sessions", body: body,
                                          doing: "creating a session in \(profile)")
        return try session(created, profile: profile)
    }

    public func session(id: String) async throws -> Session {
        let (profile, _) = try scope.resolve(id, what: "session id")
        let path = try scope.path(id, what: "session id") { "/v1/profiles/\($0)/sessions/\($1)" }
        return try session(try await http.get(path, doing: "reading session \(id)"), profile: profile)
    }

    func session(_ value: JSONValue, profile: String) throws -> Session {
        guard var session = Session(json: value) else {
            throw TetherError(.badData, "the gateway sent a session without an id: \(value.serialized.prefix(200))")
        }
        session.id = scope.localID(session.id, profile: profile)
        return session
    }

    public func history(session: String, limit: Int?) async throws -> [Event] {
        let path = try scope.path(session, what: "session id") { "/v1/profiles/\($0)/sessions/\($1)/history" }
        return try await http.events(path + (limit.map { "?limit=\($0)" } ?? ""), doing: "reading the history of session \(session)")
            .map { scope.localEvent($0, seq: nil) }
    }

    // MARK: Turns

    public func send(_ request: SendRequest) async throws -> SendReceipt {
        let (profile, _) = try scope.resolve(request.session, what: "session id")
        let path = try scope.path(request.session, what: "session id") { "/v1/profiles/\($0)/sessions/\($1)/turns" }
        let body = JSONValue.object(.compact(["text": .string(request.text), "model": JSONValue(request.model)]))
        let receipt = try await http.post(path, body: body, doing: "starting a turn in session \(request.session)")
        let session = receipt["session"]?.string.map { scope.localID($0, profile: profile) } ?? request.session
        return SendReceipt(session: session, turn: receipt["turn"]?.string, data: receipt.object ?? [:])
    }

    /// Reads the log's current end first, then sends, then follows from that end: whatever the
    /// turn does after the prompt is in the log after it, so nothing is missed however soon the
    /// first event comes.
    public func sendAndFollow(_ request: SendRequest) -> EventStream {
        EventChannel.stream { channel in
            let (profile, _) = try scope.resolve(request.session, what: "session id")
            let end = try await http.get("/v1/events?format=json&limit=1&profile=\(try Self.query(profile))", doing: "reading the log's end")
            guard let seq = end["next"]?.int else {
                throw TetherError(.badData, "the gateway's long-poll answer has no \"next\" seq: \(end.serialized.prefix(200))")
            }
            let receipt = try await send(request)
            let stream = events(EventsRequest(session: receipt.session, turn: receipt.turn, since: String(seq), follow: true,
                                              untilTurnCompletes: true, raw: request.raw))
            for try await batch in stream.batches { try await channel.send(contentsOf: batch) }
        }
    }

    public func abort(session: String, turn: String?) async throws {
        let path = try scope.path(session, what: "session id") { "/v1/profiles/\($0)/sessions/\($1)/abort" }
        _ = try await http.post(path, body: .object([:]), doing: "aborting the turn in session \(session)")
    }

    // MARK: Approvals

    public func pendingApprovals(session: String?) async throws -> [Approval] {
        let query = try scope.remote.map { "?profile=\(try Self.query($0))" } ?? ""
        let events = try await http.events("/v1/approvals" + query, doing: "listing the pending approvals")
        return events.map { scope.localEvent($0, seq: nil) }
            .filter { session == nil || $0.session == session || $0.data["session"]?.string == session }
            .compactMap { Approval(json: $0.data) }
    }

    public func approve(id: String, answer: ApprovalAnswer) async throws -> Event {
        let path = try scope.path(id, what: "approval id") { "/v1/profiles/\($0)/approvals/\($1)" }
        var body: JSONObject = ["decision": .string(answer.decision.rawValue)]
        if !answer.amendment.isEmpty { body["amendment"] = JSONValue(answer.amendment) }
        if !answer.answers.isEmpty { body["answers"] = .array(answer.answers.map { JSONValue($0) }) }
        let resolved = try await http.post(path, body: .object(body), doing: "answering approval \(id)")
        return scope.localEvent(try GatewayHTTP.event(resolved, doing: "answering approval \(id)"), seq: nil)
    }

    // MARK: Events

    public func events(_ request: EventsRequest) -> EventStream {
        GatewayEventStream(backend: self, request: request).stream()
    }

    /// A query value, percent-encoded.
    static func query(_ value: String) throws(TetherError) -> String {
        try PathSegment(value, what: "profile").encoded
    }
}
