import Foundation
import GRDB
import Logging
import Testing
@testable import TetherGateway
@testable import TetherTestSupport

/// The log's two stores: every test of the log runs against both.
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }
}

/// Where one test's log lives — a fresh SQLite file, or a fresh database in the run's throwaway
/// PostgreSQL cluster — opened as often as the test likes (a reopen, a second replica).
struct StorePlace: Sendable {
    let kind: StoreKind
    /// The file's path, or the database's URL.
    let location: String

    static func fresh(_ kind: StoreKind) throws -> StorePlace {
        switch kind {
        case .sqlite: StorePlace(kind: kind, location: EventLogTests.temporaryPath())
        case .postgres: StorePlace(kind: kind, location: try PostgresTestCluster.freshDatabase())
        }
    }

    func open(retiredDedupLimit: Int = EventLog.standardRetiredDedupLimit) async throws -> any EventStore {
        let logger = Logger(label: "test")
        switch kind {
        case .sqlite:
            return try EventLog(path: location, logger: logger, retiredDedupLimit: retiredDedupLimit)
        case .postgres:
            return try await PostgresEventStore.open(try PostgresLocation(location), logger: logger, retiredDedupLimit: retiredDedupLimit)
        }
    }

    /// Makes the events through `seq` look received at the epoch, for retention to take.
    func backdate(through seq: Int64, in store: any EventStore) async throws {
        switch kind {
        case .sqlite:
            let log = try #require(store as? EventLog)
            try await log.pool.write { db in try db.execute(sql: "UPDATE event SET ts = 0 WHERE seq <= ?", arguments: [seq]) }
        case .postgres:
            let database = try #require(URL(string: location)?.lastPathComponent)
            try PostgresTestCluster.start().sql("UPDATE event SET ts = 0 WHERE seq <= \(seq)", database: database)
        }
    }
}
