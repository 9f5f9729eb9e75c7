import FlyingFox
import FlyingSocks
import Foundation
import Synchronization

/// FlyingFox on 127.0.0.1 (ephemeral port) as the far end of the WebSocket client's tests: an
/// independent server implementation, so the client is tested against someone else's reading
/// of RFC 6455. Routes: `/echo` (FlyingFox's message echo, which re-fragments into 1000-byte
/// frames), `/script` (raw frames under the test's control), `/plain` (an ordinary 200).
final class WebSocketTestServer: Sendable {
    /// The server side of one `/script` connection: raw frames in and out.
    final class Peer: @unchecked Sendable {
        private var iterator: AsyncThrowingStream<WSFrame, any Error>.AsyncIterator
        private let output: AsyncStream<WSFrame>.Continuation

        init(incoming: AsyncThrowingStream<WSFrame, any Error>, output: AsyncStream<WSFrame>.Continuation) {
            iterator = incoming.makeAsyncIterator()
            self.output = output
        }

        func send(_ frame: WSFrame) { output.yield(frame) }

        func send(_ opcode: WSFrame.Opcode, _ payload: [UInt8], fin: Bool = true, mask: WSFrame.Mask? = nil) {
            send(WSFrame(fin: fin, opcode: opcode, mask: mask, payload: Data(payload)))
        }

        func sendClose(_ code: UInt16, _ reason: String = "") {
            send(.close, [UInt8(code >> 8), UInt8(code & 0xFF)] + Array(reason.utf8))
        }

        /// The client's next frame (control frames included), nil when it is gone.
        func next() async throws -> WSFrame? { try await iterator.next() }

        /// Ends the connection without a close frame.
        func drop() { output.finish() }
    }

    typealias Script = @Sendable (Peer) async throws -> Void

    private struct ScriptedHandler: WSHandler {
        let script: Script
        func makeFrames(for client: AsyncThrowingStream<WSFrame, any Error>) async throws -> AsyncStream<WSFrame> {
            let (frames, continuation) = AsyncStream.makeStream(of: WSFrame.self)
            let peer = Peer(incoming: client, output: continuation)
            Task {
                try? await script(peer)
                continuation.finish()
            }
            return frames
        }
    }

    private let server: HTTPServer
    private let task: Task<Void, Never>
    let port: UInt16

    var base: String { "ws://127.0.0.1:\(port)" }

    static func start(script: @escaping Script = { _ in }) async throws -> WebSocketTestServer {
        let server = HTTPServer(address: try sockaddr_in.inet(ip4: "127.0.0.1", port: 0), timeout: 30, logger: .disabled)
        await server.appendRoute("/echo", to: WebSocketHTTPHandler(
            handler: MessageFrameWSHandler(handler: EchoWSMessageHandler(), frameSize: 1000)))
        await server.appendRoute("/script", to: WebSocketHTTPHandler(handler: ScriptedHandler(script: script)))
        await server.appendRoute("/plain") { _ in HTTPResponse(statusCode: .ok, body: Data("plain".utf8)) }
        let task = Task { _ = try? await server.run() }
        try await server.waitUntilListening()
        guard case .ip4(_, let port)? = await server.listeningAddress else { throw CocoaError(.featureUnsupported) }
        return WebSocketTestServer(server: server, task: task, port: port)
    }

    private init(server: HTTPServer, task: Task<Void, Never>, port: UInt16) {
        self.server = server
        self.task = task
        self.port = port
    }

    func stop() async {
        await server.stop(timeout: 0)
        task.cancel()
        await task.value
    }
}

/// Values a server script hands to the test.
final class Mailbox<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])

    func put(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }

    /// Waits (polling) until `count` values are in, or fails after `timeout`.
    func wait(for count: Int = 1, timeout: Duration = .seconds(5)) async throws -> [Value] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let current = all
            if current.count >= count { return current }
            try await Task.sleep(for: .milliseconds(5))
        }
        throw MailboxTimeout(expected: count, got: all.count)
    }

    struct MailboxTimeout: Error { let expected: Int; let got: Int }
}
