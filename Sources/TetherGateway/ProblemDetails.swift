import Hummingbird
import TetherCore
import TetherStreaming

/// An RFC 7807 `application/problem+json` error: `type`, `title`, `status`, `detail`, and `code`
/// (one of the design's error codes), plus any extra members (a 409's `decision`).
public struct ProblemDetails: Error, HTTPResponseError, CustomStringConvertible {
    public struct Kind: Sendable {
        let status: HTTPResponse.Status
        let code: String
        public static let badRequest = Kind(status: .badRequest, code: "bad_request")
        public static let unauthorized = Kind(status: .unauthorized, code: "unauthorized")
        public static let forbidden = Kind(status: .forbidden, code: "forbidden")
        public static let notFound = Kind(status: .notFound, code: "not_found")
        public static let conflict = Kind(status: .conflict, code: "conflict")
        /// 422, not 501: the gateway works; this profile's backend cannot do what was asked.
        public static let unsupported = Kind(status: .unprocessableContent, code: "unsupported")
        public static let unavailable = Kind(status: .badGateway, code: "unavailable")
        public static let timeout = Kind(status: .gatewayTimeout, code: "timeout")
        /// The gateway's own event log (a fleet's database) did not answer.
        public static let logUnavailable = Kind(status: .serviceUnavailable, code: "unavailable")
        public static let failed = Kind(status: .unprocessableContent, code: "failed")
        public static let payloadTooLarge = Kind(status: .contentTooLarge, code: "bad_request")
        public static let internalError = Kind(status: .internalServerError, code: "internal")
        public static let methodNotAllowed = Kind(status: .methodNotAllowed, code: "bad_request")
        public static let unsupportedMediaType = Kind(status: .unsupportedMediaType, code: "bad_request")
        /// Too many failed logins from one client: it waits (`Retry-After`).
        public static let tooManyRequests = Kind(status: .tooManyRequests, code: "too_many_requests")
    }

    public let kind: Kind
    public let title: String
    public let detail: String
    public var extra: JSONObject
    /// `Retry-After`, in seconds (a 429).
    public var retryAfter: Int?

    public init(_ kind: Kind, _ title: String, detail: String, extra: JSONObject = [:]) {
        self.kind = kind
        self.title = title
        self.detail = detail
        self.extra = extra
    }

    public var status: HTTPResponse.Status { kind.status }
    public var description: String { "\(kind.code): \(title) — \(detail)" }

    public var json: JSONValue {
        var object: JSONObject = [
            "type": .string("https://tether.invalid/problems/\(kind.code)"),
            "title": .string(title), "status": .int(Int64(kind.status.code)), "detail": .string(detail),
            "code": .string(kind.code),
        ]
        for entry in extra { object[entry.key] = entry.value }
        return .object(object)
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        response()
    }

    public func response() -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "application/problem+json"
        if kind.status == .unauthorized { headers[.wwwAuthenticate] = "Bearer realm=\"tether\"" }
        if let retryAfter { headers[HTTPFields.retryAfter] = String(retryAfter) }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: json.serialized)))
    }

    /// A backend's failure, as the API reports it. The message never holds a secret (TetherError's rule).
    public init(_ error: TetherError, doing what: String) {
        let detail = error.hint.map { "\(error.message); \($0)" } ?? error.message
        let kind: Kind = switch error.code {
        case .notFound: .notFound
        case .conflict: .conflict
        case .usage: .badRequest
        case .unsupported: .unsupported
        case .unavailable, .authentication, .configuration, .badData: .unavailable
        case .timeout: .timeout
        default: .failed
        }
        self.init(kind, "\(what) failed", detail: detail)
    }
}
