import NIOCore
import NIOHTTPTypes

/// The live phase of a `GET /v1/events` response: frames written as body parts of the response
/// under way, straight into its connection on the connection's event loop. Its head and replay
/// went through Hummingbird's response writer before (which hands its writes to the same loop,
/// so they run first), and the response ends through that writer once the stream is over.
struct EventStreamSink: LiveFrameSink {
    let channel: any Channel

    var eventLoop: any EventLoop { channel.eventLoop }

    var isWritable: Bool { channel.isWritable }

    func write(_ frames: [ByteBuffer]) {
        for frame in frames { channel.write(HTTPResponsePart.body(frame), promise: nil) }
        channel.flush()
    }

    func whenClosed(_ action: @escaping @Sendable () -> Void) {
        channel.closeFuture.whenComplete { _ in action() }
    }
}
