import Foundation
import TetherCore
import TetherSim
@testable import TetherTestSupport
#if canImport(Glibc)
import Glibc
#endif
import TetherStreaming

/// One HTTP exchange with the gateway, made with the curl binary (as a script would).
struct HTTPReply: Sendable {
    let status: Int
    /// Lowercased names; a repeated header keeps its last value.
    let headers: [String: String]
    let body: String
    var json: JSONValue? { try? JSONParser.parse(body) }

    /// The SSE events of a body: (id, data) for each block with data.
    var sseEvents: [(id: Int64?, data: String)] {
        body.components(separatedBy: "\n\n").compactMap { block in
            var id: Int64?
            var data: String?
            for line in block.split(separator: "\n") {
                if line.hasPrefix("id: ") { id = Int64(line.dropFirst(4)) }
                if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
            }
            return data.map { (id, $0) }
        }
    }
}

enum Curl {
    /// `curl -i` with the given method, headers and body; `maxTime` bounds a stream (curl then
    /// exits 28, which is fine: what arrived is returned).
    static func request(_ method: String, _ url: String, headers: [String] = [], json: String? = nil,
                        body: String? = nil, maxTime: Double = 15) async throws -> HTTPReply {
        try await start(method, url, headers: headers, json: json, body: body, maxTime: maxTime).finish()
    }

    /// A request under way: `finish()` waits for curl and parses what it got.
    struct Running {
        let child: ChildProcess
        let path: String
        let description: String

        /// Ends an SSE stream once the event with id `seq` arrived whole (or after `timeout`).
        func stop(onceItHas seq: Int64, timeout: Duration) async throws -> HTTPReply {
            let deadline = ContinuousClock.now + timeout
            while child.isRunning, ContinuousClock.now < deadline {
                if let output = try? String(contentsOfFile: path, encoding: .utf8),
                   let block = output.range(of: "\nid: \(seq)\n"), output[block.upperBound...].contains("\n\n") { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            child.signal(SIGTERM)
            return try await finish()
        }

        /// Waits without blocking a thread: the simulators run in this process, on the same pool.
        func finish() async throws -> HTTPReply {
            while child.isRunning { try await Task.sleep(for: .milliseconds(10)) }
            defer { try? FileManager.default.removeItem(atPath: path) }
            let output = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
            return try Curl.parse(output, description)
        }
    }

    /// Starts curl with its output in a file (no pipe that a curl spawned meanwhile could
    /// inherit) and returns at once.
    static func start(_ method: String, _ url: String, headers: [String] = [], json: String? = nil,
                      body: String? = nil, maxTime: Double = 15) throws -> Running {
        var arguments = ["-s", "-i", "-N", "-X", method, "--max-time", String(maxTime)]
        for header in headers { arguments += ["-H", header] }
        if let json { arguments += ["-H", "Content-Type: application/json", "--data-binary", json] }
        if let body { arguments += ["--data-binary", body] }
        arguments.append(url)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tether-curl-\(UUID().uuidString)").path
        return Running(child: try ChildProcess("/usr/bin/curl", ["-o", path] + arguments), path: path, description: "\(method) \(url)")
    }

    static func parse(_ output: String, _ description: String) throws -> HTTPReply {
        guard let split = output.range(of: "\r\n\r\n") else {
            throw FixtureError("no HTTP response to \(description): \(output.prefix(200))")
        }
        let head = output[..<split.lowerBound].split(separator: "\r\n")
        let status = head.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return HTTPReply(status: status, headers: headers, body: String(output[split.upperBound...]))
    }

}

/// A running `tether serve` over an OpenCode simulator, on a database that can outlive it.
final class GatewayFixture: @unchecked Sendable {
    let simulator: OpenCodeSimulator
    let config: TemporaryConfig
    let database: String
    let environment: [String: String]
    private(set) var process: TetherProcess?
    private(set) var url = ""
    /// The profile the session and turn helpers use.
    var profile = "oc"

    init(pacing: Duration = .milliseconds(5), flood: Int? = nil, floodRate: Int? = nil, serveTable: String = "",
         environment: [String: String] = [:]) async throws {
        var options = OpenCodeSimulator.Options(password: "secret", pacing: pacing, flood: flood)
        options.floodRate = floodRate
        simulator = OpenCodeSimulator(options: options)
        let simulated = try await simulator.start()
        config = try TemporaryConfig("""
            [profiles.oc]
            backend = "opencode"
            url = "\(simulated.absoluteString)"
            password = { env = "OC_TEST_PASSWORD" }
            \(serveTable)
            """)
        database = (config.path as NSString).deletingLastPathComponent + "/gateway.sqlite"
        self.environment = environment.merging(["OC_TEST_PASSWORD": "secret"]) { $1 }
    }

