import Hummingbird
import TetherCore
import TetherStreaming

/// JSON bodies in and out, with the kernel's own JSON (no Codable: the event schema is JSONValue).
enum JSONResponse {
    static func ok(_ value: JSONValue, status: HTTPResponse.Status = .ok) -> Response {
        raw(value.serialized, status: status)
    }

    static func raw(_ text: String, status: HTTPResponse.Status = .ok, contentType: String = "application/json") -> Response {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// A JSON document as stored (the OpenAPI document: served byte for byte as committed).
    static func bytes(_ body: [UInt8], contentType: String = "application/json") -> Response {
        var headers = HTTPFields()
        headers[.contentType] = contentType
        headers[.cacheControl] = "no-store"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// A JSON array of already-serialized JSON texts.
    static func array(_ items: [String]) -> Response {
        raw("[" + items.joined(separator: ",") + "]")
    }
}

enum JSONRequest {
    static let maxBody = 1 << 20

    /// The request body as a JSON object; an empty body is an empty object.
    static func object(_ request: Request) async throws -> JSONObject {
        var request = request
        let buffer: ByteBuffer
        do {
            buffer = try await request.collectBody(upTo: maxBody)
        } catch {
            throw ProblemDetails(.payloadTooLarge, "request body too large", detail: "send at most \(maxBody) bytes of JSON")
        }
        let text = String(buffer: buffer)
        if text.allSatisfy(\.isWhitespace) { return [:] }
        guard let value = try? JSONParser.parse(text), let object = value.object else {
            throw ProblemDetails(.badRequest, "the body is not a JSON object",
                                 detail: "send Content-Type: application/json with a JSON object, e.g. {\"text\":\"hello\"}")
        }
        return object
    }
}
