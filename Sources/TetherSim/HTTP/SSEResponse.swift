import FlyingFox
import Foundation

/// Builders for the responses the simulators send: streaming SSE bodies, JSON, empty statuses.
enum SSEResponse {
    /// Buffer size FlyingFox asks the body for; large so floods go out in large writes.
    static let writeSize = 64 * 1024

    /// A 200 `text/event-stream` response whose body is `body`, sent chunk by chunk as written.
    static func stream(_ body: StreamingBody, headers extra: [(String, String)] = []) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-cache"
        for (name, value) in extra {
            headers[HTTPHeader(name)] = value
        }
        return HTTPResponse(
            statusCode: .ok,
            headers: headers,
            body: HTTPBodySequence(from: body.bytes, suggestedBufferSize: writeSize)
        )
    }

    /// A pre-rendered stream (a flood), in slices of `writeSize` as fast as the client reads;
    /// then, when `close`, the end of the body.
    static func write(_ bytes: Data, into body: StreamingBody, close: Bool) async {
        var offset = bytes.startIndex
        while offset < bytes.endIndex {
            if Task.isCancelled { return }
            let end = min(bytes.endIndex, offset + writeSize)
            guard await body.write(bytes[offset..<end]) else { return }
            offset = end
        }
        if close { body.finish() }
    }

    /// One SSE event carrying `json` as a single `data:` line: exactly `data: {…}\n\n`.
    static func dataFrame(_ json: OrderedJSON) -> Data {
        var frame = Data("data: ".utf8)
        frame.append(json.data)
        frame.append(contentsOf: [0x0A, 0x0A])
        return frame
    }

    static func json(_ value: OrderedJSON, status: HTTPStatusCode = .ok, headers extra: [(String, String)] = []) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers[.contentType] = "application/json"
        for (name, value) in extra {
            headers[HTTPHeader(name)] = value
        }
        return HTTPResponse(statusCode: status, headers: headers, body: value.data)
    }

    static func text(_ text: String, status: HTTPStatusCode = .ok) -> HTTPResponse {
        HTTPResponse(
            statusCode: status,
            headers: [.contentType: "text/plain; charset=utf-8"],
            body: Data(text.utf8)
        )
    }

    static func empty(_ status: HTTPStatusCode, headers extra: [(String, String)] = []) -> HTTPResponse {
        var headers = HTTPHeaders()
        for (name, value) in extra {
            headers[HTTPHeader(name)] = value
        }
        return HTTPResponse(statusCode: status, headers: headers)
    }

    static func status(_ code: Int) -> HTTPStatusCode {
        HTTPStatusCode(code, phrase: reasonPhrases[code] ?? "Status \(code)")
    }

    private static let reasonPhrases: [Int: String] = [
        200: "OK", 204: "No Content", 301: "Moved Permanently", 302: "Found", 303: "See Other",
        304: "Not Modified", 307: "Temporary Redirect", 308: "Permanent Redirect", 400: "Bad Request",
        401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
        409: "Conflict", 421: "Misdirected Request", 429: "Too Many Requests",
        500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
    ]
}
