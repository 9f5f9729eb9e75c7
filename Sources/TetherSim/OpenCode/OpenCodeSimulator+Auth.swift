import FlyingFox
import Foundation

/// Notes §1: with a password set, every route (SSE included) needs `Authorization: Basic
/// base64(user:pass)` or `?auth_token=base64(user:pass)`; the query wins when both are present.
struct OpenCodeAuth: Sendable {
    let username: String
    let password: String?

    func permits(_ request: RecordedRequest) -> Bool {
        guard let password else { return true }
        let credentials: String?
        if let token = request.queryValue("auth_token") {
            credentials = Self.decode(token)
        } else if let header = request.header("authorization") {
            let parts = header.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].caseInsensitiveCompare("Basic") == .orderedSame else { return false }
            credentials = Self.decode(parts[1].trimmingCharacters(in: .whitespaces))
        } else {
            credentials = nil
        }
        return credentials == "\(username):\(password)"
    }

    /// 401, empty body, `www-authenticate: Basic realm="Secure Area"`.
    static var refusal: HTTPResponse {
        SSEResponse.empty(.unauthorized, headers: [("www-authenticate", "Basic realm=\"Secure Area\"")])
    }

    private static func decode(_ base64: String) -> String? {
        Data(base64Encoded: base64).flatMap { String(data: $0, encoding: .utf8) }
    }
}
