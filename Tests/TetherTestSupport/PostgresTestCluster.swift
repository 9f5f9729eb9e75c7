import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A throwaway PostgreSQL server (Debian's `postgresql` package) for the tests of the shared log:
/// a cluster made by initdb under the build directory, trusting connections on 127.0.0.1 only
/// (its unix socket inside the cluster's directory), on a free loopback port. One per test run:
/// started by the first test that asks, stopped (and deleted) when the process exits. As root,
/// which initdb refuses, the server runs as the package's `postgres` user.
public final class PostgresTestCluster: Sendable {
    public let port: Int
    public let directory: String
    /// The cluster's superuser: every test database belongs to it.
    public let user = "tether"
    let binaries: String

    private static let shared = Mutex<Result<PostgresTestCluster, FixtureError>?>(nil)
    private static let databases = Atomic<Int>(0)

    /// The run's cluster, started on the first call.
    public static func start() throws -> PostgresTestCluster {
        try shared.withLock { started in
            if let started { return try started.get() }
            let result: Result<PostgresTestCluster, FixtureError>
            do {
                result = .success(try PostgresTestCluster())
            } catch let error as FixtureError {
                result = .failure(error)
            } catch {
                result = .failure(FixtureError("\(error)"))
            }
            started = result
            if case .success = result { atexit { PostgresTestCluster.stopShared() } }
            return try result.get()
        }
    }

    /// A new empty database in the run's cluster; its `postgres://` URL.
    public static func freshDatabase() throws -> String {
        let cluster = try start()
        let name = "t\(getpid())_\(databases.add(1, ordering: .relaxed).newValue)"
        try cluster.run("createdb", ["-h", "127.0.0.1", "-p", String(cluster.port), "-U", cluster.user, name])
        return cluster.url(name)
    }

    public func url(_ database: String) -> String { "postgres://\(user)@127.0.0.1:\(port)/\(database)" }

    /// Runs one SQL statement with psql in `database`; what it printed (unaligned, tuples only).
    @discardableResult
    public func sql(_ statement: String, database: String) throws -> String {
        try run("psql", ["-h", "127.0.0.1", "-p", String(port), "-U", user, "-d", database, "-v", "ON_ERROR_STOP=1",
                         "-At", "-c", statement])
    }

    private init() throws {
        guard let binaries = Self.findBinaries() else {
            throw FixtureError("PostgreSQL's server programs (initdb, pg_ctl) are not installed (looked in /usr/lib/postgresql/*/bin): "
                + "run `make test-setup`, which installs Debian's postgresql package")
        }
        self.binaries = binaries
        let buildDirectory = TetherProcess.binary.deletingLastPathComponent().deletingLastPathComponent().path
        // As root the server runs as `postgres`, which must reach the directory: a clone under a
        // private folder (mode 700) keeps it out, and then the cluster goes to /tmp (not $TMPDIR: `make test` makes that private too).
        let reachable = getuid() != 0 || Self.everyoneMayEnter(buildDirectory)
        directory = (reachable ? buildDirectory : "/tmp") + "/test-postgres-\(getpid())"
        port = try TestSockets.freePort()
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        if getuid() == 0 {
            _ = try ChildProcess.run("/bin/chown", ["postgres:postgres", directory])
        }
        try run("initdb", ["-D", directory + "/data", "-U", user, "-A", "trust", "--no-sync", "-E", "UTF8", "--no-locale"])
        // Loopback only; the socket inside the cluster's own directory, never /var/run/postgresql.
        let options = "-c listen_addresses=127.0.0.1 -p \(port) -k \(directory) -c fsync=off -c synchronous_commit=off -c max_connections=300"
        try run("pg_ctl", ["-D", directory + "/data", "-l", directory + "/server.log", "-o", options, "-w", "-t", "60", "start"])
    }

    private static func stopShared() {
        guard case .success(let cluster)? = shared.withLock({ $0 }) else { return }
        _ = try? cluster.run("pg_ctl", ["-D", cluster.directory + "/data", "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: cluster.directory)
    }

    /// Whether every folder from the root to `path` lets others through (o+x).
    static func everyoneMayEnter(_ path: String) -> Bool {
        var url = URL(fileURLWithPath: path)
        while url.path != "/" {
            guard let mode = (try? FileManager.default.attributesOfItem(atPath: url.path))?[.posixPermissions] as? Int,
                  mode & 0o001 != 0 else { return false }
            url.deleteLastPathComponent()
        }
        return true
    }

    /// The newest installed version's server programs.
    static func findBinaries() -> String? {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted()
        for version in versions.reversed() where FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/initdb") {
            return "\(root)/\(version)/bin"
        }
        return nil
    }

    /// One of the server's programs, as the user that may run it.
    @discardableResult
    func run(_ program: String, _ arguments: [String]) throws -> String {
        let path = binaries + "/" + program
        do {
            if getuid() == 0 {
                return try ChildProcess.run("/usr/sbin/runuser", ["-u", "postgres", "--", path] + arguments)
            }
            return try ChildProcess.run(path, arguments)
        } catch {
            let log = (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? ""
            throw FixtureError("\(program) failed: \(error)\n\(log.suffix(2000))")
        }
    }
}