    /// Starts the gateway and waits for its first line.
    func start(_ extra: [String] = [], shell: String? = nil) async throws {
        let process = try TetherProcess(["--config", config.path, "serve", "--listen", "127.0.0.1:0", "--db", database] + extra,
                                        environment: environment, shell: shell)
        let line = try await process.waitForLine { $0.hasPrefix("{\"listen\"") }
        url = try JSONParser.parse(line)["listen"]?.string ?? ""
        self.process = process
    }

    func stop() async throws -> TetherProcess.Result? {
        guard let process else { return nil }
        self.process = nil
        process.terminate()
        return try await process.finish()
    }

    func kill() async {
        guard let process else { return }
        self.process = nil
        process.kill()
        _ = try? await process.finish()
    }

    func shutdown() async {
        _ = try? await stop()
        await simulator.stop()
    }

    // MARK: API

    func get(_ path: String, headers: [String] = [], maxTime: Double = 15) async throws -> HTTPReply {
        try await Curl.request("GET", url + path, headers: headers, maxTime: maxTime)
    }

    /// An SSE read of `path` that ends once the event with seq `through` arrived.
    func stream(_ path: String, headers: [String] = [], through seq: Int64) async throws -> HTTPReply {
        try await Curl.start("GET", url + path, headers: headers, maxTime: 90).stop(onceItHas: seq, timeout: .seconds(60))
    }

    /// The seq of the last logged event.
    func lastSeq() async throws -> Int64 {
        try await logged().compactMap { $0["seq"]?.int }.last ?? 0
    }

    func post(_ path: String, json: String, headers: [String] = []) async throws -> HTTPReply {
        try await Curl.request("POST", url + path, headers: headers, json: json)
    }

    func createSession() async throws -> String {
        let reply = try await post("/v1/profiles/\(profile)/sessions", json: "{\"title\":\"gateway e2e\"}")
        guard reply.status == 201, let id = reply.json?["id"]?.string else {
            throw FixtureError("session create answered \(reply.status): \(reply.body)")
        }
        return id
    }

    func startTurn(_ session: String, _ text: String) async throws {
        let reply = try await post("/v1/profiles/\(profile)/sessions/\(session)/turns", json: "{\"text\":\"\(text)\"}")
        guard reply.status == 202 else { throw FixtureError("turn start answered \(reply.status): \(reply.body)") }
    }

    /// A new session and a turn in it that asks for an approval: the session and the approval's id.
    func requestApproval(_ prompt: String) async throws -> (session: String, approval: String) {
        let session = try await createSession()
        try await startTurn(session, prompt)
        let requested = try await waitForLogged { $0["type"] == "approval.requested" && $0["session"]?.string == session }
        guard let id = requested["data"]?["id"]?.string else { throw FixtureError("an approval.requested without an id: \(requested)") }
        return (session, id)
    }

    /// Every logged event (long-poll form), each with its seq.
    func logged(since: Int64 = 0, type: String? = nil) async throws -> [JSONValue] {
        try await Self.logged(at: url, since: since, type: type)
    }

    /// Every event logged by the gateway at `url` (long-poll form), each with its seq.
    static func logged(at url: String, since: Int64 = 0, type: String? = nil) async throws -> [JSONValue] {
        var all: [JSONValue] = []
        var cursor = since
        while true {
            let reply = try await Curl.request("GET", url + "/v1/events?format=json&since=\(cursor)&limit=1000" + (type.map { "&type=\($0)" } ?? ""))
            guard reply.status == 200, let events = reply.json?["events"]?.array, let next = reply.json?["next"]?.int else {
                throw FixtureError("long-poll answered \(reply.status): \(reply.body)")
            }
            all += events
            if events.isEmpty || next == cursor { return all }
            cursor = next
        }
    }

    /// Waits until a logged event satisfies `predicate`.
    @discardableResult
    func waitForLogged(timeout: Duration = .seconds(20), _ predicate: (JSONValue) -> Bool) async throws -> JSONValue {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let found = try await logged().first(where: predicate) { return found }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw FixtureError("timed out waiting for a logged event; stderr:\n\(process?.stderrText ?? "")")
    }
}
