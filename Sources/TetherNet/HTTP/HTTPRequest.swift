import Foundation

/// An HTTP request as the adapters describe it; `HTTPClient` turns it into a libcurl transfer.
public struct HTTPRequest: Sendable {
    public enum Method: String, Sendable { case get = "GET", post = "POST", put = "PUT", patch = "PATCH", delete = "DELETE" }

    public enum Authorization: Sendable {
        case none
        case basic(username: String, password: String)
        case bearer(String)

        var headerValue: String? {
            switch self {
            case .none: return nil
            case .basic(let username, let password): return "Basic " + Data("\(username):\(password)".utf8).base64EncodedString()
            case .bearer(let token): return "Bearer \(token)"
            }
        }
    }

    public var method: Method
    public var url: String
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]?
    public var authorization: Authorization
    /// The whole exchange (request/response); streams use the liveness watchdog instead.
    public var timeout: Duration
    public var connectTimeout: Duration

    public init(_ method: Method = .get, _ url: String, headers: [(name: String, value: String)] = [],
                body: [UInt8]? = nil, authorization: Authorization = .none,
                timeout: Duration = .seconds(30), connectTimeout: Duration = .seconds(10)) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.authorization = authorization
        self.timeout = timeout
        self.connectTimeout = connectTimeout
    }

    /// A JSON request: the body is the serialized value, with the matching content type.
    public static func json(_ method: Method, _ url: String, body: String?, authorization: Authorization = .none,
                            timeout: Duration = .seconds(30)) -> HTTPRequest {
        var headers: [(name: String, value: String)] = [("Accept", "application/json")]
        if body != nil { headers.append(("Content-Type", "application/json")) }
        return HTTPRequest(method, url, headers: headers, body: body.map { Array($0.utf8) },
                           authorization: authorization, timeout: timeout)
    }
}

public struct HTTPResponse: Sendable {
    public var status: Int
    /// Header names lower-cased; the last value wins.
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public var bodyText: String { String(decoding: body, as: UTF8.self) }
    public var isSuccess: Bool { (200..<300).contains(status) }
}

extension Duration {
    var milliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
