import FlyingFox
import FlyingSocks
import Foundation
import Logging

extension CodexWorkerSimulator {
    /// The worker's `HttpError`: a status and a `{"error":{"code","message"}}` body.
    struct HTTPError: Error {
        let status: Int
        let code: String
        let message: String

        init(_ status: Int, _ code: String, _ message: String) {
            self.status = status
            self.code = code
            self.message = message
        }

        var response: HTTPResponse {
            Wire.json(status, ["error": ["code": .string(code), "message": .string(message)]])
        }
    }

    enum Wire {
        /// Bodies over 1 MiB are refused (§1).
        static let maxBodyBytes = 1 << 20

        static func status(_ code: Int) -> HTTPStatusCode {
            switch code {
            case 200: .ok
            case 201: .created
            case 202: .accepted
            case 204: .noContent
            case 400: .badRequest
            case 401: .unauthorized
            case 404: .notFound
            case 409: .conflict
            case 413: HTTPStatusCode(413, phrase: "Payload Too Large")
            case 500: .internalServerError
            case 502: .badGateway
            default: HTTPStatusCode(code, phrase: "Status \(code)")
            }
        }

        static func json(_ status: Int, _ body: JSON) -> HTTPResponse {
            HTTPResponse(
                statusCode: Self.status(status),
                headers: [.contentType: "application/json; charset=utf-8"],
                body: body.data
            )
        }

        /// Reads a JSON body: empty counts as `{}`, a non-object as `{}` (fields are simply absent,
        /// as `body?.field` in Node), more than 1 MiB is 413, bad JSON is 400.
        static func body(of request: HTTPRequest) async throws -> (json: JSON, raw: Data) {
            if let length = request.bodySequence.count, length > maxBodyBytes {
                throw HTTPError(413, "PAYLOAD_TOO_LARGE", "请求体过大 (request body exceeds 1 MiB)")
            }
            let data = try await request.bodyData
            guard data.count <= maxBodyBytes else {
                throw HTTPError(413, "PAYLOAD_TOO_LARGE", "请求体过大 (request body exceeds 1 MiB)")
            }
            if data.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) { return ([:], data) }
            do {
                let value = try JSON.parse(data)
                return (value.isObject ? value : [:], data)
            } catch {
                throw HTTPError(400, "INVALID_JSON", "请求体不是合法 JSON (request body is not valid JSON)")
            }
        }

        static func query(_ request: HTTPRequest, _ name: String) -> String? {
            request.query.first { $0.name == name }?.value
        }
    }

    /// FlyingFox's own logging routed into the caller's swift-log `Logger` (never onto stdout,
    /// which carries only JSON Lines). Connection chatter is trace; errors are debug, because a
    /// client hanging up on an endless SSE stream is routine here.
    struct ServerLog: FlyingSocks.Logging {
        let logger: Logger
        let stopping: Locked<Bool>

        func logDebug(_ debug: @autoclosure () -> String) { logger.trace("\(debug())") }
        func logInfo(_ info: @autoclosure () -> String) { logger.trace("\(info())") }
        func logWarning(_ warning: @autoclosure () -> String) { logger.debug("\(warning())") }
        func logError(_ error: @autoclosure () -> String) { logger.debug("\(error())") }
        func logCritical(_ critical: @autoclosure () -> String) {
            if stopping.withLock({ $0 }) { logger.debug("\(critical()) (stopping)") } else { logger.error("\(critical())") }
        }
    }
}
