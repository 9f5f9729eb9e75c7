/// RFC 6455 frames, messages and close codes, shared by the codec and the connection.
///
/// Tether frames WebSockets itself, over libcurl's raw byte stream (`CURLOPT_CONNECT_ONLY`):
/// Debian 12's libcurl 7.88 is built without its experimental `ws://` support, and a whole
/// WebSocket library (SwiftNIO's) would cost minutes of build for one small JSON relay.
public enum WebSocketOpcode: UInt8, Sendable, Hashable {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    /// Control frames (close, ping, pong) may not be fragmented and carry at most 125 bytes.
    public var isControl: Bool { rawValue & 0x8 != 0 }
}

/// A close status code (RFC 6455 §7.4).
public struct WebSocketCloseCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }

    public static let normalClosure = WebSocketCloseCode(1000)
    public static let goingAway = WebSocketCloseCode(1001)
    public static let protocolError = WebSocketCloseCode(1002)
    public static let unsupportedData = WebSocketCloseCode(1003)
    /// Reported when a close frame carries no code; never sent.
    public static let noStatusReceived = WebSocketCloseCode(1005)
    /// Reported when the connection ended without a close frame; never sent.
    public static let abnormalClosure = WebSocketCloseCode(1006)
    public static let invalidPayload = WebSocketCloseCode(1007)
    public static let policyViolation = WebSocketCloseCode(1008)
    public static let messageTooBig = WebSocketCloseCode(1009)
    public static let mandatoryExtension = WebSocketCloseCode(1010)
    public static let internalError = WebSocketCloseCode(1011)

    /// Whether the code may appear in a close frame: 1000–1003, 1007–1014 (1012–1014 are
    /// IANA-registered since the RFC), and 3000–4999 (libraries, applications).
    public var isValidOnWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: return true
        default: return false
        }
    }

    /// A close that ends a connection the way both sides meant to: normal, going away, or no code.
    public var isOrderly: Bool { self == .normalClosure || self == .goingAway || self == .noStatusReceived }

    public var description: String { String(rawValue) }
}

/// The close status one side sent: its code (1005 when the frame had none) and reason.
public struct WebSocketClose: Sendable, Hashable, CustomStringConvertible {
    public var code: WebSocketCloseCode
    public var reason: String

    public init(code: WebSocketCloseCode, reason: String = "") {
        self.code = code
        self.reason = reason
    }

    public var description: String { reason.isEmpty ? "\(code)" : "\(code) (\(reason))" }
}

/// A whole data message, reassembled from its fragments.
public enum WebSocketMessage: Sendable, Hashable {
    case text(String)
    case binary([UInt8])

    public var byteCount: Int {
        switch self {
        case .text(let text): return text.utf8.count
        case .binary(let bytes): return bytes.count
        }
    }
}

/// The 4-byte key a client XORs over each frame's payload (RFC 6455 §5.3).
public struct WebSocketMask: Sendable, Hashable {
    public var bytes: (UInt8, UInt8, UInt8, UInt8)

    public init(_ b0: UInt8, _ b1: UInt8, _ b2: UInt8, _ b3: UInt8) { bytes = (b0, b1, b2, b3) }

    /// A fresh key from `generator` (the RFC asks for an unpredictable one per frame).
    public static func random(using generator: inout some RandomNumberGenerator) -> WebSocketMask {
        let value = UInt32.random(in: .min ... .max, using: &generator)
        return WebSocketMask(UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF))
    }

    public static func random() -> WebSocketMask {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    var array: [UInt8] { [bytes.0, bytes.1, bytes.2, bytes.3] }

    public static func == (lhs: WebSocketMask, rhs: WebSocketMask) -> Bool { lhs.array == rhs.array }
    public func hash(into hasher: inout Hasher) { hasher.combine(array) }

    /// XORs the key over `payload` in place; masking twice unmasks. `offset` is where `payload`
    /// starts within the frame's payload.
    func apply(to payload: inout [UInt8], offset: Int = 0) {
        let key = array
        payload.withUnsafeMutableBufferPointer { buffer in
            for index in buffer.indices { buffer[index] ^= key[(index + offset) & 3] }
        }
    }
}
