/// Turns a WebSocket byte stream into messages and control frames (RFC 6455 §5), as a pure state
/// machine: bytes in, outputs out, no I/O. Bytes may arrive split anywhere.
///
/// It reassembles fragmented messages (control frames may arrive between the fragments and are
/// output at once), validates UTF-8 of text messages and close reasons, and enforces
/// `maxMessageSize` from the frame headers, before the payload is buffered, so memory stays
/// bounded by the limit. Any violation throws a ``ProtocolError`` carrying the close code to
/// send; the decoder then stays failed. After a close frame it ignores further input.
public struct WebSocketFrameDecoder: Sendable {
    /// Which side this decoder sits on: a client reads a server's frames, which must be
    /// unmasked; a server reads a client's, which must be masked (§5.1).
    public enum Role: Sendable, Hashable { case client, server }

    public enum Output: Sendable, Hashable {
        case message(WebSocketMessage)
        case ping([UInt8])
        case pong([UInt8])
        /// The peer's close frame (code 1005 when it had none). The last output.
        case close(WebSocketClose)
    }

    /// A violation of the protocol: the connection must be failed with `closeCode`.
    public struct ProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
        public let closeCode: WebSocketCloseCode
        public let reason: String

        public init(_ closeCode: WebSocketCloseCode, _ reason: String) {
            self.closeCode = closeCode
            self.reason = reason
        }

