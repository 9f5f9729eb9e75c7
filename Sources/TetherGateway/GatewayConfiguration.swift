/// What `tether serve` runs with, after the `[serve]` table and the flags are merged.
public struct GatewayConfiguration: Sendable {
    public var listen: ListenAddress
    /// A SQLite file's path, or a fleet's `postgres://USER@HOST:PORT/DB`.
    public var databasePath: String
    /// `[serve] db_password`, resolved: the PostgreSQL password (a URL's own is used without it).
    public var databasePassword: String?
    public var retainDays: Double
    /// Resolved token values; empty means the API is open (loopback only).
    public var tokens: [String]
    /// `[serve] notify = { url = … }`: where `approval.requested` is pushed.
    public var notifyURL: String?
    /// `[serve] notify = { command = [...] }`: what runs for each `approval.requested`.
    public var notifyCommand: [String]?
    /// Where clients reach the gateway (a tunnel or proxy), for links in pushes.
    public var publicURL: String?
    /// What `GET /v1/health` reports as the version.
    public var version = "unknown"
    /// The ids of the gateways this one fans in, directly or through them (`GatewayIdentity`).
    public var upstream: [String] = []
    public var heartbeat: Duration = .seconds(15)
    /// How long a client connection may send nothing, or sit on half a request, before it is
    /// closed (a response being streamed, an event stream, is not idle).
    public var idleTimeout: Duration = .seconds(60)
    /// At most this many client connections at once; lowered at start to what the descriptor
    /// limit leaves after the subscriptions' reserve (`ConnectionBudget`).
    public var maxConnections = 1024
    /// Login cookies: how long one may go unused, how long one lives at most, how many live at once.
    public var logins = GatewayAuth.LoginLimits()
    public var retentionFirstRun: Duration = .seconds(5)
    public var retentionInterval: Duration = .seconds(3600)

    public init(listen: ListenAddress, databasePath: String, retainDays: Double, tokens: [String],
                notifyURL: String? = nil, publicURL: String? = nil) {
        self.listen = listen
        self.databasePath = databasePath
        self.retainDays = retainDays
        self.tokens = tokens
        self.notifyURL = notifyURL
        self.publicURL = publicURL
    }

    /// The start-up refusal for a listen address reachable from the network with no token.
    public var exposureProblem: String? {
        guard tokens.isEmpty, !listen.isLoopback else { return nil }
        return "refusing to serve on \(listen) without a token: anyone who can reach it could drive your agents. "
            + "Add one to the config, e.g. [serve] tokens = [{ env = \"TETHER_SERVE_TOKEN\" }] (or { file = \"~/.config/tether/serve.token\" }), "
            + "or listen on loopback (--listen 127.0.0.1:7420) and reach it through ssh -R"
    }
}
