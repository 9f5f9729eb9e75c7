import FlyingFox
import Foundation
import Logging

extension CodexWorkerSimulator {
    /// `src/http-server.js`: auth first (so an unknown path without a token is 401), then routing by
    /// method and path segments; a path with no matching method is 404 NOT_FOUND.
    struct Router: HTTPHandler {
        let store: Store

        func handleRequest(_ request: HTTPRequest) async throws -> HTTPResponse {
            let response: HTTPResponse
            var body = Data()
            do {
                (response, body) = try await route(request)
            } catch let error as HTTPError {
                response = error.response
            } catch {
                response = HTTPError(500, "INTERNAL_ERROR", "\(error)").response
            }
            store.record(RecordedRequest(
                method: request.method.rawValue,
                path: request.path,
                query: Dictionary(request.query.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first }),
                headers: Dictionary(request.headers.map { ($0.key.rawValue.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first }),
                body: body,
                status: response.statusCode.code
            ))
            return response
        }

        private func authorized(_ request: HTTPRequest) -> Bool {
            guard let token = store.token.current else { return true }
            let header = request.headers[HTTPHeader("Authorization")]?.trimmingCharacters(in: .whitespaces)
            return header == "Bearer \(token)"
        }

        private func route(_ request: HTTPRequest) async throws -> (HTTPResponse, Data) {
            let method = request.method.rawValue.uppercased()
            let segments = request.path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)

            if request.path == "/health" {
                guard method == "GET" else { throw notFound(request) }
                return (Wire.json(200, ["status": "ok", "authEnabled": .bool(store.token.current != nil)]), Data())
            }
            if request.path == "/favicon.ico", method == "GET" {
                return (HTTPResponse(statusCode: .noContent), Data())
            }
            guard authorized(request) else {
                throw HTTPError(401, "UNAUTHORIZED", "未授权 (missing or wrong bearer token)")
            }

            // Reads the body once, for POST routes, and keeps it for the request log.
            var rawBody = Data()
            func body() async throws -> JSON {
                let (json, raw) = try await Wire.body(of: request)
                rawBody = raw
                return json
            }

            /// Matches `pattern` (`:x` segments capture) against the request for `verb`.
            func match(_ verb: String, _ pattern: String) -> [String]? {
                let parts = pattern.split(separator: "/").map(String.init)
                guard verb == method, parts.count == segments.count else { return nil }
                var captures: [String] = []
                for (part, segment) in zip(parts, segments) {
                    if part.hasPrefix(":") {
                        captures.append(segment.removingPercentEncoding ?? segment)
                    } else if part != segment {
                        return nil
                    }
                }
                return captures
            }

            if match("GET", "v1/projects") != nil {
                return (Wire.json(200, store.projectsBody()), rawBody)
            }
            if match("GET", "v1/models") != nil {
                return (Wire.json(200, ["data": Fixtures.models]), rawBody)
            }
            if match("POST", "v1/threads") != nil {
                let thread = try store.createThread(try await body())
                return (Wire.json(201, thread), rawBody)
            }
            let lacks = store.options.lacks
            if match("GET", "v1/threads") != nil {
                let archived = lacks.contains(.archive) ? nil : Wire.query(request, "archived")
                return (Wire.json(200, try store.listThreads(archived: archived)), rawBody)
            }
            if let ids = match("POST", "v1/threads/:tid/activate") {
                _ = try await body()
                return (Wire.json(200, try store.activate(ids[0])), rawBody)
            }
            if let ids = match("POST", "v1/threads/:tid/archive"), !lacks.contains(.archive) {
                _ = try await body()
                return (Wire.json(200, try store.setArchived(ids[0], true)), rawBody)
            }
            if let ids = match("POST", "v1/threads/:tid/unarchive"), !lacks.contains(.archive) {
                _ = try await body()
                return (Wire.json(200, try store.setArchived(ids[0], false)), rawBody)
            }
            if let ids = match("GET", "v1/threads/:tid/events"), !lacks.contains(.threadHistory) {
                let page = try store.threadHistory(
                    ids[0], cursor: Wire.query(request, "cursor"), limit: Wire.query(request, "limit"))
                return (Wire.json(200, page), rawBody)
            }
            if let ids = match("POST", "v1/threads/:tid/turns") {
                let snapshot = try store.startTurn(ids[0], try await body())
                return (Wire.json(202, snapshot), rawBody)
            }
            if let ids = match("GET", "v1/jobs/:jid") {
                return (Wire.json(200, try store.snapshot(ids[0])), rawBody)
            }
            if let ids = match("GET", "v1/jobs/:jid/events") {
                return (try events(request, ids[0]), rawBody)
            }
            if let ids = match("POST", "v1/jobs/:jid/approve") {
                return (Wire.json(200, try store.approve(ids[0], try await body())), rawBody)
            }
            if let ids = match("POST", "v1/jobs/:jid/cancel") {
                _ = try await body()
                return (Wire.json(200, try store.cancel(ids[0])), rawBody)
            }
            if match("POST", "v1/push/devices/register") != nil {
                return (Wire.json(200, try PushDevices.register(try await body())), rawBody)
            }
            if match("POST", "v1/push/devices/unregister") != nil {
                return (Wire.json(200, try PushDevices.unregister(try await body())), rawBody)
            }
            throw notFound(request)
        }