        public var description: String { "\(reason) (close code \(closeCode))" }
    }

    public let role: Role
    /// The largest message accepted, in payload bytes summed over its fragments.
    public let maxMessageSize: Int

    private var buffer: [UInt8] = []
    private var head = 0
    /// The header of the frame whose payload is awaited.
    private var pending: Header?
    private var fragmentOpcode: WebSocketOpcode?
    private var fragments: [UInt8] = []
    /// Why the stream broke, once it did: every later `feed` throws it.
    public private(set) var failure: ProtocolError?
    /// A close frame was decoded: nothing after it counts.
    public private(set) var isClosed = false

    private struct Header {
        var fin: Bool
        var opcode: WebSocketOpcode
        var mask: WebSocketMask?
        var length: Int
    }

    public init(role: Role = .client, maxMessageSize: Int = 16 << 20) {
        precondition(maxMessageSize >= 0, "maxMessageSize cannot be negative")
        self.role = role
        self.maxMessageSize = maxMessageSize
    }

    /// Bytes held for an incomplete frame, plus the fragments of an unfinished message.
    public var bufferedByteCount: Int { buffer.count - head + fragments.count }

    /// Decodes the next chunk; returns what completed, in stream order. A frame that breaks the
    /// protocol throws — unless frames before it in the same chunk completed: those are
    /// returned (how bytes were split into reads must not decide what is delivered), and
    /// `failure` is set, for the caller to act on next.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) throws(ProtocolError) -> [Output] {
        if let failure { throw failure }
        if isClosed { return [] }
        buffer.append(contentsOf: bytes)
        var outputs: [Output] = []
        do throws(ProtocolError) {
            while !isClosed, let output = try next() {
                if let output { outputs.append(output) }
            }
        } catch {
            failure = error
            buffer = []
            head = 0
            fragments = []
            if outputs.isEmpty { throw error }
            return outputs
        }
        compact()
        return outputs
    }

    public mutating func feed(_ bytes: [UInt8]) throws(ProtocolError) -> [Output] {
        var result: Result<[Output], ProtocolError> = .success([])
        bytes.withUnsafeBytes { raw in result = Result { () throws(ProtocolError) in try feed(raw) } }
        return try result.get()
    }

    // MARK: - Parsing

    /// The next frame's outcome: `nil` when more bytes are needed, `.some(nil)` for a frame that
    /// completed nothing yet (a non-final fragment).
    private mutating func next() throws(ProtocolError) -> Output?? {
        if pending == nil {
            guard let header = try parseHeader() else { return nil }
            pending = header
        }
        guard let header = pending, buffer.count - head >= header.length else { return nil }
        var payload = Array(buffer[head..<(head + header.length)])
        head += header.length
        pending = nil
        header.mask?.apply(to: &payload)
        return .some(try complete(header, payload))
    }

    private mutating func parseHeader() throws(ProtocolError) -> Header? {
        let available = buffer.count - head
        guard available >= 2 else { return nil }
        let b0 = buffer[head], b1 = buffer[head + 1]
        // Everything checkable from the first two bytes fails at once, before waiting for more.
        guard b0 & 0x70 == 0 else {
            throw ProtocolError(.protocolError, "a frame has reserved bits set (no extension was negotiated)")
        }
        guard let opcode = WebSocketOpcode(rawValue: b0 & 0x0F) else {
            throw ProtocolError(.protocolError, "a frame has the reserved opcode 0x\(String(b0 & 0x0F, radix: 16))")
        }
        let fin = b0 & 0x80 != 0
        let masked = b1 & 0x80 != 0
        switch (role, masked) {
        case (.client, true): throw ProtocolError(.protocolError, "the server sent a masked frame")
        case (.server, false): throw ProtocolError(.protocolError, "the client sent an unmasked frame")
        default: break
        }
        let length7 = Int(b1 & 0x7F)
        if opcode.isControl {
            guard fin else { throw ProtocolError(.protocolError, "a control frame is fragmented") }
            guard length7 <= 125 else { throw ProtocolError(.protocolError, "a control frame is longer than 125 bytes") }
        }
        let extended = length7 == 126 ? 2 : length7 == 127 ? 8 : 0
        let headerLength = 2 + extended + (masked ? 4 : 0)
        guard available >= headerLength else { return nil }

        var length = UInt64(length7)
        if extended > 0 {
            length = 0
            for index in 0..<extended { length = length << 8 | UInt64(buffer[head + 2 + index]) }
            guard length >> 63 == 0 else {
                throw ProtocolError(.protocolError, "a frame's 64-bit length has its most significant bit set")
            }
        }
        if !opcode.isControl {
            guard length <= UInt64(maxMessageSize - fragments.count) else {
                throw ProtocolError(.messageTooBig, "a message is larger than the \(maxMessageSize)-byte limit")
            }
        }
        var mask: WebSocketMask?
        if masked {
            let at = head + 2 + extended
            mask = WebSocketMask(buffer[at], buffer[at + 1], buffer[at + 2], buffer[at + 3])
        }
        head += headerLength
        return Header(fin: fin, opcode: opcode, mask: mask, length: Int(length))
    }

    private mutating func complete(_ header: Header, _ payload: [UInt8]) throws(ProtocolError) -> Output? {
        switch header.opcode {
        case .ping:
            return .ping(payload)
        case .pong:
            return .pong(payload)
        case .close:
            isClosed = true
            return .close(try Self.close(from: payload))
        case .text, .binary:
            guard fragmentOpcode == nil else {
                throw ProtocolError(.protocolError, "a new message began before the fragmented one ended")
            }
            if header.fin { return .message(try Self.message(header.opcode, payload)) }
            fragmentOpcode = header.opcode
            fragments = payload
            return nil
        case .continuation:
            guard let opcode = fragmentOpcode else {
                throw ProtocolError(.protocolError, "a continuation frame arrived outside a fragmented message")
            }
            fragments.append(contentsOf: payload)
            guard header.fin else { return nil }
            let message = try Self.message(opcode, fragments)
            fragmentOpcode = nil
            fragments = []
            return .message(message)
        }
    }

    private static func message(_ opcode: WebSocketOpcode, _ payload: [UInt8]) throws(ProtocolError) -> WebSocketMessage {
        guard opcode == .text else { return .binary(payload) }
        guard let text = String(validating: payload, as: UTF8.self) else {
            throw ProtocolError(.invalidPayload, "a text message is not valid UTF-8")
        }
        return .text(text)
    }

    /// A close frame's payload: empty, or a 2-byte code and a UTF-8 reason (§5.5.1).
    static func close(from payload: [UInt8]) throws(ProtocolError) -> WebSocketClose {
        if payload.isEmpty { return WebSocketClose(code: .noStatusReceived) }
        guard payload.count >= 2 else { throw ProtocolError(.protocolError, "a close frame has a 1-byte payload") }
        let code = WebSocketCloseCode(UInt16(payload[0]) << 8 | UInt16(payload[1]))
        guard code.isValidOnWire else { throw ProtocolError(.protocolError, "a close frame has the invalid code \(code)") }
        guard let reason = String(validating: payload[2...], as: UTF8.self) else {
            throw ProtocolError(.invalidPayload, "a close frame's reason is not valid UTF-8")
        }
        return WebSocketClose(code: code, reason: reason)
    }

    private mutating func compact() {
        if head == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 20)
            head = 0
        } else if head >= 64 << 10 && head * 2 >= buffer.count {
            buffer.removeFirst(head)
            head = 0
        }
    }
}
