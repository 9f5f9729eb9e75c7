import Logging
import PostgresNIO

/// What replicas share besides the log: notices of appends (LISTEN/NOTIFY on the channel each
/// append notifies in its transaction) and one lease per profile — a session-level advisory
/// lock held by the connection of the replica that subscribes to it. The server releases it
/// when that connection ends, as it does when its process is killed, and another replica's next
/// try (every `leaseRetry`) takes it.
///
/// A holder finds out that its lease's connection is gone only at its next check, so an append
/// made under a lease is fenced: in its transaction it checks that the lease's connection still
/// holds the lock, and is refused (`LeaseLost`, which also ends the subscription) otherwise.
extension PostgresEventStore: SharedEventStore {
    /// How often a replica without a profile's lease tries to take it.
    static let leaseRetry: Duration = .seconds(3)
    /// How often a holder checks that its lease's connection still works.
    static let leaseCheck: Duration = .seconds(3)
    /// How long a check waits for its answer before it finds the connection gone.
    static let leaseCheckAnswer: Duration = .seconds(10)

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
                    let (lost, losing) = AsyncStream.makeStream(of: Void.self)
                    let lease = HeldLease(profile: profile, holder: try await Self.backendPID(connection, logger: logger),
                                          lost: { losing.finish() })
                    await Self.$heldLease.withValue(lease) {
                        await Self.run(body, whileAlive: connection, until: lost, location: "\(location)", logger: logger)
                    }
                    // Let the lock go for the next holder now rather than when the connection ends;
                    // not waited for past `leaseCheck` (the connection may be what went away).
                    let key = Self.leaseName(profile)
                    try? await Self.onLease(connection, within: Self.leaseCheck, location: "\(location)", honouringCancellation: false) {
                        _ = try await connection.query(
                            "SELECT pg_advisory_unlock(('x' || substr(md5(\(key)), 1, 16))::bit(64)::bigint)", logger: logger)
                    }
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

    static func backendPID(_ connection: PostgresConnection, logger: Logger) async throws -> Int32 {
        let rows = try await connection.query("SELECT pg_backend_pid()", logger: logger)
        for try await pid in rows.decode(Int32.self) { return pid }
        throw PostgresError.protocol("pg_backend_pid() returned no row")
    }

    /// Runs `body` until it returns, the connection stops answering or `lost` ends (an append
    /// found the lease gone); then it is cancelled.
    static func run(_ body: @escaping @Sendable () async -> Void, whileAlive connection: PostgresConnection,
                    until lost: AsyncStream<Void>, location: String, logger: Logger) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await body() }
            group.addTask { for await _ in lost {} }
            group.addTask {
                while (try? await Task.sleep(for: leaseCheck)) != nil {
                    do {
                        // A check that gets no answer within its interval finds the connection gone.
                        try await onLease(connection, within: leaseCheckAnswer, location: location) {
                            _ = try await connection.query("SELECT 1", logger: logger)
                        }
                    } catch is CancellationError {
                        return
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

    /// `statement` on a lease's connection, given up on after `limit` (`abandoning`). A connection
    /// that did not answer in time is closed, so that the pool does not lend it again with the
    /// statement still queued on it.
    static func onLease(_ connection: PostgresConnection, within limit: Duration, location: String,
                        honouringCancellation: Bool = true, _ statement: @escaping @Sendable () async throws -> Void) async throws {
        do {
            try await abandoning(after: limit, location: location, honouringCancellation: honouringCancellation, statement)
        } catch let unanswered as DatabaseUnanswered {
            try? await connection.close()
            throw unanswered
        }
    }

    /// The lease the current task's subscription runs under (nil outside one).
    @TaskLocal static var heldLease: HeldLease?

    /// Fails the append's transaction unless the lease's connection still holds the lock.
    static func checkLease(_ lease: HeldLease, on connection: PostgresConnection, logger: Logger) async throws {
        let key = leaseName(lease.profile)
        // A bigint advisory lock shows in pg_locks as its high and low 32 bits.
        let rows = try await connection.query("""
            SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
                AND pid = \(lease.holder)
                AND ((classid::bigint << 32) | objid::bigint) = ('x' || substr(md5(\(key)), 1, 16))::bit(64)::bigint)
            """, logger: logger)
        var held = false
        for try await value in rows.decode(Bool.self) { held = value }
        guard held else {
            lease.lost()
            throw LeaseLost(profile: lease.profile)
        }
    }
}

/// A profile's lease as its subscription holds it: the lock's connection (its server process id)
/// and how to end the subscription when an append finds the lock gone.
struct HeldLease: Sendable {
    let profile: String
    let holder: Int32
    let lost: @Sendable () -> Void
}

/// An append refused because this replica no longer holds the profile's lease.
struct LeaseLost: Error, CustomStringConvertible {
    let profile: String
    var description: String {
        "this replica lost the lease of profile \(profile) (its database connection ended); the replica that holds it now logs its events, and this one stops its subscription"
    }
}
