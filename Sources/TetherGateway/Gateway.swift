import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import TetherCore

/// `tether serve`: one supervised subscription per served profile feeding the durable event log,
/// and the HTTP API over both. Runs until SIGINT or SIGTERM, then stops accepting, closes the
/// event streams, lets in-flight requests finish, and returns.
public struct Gateway: Sendable {
    public let configuration: GatewayConfiguration
    public let profiles: [ServedProfile]
    let logger: Logger

    /// How long SIGTERM or SIGINT waits for requests and streams to end before cancelling them.
    static let gracefulShutdownLimit: Duration = .seconds(10)

    public init(configuration: GatewayConfiguration, profiles: [ServedProfile], logger: Logger) {
        self.configuration = configuration
        self.profiles = profiles
        self.logger = logger
    }

    /// Serves until a shutdown signal. `onListening` gets the URL once the socket is bound.
    public func run(onListening: @escaping @Sendable (String) -> Void) async throws {
        let log = try await EventStoreOpening.open(configuration.databasePath, password: configuration.databasePassword,
                                                   logger: logger, leases: profiles.count)
        let identity: GatewayIdentity
        let journal = EventJournal(log: log, broadcast: EventBroadcast())
        do {
            identity = GatewayIdentity(id: try await log.gatewayID(), upstream: configuration.upstream)
            // A shared log's live events are published from the log, from its end as of now.
            try await journal.tail?.start()
        } catch {
            throw GatewayStartError.cannotOpenLog(EventLog.OpenError(path: EventStoreOpening.shown(configuration.databasePath),
                                                                     reason: PostgresFailure.reason(error)))
        }
        let subscriptions = profiles.map { ProfileSubscription(profile: $0, journal: journal, logger: logger) }
        var follows: [String: SessionFollows] = [:]
        for subscription in subscriptions where subscription.streamsPerSession {
            follows[subscription.profile.name] = subscription.sessionFollows
        }
        let auth = GatewayAuth(tokens: configuration.tokens, limits: configuration.logins)
        if auth.shortTokenCount > 0 {
            let count = auth.shortTokenCount
            logger.warning("\(count) of the [serve] table's tokens \(count == 1 ? "is" : "are") shorter than \(GatewayAuth.shortTokenBytes) bytes and can be guessed; use long random ones, e.g. `openssl rand -hex 32`")
        }
        let budget = ConnectionBudget(maxConnections: configuration.maxConnections, profiles: profiles.count,
                                      descriptorLimit: ConnectionBudget.raiseDescriptorLimit())
        if let descriptors = budget.descriptorLimit {
            logger.notice("at most \(budget.limit) client connections: the descriptor limit is \(descriptors) (raise it with ulimit -n)")
        }
        let api = GatewayAPI(profiles: profiles, journal: journal, auth: auth, authFailures: AuthFailureLimiter(),
                             openGuard: OpenGatewayGuard(publicURL: configuration.publicURL),
                             approvals: ApprovalDesk(journal: journal, logger: logger), heartbeat: configuration.heartbeat,
                             version: configuration.version, identity: identity,
                             logger: logger, sessionFollows: follows)
        var retention = RetentionSchedule(log: log, retainDays: configuration.retainDays, logger: logger)
        retention.firstRun = configuration.retentionFirstRun
        retention.interval = configuration.retentionInterval
        if let url = configuration.notifyURL {
            ApprovalPush(target: .url(url), publicURL: configuration.publicURL, log: log, logger: logger).attach(to: journal)
        } else if let command = configuration.notifyCommand, !command.isEmpty {
            ApprovalPush(target: .command(command), publicURL: configuration.publicURL, log: log, logger: logger).attach(to: journal)
        }
        let background = GatewayBackground(subscriptions: subscriptions, retention: retention, journal: journal, auth: auth,
                                           logger: logger)
        let listen = configuration.listen
        let listening = ListeningFlag()
        let app = Application(
            router: api.router(),
            server: .http1(configuration: .init(idleTimeout: TimeAmount(configuration.idleTimeout))),
            configuration: .init(address: .hostname(listen.host, port: listen.port), serverName: nil,
                                 availableConnectionsDelegate: ConnectionLimit(budget: budget, logger: logger)),
            onServerRunning: { channel in
                listening.set()
                onListening(listen.url(boundPort: channel.localAddress?.port ?? listen.port))
            },
            logger: logger)
        // Shut down in reverse order: first the background (which ends every event stream), so
        // the server's wait for in-flight requests is not a wait for streams that never end.
        var shutdown = ServiceGroupConfiguration(services: [app, background], gracefulShutdownSignals: [.sigterm, .sigint],
                                                 logger: logger)
        // A graceful shutdown that outlasts this (a request or a store call waiting on a database
        // that went away) becomes cancellation: whatever heeds it cannot hold SIGTERM up.
        shutdown.maximumGracefulShutdownDuration = Self.gracefulShutdownLimit
        let group = ServiceGroup(configuration: shutdown)
        do {
            try await group.run()
        } catch {
            // Before the socket was bound, the failure is the listen address's.
            if !listening.isSet { throw GatewayStartError.cannotListen(listen, error) }
            throw error
        }
    }
}

/// Whether the server got as far as listening.
final class ListeningFlag: Sendable {
    private let flag = Mutex(false)
    func set() { flag.withLock { $0 = true } }
    var isSet: Bool { flag.withLock { $0 } }
}

/// The gateway's work besides serving requests: the subscriptions and retention. On graceful
/// shutdown it closes every event stream (so their requests end) and stops the subscriptions.
struct GatewayBackground: Service {
    let subscriptions: [ProfileSubscription]
    let retention: RetentionSchedule
    let journal: EventJournal
    let auth: GatewayAuth
    let logger: Logger

    func run() async throws {
        let broadcast = journal.broadcast
        await withTaskGroup(of: Void.self) { group in
            for subscription in subscriptions {
                // A fleet: each profile is subscribed by the one replica holding its lease.
                if let shared = journal.log as? any SharedEventStore {
                    group.addTask { await shared.holdingLease(profile: subscription.profile.name, logger: logger) { await subscription.run() } }
                } else {
                    group.addTask { await subscription.run() }
                }
            }
            if let tail = journal.tail { group.addTask { await tail.watch(logger: logger) } }
            group.addTask { await retention.run() }
            group.addTask {
                // Expired logins' streams are closed within a minute of the expiry.
                let logins = KeptLogins(auth: auth, store: journal.log)
                while (try? await Task.sleep(for: .seconds(min(60, auth.limits.idle.wholeSeconds)))) != nil { await logins.sweep() }
            }
            try? await gracefulShutdown()
            broadcast.closeAll()
            group.cancelAll()
        }
    }
}