        /// JSON unless `Accept` contains `text/event-stream` (§2.1); both check job and cursor first.
        private func events(_ request: HTTPRequest, _ jobId: String) throws -> HTTPResponse {
            let cursor = Wire.query(request, "cursor")
            let accept = request.headers[HTTPHeader("Accept")] ?? ""
            guard accept.contains("text/event-stream") else {
                return Wire.json(200, try store.listEvents(jobId, cursor: cursor))
            }
            let stream = try store.openStream(jobId, cursor: cursor)
            return HTTPResponse(
                statusCode: .ok,
                headers: [
                    .contentType: "text/event-stream",
                    .cacheControl: "no-cache, no-transform",
                    .connection: "keep-alive",
                    HTTPHeader("X-Accel-Buffering"): "no",
                ],
                body: HTTPBodySequence(from: EventStreamBody(outputs: stream.outputs, dropAfter: stream.dropAfter))
            )
        }

        private func notFound(_ request: HTTPRequest) -> HTTPError {
            HTTPError(404, "NOT_FOUND", "路由不存在: \(request.method.rawValue) \(request.path) (no such route)")
        }
    }

    /// The push-device routes validate and echo, with no APNs behind them.
    enum PushDevices {
        static func register(_ body: JSON) throws -> JSON {
            guard let token = (body["deviceToken"] ?? body["device_token"])?.stringValue, !token.isEmpty else {
                throw HTTPError(400, "INVALID_DEVICE_TOKEN", "deviceToken 不能为空 (deviceToken is required)")
            }
            guard body["platform"]?.stringValue == "ios" else {
                throw HTTPError(400, "INVALID_PUSH_PLATFORM", "platform 必须是 ios (platform must be ios)")
            }
            guard let environment = body["environment"]?.stringValue, ["sandbox", "production"].contains(environment) else {
                throw HTTPError(400, "INVALID_PUSH_ENVIRONMENT", "environment 必须是 sandbox 或 production")
            }
            return ["status": "registered", "device": [
                "deviceToken": .string(token), "platform": "ios", "environment": .string(environment),
                "bundleId": (body["bundleId"] ?? body["bundle_id"]) ?? .null,
                "deviceName": (body["deviceName"] ?? body["device_name"]) ?? .null,
            ]]
        }

        static func unregister(_ body: JSON) throws -> JSON {
            guard let token = (body["deviceToken"] ?? body["device_token"])?.stringValue, !token.isEmpty else {
                throw HTTPError(400, "INVALID_DEVICE_TOKEN", "deviceToken 不能为空 (deviceToken is required)")
            }
            return ["status": "not_found", "deviceToken": .string(token)]
        }
    }
}
