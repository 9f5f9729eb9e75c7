/// Encodes WebSocket frames (RFC 6455 §5.2), as pure functions. A client masks every frame
/// with a fresh key (§5.3); a server passes no mask.
public enum WebSocketFrameEncoder {
    /// One frame: header (7-, 16- or 64-bit length), the masking key when given, the payload
    /// (masked with it).
    public static func frame(_ opcode: WebSocketOpcode, payload: some Collection<UInt8>, fin: Bool = true,
                             mask: WebSocketMask?) -> [UInt8] {
        precondition(!opcode.isControl || (fin && payload.count <= 125), "control frames are whole and at most 125 bytes")
        var bytes: [UInt8] = []
        bytes.reserveCapacity(payload.count + 14)
        bytes.append((fin ? 0x80 : 0) | opcode.rawValue)
        let maskBit: UInt8 = mask == nil ? 0 : 0x80
        let length = payload.count
        if length <= 125 {
            bytes.append(maskBit | UInt8(length))
        } else if length <= 0xFFFF {
            bytes += [maskBit | 126, UInt8(length >> 8), UInt8(length & 0xFF)]
        } else {
            bytes.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: UInt64(length) >> UInt64(shift))) }
        }
        guard let mask else {
            bytes.append(contentsOf: payload)
            return bytes
        }
        bytes += mask.array
        var masked = Array(payload)
        mask.apply(to: &masked)
        bytes += masked
        return bytes
    }

    /// A whole message, split into frames of at most `maxFrameSize` payload bytes (the first
    /// carries the opcode, the rest are continuations, the last has FIN). `mask` is called once
    /// per frame.
    public static func message(_ message: WebSocketMessage, maxFrameSize: Int = .max,
                               mask: () -> WebSocketMask?) -> [UInt8] {
        precondition(maxFrameSize > 0, "maxFrameSize must be positive")
        let (opcode, payload): (WebSocketOpcode, [UInt8])
        switch message {
        case .text(let text): (opcode, payload) = (.text, Array(text.utf8))
        case .binary(let bytes): (opcode, payload) = (.binary, bytes)
        }
        guard payload.count > maxFrameSize else { return frame(opcode, payload: payload, mask: mask()) }
        var bytes: [UInt8] = []
        var start = 0
        while start < payload.count {
            let end = Swift.min(start + maxFrameSize, payload.count)
            bytes += frame(start == 0 ? opcode : .continuation, payload: payload[start..<end], fin: end == payload.count,
                           mask: mask())
            start = end
        }
        return bytes
    }

    /// A close frame's payload: the code, then the reason cut to fit 125 bytes on a character
    /// boundary. Codes that may not be sent (1005, 1006, …) give an empty payload.
    public static func closePayload(_ close: WebSocketClose) -> [UInt8] {
        guard close.code.isValidOnWire else { return [] }
        var reason = Array(close.reason.utf8)
        if reason.count > 123 {
            var cut = 123
            // Back up to the start of a UTF-8 sequence.
            while cut > 0 && reason[cut] & 0xC0 == 0x80 { cut -= 1 }
            reason = Array(reason[..<cut])
        }
        return [UInt8(close.code.rawValue >> 8), UInt8(close.code.rawValue & 0xFF)] + reason
    }
}
