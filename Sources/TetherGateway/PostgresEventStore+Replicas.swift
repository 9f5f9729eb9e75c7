import Logging
import PostgresNIO

/// What replicas share besides the log: notices of appends (LISTEN/NOTIFY on the channel each
/// append notifies in its transaction) and one lease per profile — a session-level advisory
/// lock held by the connection of the replica that subscribes to it. The server releases it
/// when that connection ends, as it does when its process is killed, and another replica's next
/// try (every `leaseRetry`) takes it.
extension PostgresEventStore: SharedEventStore {
    /// How often a replica without a profile's lease tries to take it.
    static let leaseRetry: Duration = .seconds(3)
    /// How often a holder checks that its lease's connection still works.
    static let leaseCheck: Duration = .seconds(3)

    public func watchAppends(logger: Logger, _ appended: @escaping @Sendable () -> Void) async {
        let channel = Self.appendChannel
        while !Task.isCancelled {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: channel) { notices in
                        appended()  // what was appended before this listened
                        for try await _ in notices { appended() }
                    }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("listening for the other replicas' events failed; retrying",
                               metadata: ["error": "\(PostgresFailure.reason(error))"])
            }
            do { try await Task.sleep(for: .seconds(1)) } catch { return }
        }
    }

    public func holdingLease(profile: String, logger: Logger, _ body: @escaping @Sendable () async -> Void) async {
        var waitingSaid = false
        while !Task.isCancelled {
            do {
                let held = try await client.withConnection { connection -> Bool in
                    guard try await Self.tryLock(profile, on: connection, logger: logger) else { return false }
                    logger.info("this replica subscribes to the profile", metadata: ["profile": "\(profile)"])
                    await Self.run(body, whileAlive: connection, logger: logger)
                    let key = Self.leaseName(profile)
                    _ = try? await connection.query(
                        "SELECT pg_advisory_unlock(('x' || substr(md5(\(key)), 1, 16))::bit(64)::bigint)", logger: logger)
                    return true
                }
                if !held, !waitingSaid {
                    logger.info("another replica subscribes to the profile; taking over if it stops", metadata: ["profile": "\(profile)"])
                    waitingSaid = true
                }
                if held { waitingSaid = false }
            } catch {
                if Task.isCancelled { return }
                logger.warning("cannot take the profile's lease; retrying",
                               metadata: ["profile": "\(profile)", "error": "\(PostgresFailure.reason(error))"])
            }
            do { try await Task.sleep(for: Self.leaseRetry) } catch { return }
        }
    }

    /// What a profile's lock key is made of: the key is 64 bits of its MD5, computed by the server.
    static func leaseName(_ profile: String) -> String { "tether-profile:" + profile }

    static func tryLock(_ profile: String, on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        let key = leaseName(profile)
        let rows = try await connection.query(
            "SELECT pg_try_advisory_lock(('x' || substr(md5(\(key)), 1, 16))::bit(64)::bigint)", logger: logger)
        for try await locked in rows.decode(Bool.self) { return locked }
        return false
    }

    /// Runs `body` until it returns or the connection stops answering (then it is cancelled).
    static func run(_ body: @escaping @Sendable () async -> Void, whileAlive connection: PostgresConnection, logger: Logger) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await body() }
            group.addTask {
                while (try? await Task.sleep(for: leaseCheck)) != nil {
                    do {
                        try await connection.query("SELECT 1", logger: logger)
                    } catch {
                        logger.warning("lost the connection that holds a profile's lease; its subscription stops",
                                       metadata: ["error": "\(PostgresFailure.reason(error))"])
                        return
                    }
                }
            }
            await group.next()
            group.cancelAll()
        }
    }
}
