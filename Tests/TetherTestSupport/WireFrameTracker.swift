/// Follows the server→client bytes of one connection and says where its frames end, so the
/// fault proxy can cut, stall or inject at exact places without understanding the backend.
///
/// It knows the framings Tether reads: an HTTP response head (`\r\n\r\n`), then a body that is
/// chunked (`Transfer-Encoding: chunked`, as the simulators and real servers send SSE) or raw;
/// inside it SSE events (a blank line), JSON lines (`\n`) or WebSocket frames (RFC 6455 headers,
/// server frames unmasked). A raw TCP line protocol has no head.
struct WireFrameTracker {
    enum Framing: Sendable, Equatable {
        /// HTTP response, then SSE events.
        case sse
        /// Newline-delimited lines straight on the socket (CodexMonitor).
        case lines
        /// HTTP 101 response, then WebSocket frames.
        case webSocket
    }

    /// What one byte completed.
    enum Mark: Equatable {
        /// The response head ended (the body starts after this byte).
        case headEnd
        /// A frame ended with this byte (its chunk may still have bytes to come: see `atInjectionPoint`).
        case frameEnd
    }

    let framing: Framing
    private(set) var chunked = false
    private(set) var frames = 0

    private enum Phase {
        case head
        case body
        case chunkSize
        case chunkExtension
        case chunkSizeLF
        case chunkData(remaining: Int)
        case chunkDataCR
        case chunkDataLF
    }

    private var phase: Phase
    private var head: [UInt8] = []
    private var chunkSize = 0
    private var sizeDigits = 0
    // SSE: consecutive line ends seen (CR ignored).
    private var newlines = 0
    // Lines and SSE: a content byte arrived since the last frame ended.
    private var midFrame = false
    // WebSocket frame parser.
    private var wsHeader: [UInt8] = []
    private var wsRemaining = 0

    init(framing: Framing) {
        self.framing = framing
        phase = framing == .lines ? .body : .head
    }

    /// Whether the next byte starts a frame that can be written whole (no frame or chunk half done).
    var atInjectionPoint: Bool {
        switch phase {
        case .head: return false
        case .body: return contentAtBoundary
        case .chunkSize: return sizeDigits == 0 && contentAtBoundary
        default: return false
        }
    }

    private var contentAtBoundary: Bool {
        switch framing {
        case .sse, .lines: return !midFrame
        case .webSocket: return wsHeader.isEmpty && wsRemaining == 0
        }
    }

    /// Feeds one byte; returns what it completed, if anything.
    mutating func feed(_ byte: UInt8) -> Mark? {
        switch phase {
        case .head:
            head.append(byte)
            guard head.count >= 4, head.suffix(4).elementsEqual([13, 10, 13, 10]) else { return nil }
            let text = String(decoding: head, as: UTF8.self).lowercased()
            chunked = text.contains("transfer-encoding: chunked")
            head = []
            phase = chunked ? .chunkSize : .body
            return .headEnd
        case .body:
            return content(byte) ? .frameEnd : nil
        case .chunkSize:
            if let digit = Self.hexValue(byte) {
                chunkSize = chunkSize * 16 + digit
                sizeDigits += 1
            } else if byte == 13 {
                phase = .chunkSizeLF
            } else {
                phase = .chunkExtension
            }
            return nil
        case .chunkExtension:
            if byte == 13 { phase = .chunkSizeLF }
            return nil
        case .chunkSizeLF:
            phase = chunkSize == 0 ? .chunkDataCR : .chunkData(remaining: chunkSize)
            return nil
        case .chunkData(let remaining):
            phase = remaining > 1 ? .chunkData(remaining: remaining - 1) : .chunkDataCR
            return content(byte) ? .frameEnd : nil
        case .chunkDataCR:
            phase = .chunkDataLF
            return nil
        case .chunkDataLF:
            chunkSize = 0
            sizeDigits = 0
            phase = .chunkSize
            return nil
        }
    }

    /// Feeds one content (decoded body) byte; returns true when it ended a frame.
    private mutating func content(_ byte: UInt8) -> Bool {
        switch framing {
        case .sse:
            if byte == 13 { return false }
            if byte == 10 {
                newlines += 1
                if newlines == 2 {
                    frames += 1
                    midFrame = false
                    return true
                }
                midFrame = midFrame || newlines < 2
                return false
            }
            newlines = 0
            midFrame = true
            return false
        case .lines:
            if byte == 10 {
                newlines = 1
                frames += 1
                midFrame = false
                return true
            }
            newlines = 0
            midFrame = true
            return false
        case .webSocket:
            if wsRemaining > 0 {
                wsRemaining -= 1
                if wsRemaining == 0 {
                    frames += 1
                    return true
                }
                return false
            }
            wsHeader.append(byte)
            guard wsHeader.count >= 2 else { return false }
            let length7 = Int(wsHeader[1] & 0x7F)
            let masked = wsHeader[1] & 0x80 != 0
            let extended = length7 == 126 ? 2 : length7 == 127 ? 8 : 0
            let headerLength = 2 + extended + (masked ? 4 : 0)
            guard wsHeader.count == headerLength else { return false }
            var length = length7
            if extended > 0 {
                length = wsHeader[2..<(2 + extended)].reduce(0) { $0 << 8 | Int($1) }
            }
            wsHeader = []
            if length == 0 {
                frames += 1
                return true
            }
            wsRemaining = length
            return false
        }
    }

    /// `content` as it must go on this connection's wire: one chunk when the body is chunked.
    func wrap(_ content: [UInt8]) -> [UInt8] {
        guard chunked else { return content }
        return Array(String(content.count, radix: 16).utf8) + [13, 10] + content + [13, 10]
    }

    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case 0x30...0x39: return Int(byte - 0x30)
        case 0x41...0x46: return Int(byte - 0x41 + 10)
        case 0x61...0x66: return Int(byte - 0x61 + 10)
        default: return nil
        }
    }
}

extension WireFrameTracker.Framing {
    /// One whole frame carrying `payload` in this framing (before any chunk wrapping).
    func frame(_ payload: [UInt8]) -> [UInt8] {
        switch self {
        case .sse: return payload + [10, 10]
        case .lines: return payload + [10]
        case .webSocket:
            var frame: [UInt8] = [0x81]
            if payload.count < 126 {
                frame.append(UInt8(payload.count))
            } else if payload.count <= 0xFFFF {
                frame += [126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
            } else {
                frame.append(127)
                frame += (0..<8).reversed().map { UInt8((payload.count >> ($0 * 8)) & 0xFF) }
            }
            return frame + payload
        }
    }
}
