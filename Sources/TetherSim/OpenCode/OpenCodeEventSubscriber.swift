import Foundation

/// One bus event as the simulated server publishes it: the payload `{id?, type, properties}` and
/// the instance directory it belongs to (nil for server-wide events).
struct OpenCodeBusEvent: Sendable {
    var type: String
    var payload: OrderedJSON
    var directory: String?
}

/// One open SSE response: `GET /global/event` (every directory, wrapped in the global envelope)
/// or `GET /event?directory=` (bare payloads of one instance; ends after `server.instance.disposed`).
final class OpenCodeEventSubscriber: Sendable {
    enum Endpoint: Sendable, Equatable {
        case global
        case instance(directory: String)
    }

    let endpoint: Endpoint
    let body: StreamingBody
    /// Issue #46733: only `server.connected` and heartbeats get through.
    let heartbeatsOnly: Bool

    init(endpoint: Endpoint, body: StreamingBody, heartbeatsOnly: Bool) {
        self.endpoint = endpoint
        self.body = body
        self.heartbeatsOnly = heartbeatsOnly
    }

    /// Sends a bus event if this stream carries it. Returns false once the stream is over.
    @discardableResult
    func deliver(_ event: OpenCodeBusEvent) -> Bool {
        guard !heartbeatsOnly else { return body.isOpen }
        switch endpoint {
        case .global:
            return body.send(SSEResponse.dataFrame(Self.envelope(event)))
        case .instance(let directory):
            guard event.directory == directory else { return body.isOpen }
            let open = body.send(SSEResponse.dataFrame(event.payload))
            if event.type == "server.instance.disposed" {
                body.finish()
                return false
            }
            return open
        }
    }

    /// `server.connected` / `server.heartbeat`: per connection, never filtered; no `directory`.
    @discardableResult
    func deliverServerEvent(_ payload: OrderedJSON) -> Bool {
        switch endpoint {
        case .global:
            return body.send(SSEResponse.dataFrame(["payload": payload]))
        case .instance:
            return body.send(SSEResponse.dataFrame(payload))
        }
    }

    /// `{directory, project, payload}` for instance events; `{payload}` for server-wide ones.
    static func envelope(_ event: OpenCodeBusEvent) -> OrderedJSON {
        guard let directory = event.directory else { return ["payload": event.payload] }
        if directory == "global" {
            return ["directory": "global", "payload": event.payload]
        }
        return [
            "directory": .string(directory),
            "project": .string(OpenCodeFixtures.projectID(for: directory)),
            "payload": event.payload,
        ]
    }
}
