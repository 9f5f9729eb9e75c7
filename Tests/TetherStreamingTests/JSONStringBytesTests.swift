import Testing
import TetherTestSupport
@testable import TetherStreaming

/// The word-at-a-time search for the end of a plain run finds what a byte-by-byte search finds:
/// at every length, start and offset, in the last few bytes too, with a byte on either side of
/// each edge of what it looks for.
@Suite struct JSONStringBytesTests {
    static func naive(_ bytes: [UInt8], from start: Int, asciiOnly: Bool) -> Int {
        bytes[start...].firstIndex { $0 == 0x22 || $0 == 0x5C || $0 < 0x20 || (asciiOnly && $0 >= 0x80) } ?? bytes.count
    }

    @Test func findsTheFirstByteThatNeedsAttentionAnywhere() {
        let special: [UInt8] = [0x22, 0x5C, 0x00, 0x01, 0x1F, 0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7F, 0x80, 0xC3, 0xFF]
        for length in 0...24 {
            for offset in 0..<Swift.max(length, 1) {
                for byte in special {
                    var bytes = [UInt8](repeating: UInt8(ascii: "x"), count: length)
                    if offset < length { bytes[offset] = byte }
                    if length > 2 { bytes[length - 1] = special[(offset + Int(byte)) % special.count] }  // a second one after
                    for start in 0...length {
                        for asciiOnly in [false, true] {
                            let found = bytes.withUnsafeBufferPointer {
                                JSONStringBytes.endOfPlainRun($0, from: start, asciiOnly: asciiOnly)
                            }
                            #expect(found == Self.naive(bytes, from: start, asciiOnly: asciiOnly),
                                    "length \(length), byte \(byte) at \(offset), from \(start), asciiOnly \(asciiOnly)")
                        }
                    }
                }
            }
        }
    }

    @Test func randomRunsAgree() {
        var random = SeededRandom(seed: 99)
        for _ in 0..<5_000 {
            let bytes = (0..<Int(random.next() % 40)).map { _ in
                random.next() % 5 == 0 ? UInt8(truncatingIfNeeded: random.next()) : UInt8(ascii: "a")
            }
            let start = bytes.isEmpty ? 0 : Int(random.next() % UInt64(bytes.count + 1))
            for asciiOnly in [false, true] {
                let found = bytes.withUnsafeBufferPointer { JSONStringBytes.endOfPlainRun($0, from: start, asciiOnly: asciiOnly) }
                #expect(found == Self.naive(bytes, from: start, asciiOnly: asciiOnly))
            }
        }
    }
}
