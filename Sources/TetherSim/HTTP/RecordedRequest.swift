import FlyingFox
import Foundation

/// One request as a simulator received it, for tests to assert on (auth headers, `Last-Event-ID`, bodies).
public struct RecordedRequest: Sendable, CustomStringConvertible {
    public var method: String
    /// The percent-encoded path, without the query.
    public var path: String
    /// Decoded query items in order (a name may repeat).
    public var query: [(name: String, value: String)]
    /// Header names lowercased.
    public var headers: [String: String]
    public var body: Data

    public init(method: String, path: String, query: [(name: String, value: String)], headers: [String: String], body: Data) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    /// Case-insensitive header lookup.
    public func header(_ name: String) -> String? {
        headers[name.lowercased()]
    }

    /// The first value of a query item.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }

    public var description: String {
        "\(method) \(path)" + (query.isEmpty ? "" : "?" + query.map { "\($0.name)=\($0.value)" }.joined(separator: "&"))
    }

    init(_ request: HTTPRequest, body: Data) {
        var headers: [String: String] = [:]
        for (key, value) in request.headers {
            let name = key.rawValue.lowercased()
            headers[name] = headers[name].map { "\($0), \(value)" } ?? value
        }
        self.init(
            method: request.method.rawValue,
            path: request.path,
            query: request.query.map { ($0.name, $0.value) },
            headers: headers,
            body: body
        )
    }
}

/// Every request a simulator received, in arrival order.
final class RequestLog: Sendable {
    private let entries = Locked<[RecordedRequest]>([])

    func append(_ request: RecordedRequest) {
        entries.withLock { $0.append(request) }
    }

    var all: [RecordedRequest] {
        entries.current
    }

    func clear() {
        entries.withLock { $0.removeAll() }
    }

    /// Waits until a request matching `predicate` has arrived (polling: tests only).
    func waitFor(
        timeout: Duration,
        _ predicate: @Sendable (RecordedRequest) -> Bool
    ) async throws -> RecordedRequest {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while true {
            if let match = all.first(where: predicate) { return match }
            guard ContinuousClock.now < deadline else { throw SimulatorError.timedOut("waiting for a request") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}
