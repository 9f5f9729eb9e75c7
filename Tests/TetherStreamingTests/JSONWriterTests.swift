import Testing
import TetherTestSupport
import TetherStreaming

/// Bytes written as a JSON string straight from UTF-8 read exactly as the String path writes them.
@Suite struct JSONWriterTests {
    @Test(arguments: ["", "plain", "quote\" back\\ nl\n cr\r tab\t ctl\u{01}\u{1F}", "é中😀", "{\"a\":[1,\"x\"]}"])
    func bytesAndStringsWriteAlike(text: String) {
        #expect(Self.written(utf8: Array(text.utf8)) == Self.written(text))
    }

    /// Invalid UTF-8 becomes U+FFFD, as String(decoding:) makes it; random bytes never differ.
    @Test func randomBytesWriteAsTheirDecodedString() {
        var random = SeededRandom(seed: 11)
        for _ in 0..<3_000 {
            let bytes = (0..<Int(random.next() % 24)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            #expect(Self.written(utf8: bytes) == Self.written(String(decoding: bytes, as: UTF8.self)))
        }
        #expect(Self.written(utf8: [0x61, 0xFF, 0x62]) == "\"a\u{FFFD}b\"")
    }

    /// Mostly plain ASCII with the bytes that need attention at every offset of the eight-byte
    /// scan: each is found wherever it falls, and the String path agrees.
    @Test func escapesAreFoundAtEveryOffset() throws {
        let alphabet: [UInt8] = Array("abcdefgh".utf8) + [0x22, 0x5C, 0x0A, 0x01, 0x1F, 0x20, 0x7F, 0xC3, 0xA9]
        var random = SeededRandom(seed: 23)
        for _ in 0..<3_000 {
            let bytes = (0..<Int(random.next() % 70)).map { _ in
                random.next() % 6 == 0 ? alphabet[Int(random.next() % UInt64(alphabet.count))] : UInt8(ascii: "x")
            }
            let expected = Self.written(String(decoding: bytes, as: UTF8.self))
            #expect(Self.written(utf8: bytes) == expected)
            #expect(try JSONParser.parse(expected) == .string(String(decoding: bytes, as: UTF8.self)))
        }
    }

    @Test func controlCharactersAreEscapedAsJSONRequires() {
        #expect(Self.written(utf8: Array("a\u{0}\u{7}\"".utf8)) == #""a\u0000\u0007\"""#)
    }

    /// The buffer keeps its room ahead of what was written: a writer that starts small, grows
    /// many times over and starts over writes exactly what a fresh one writes, and what was
    /// written before a mark reads back from it.
    @Test func aReusedWriterGrowsAndStartsOverCleanly() {
        var random = SeededRandom(seed: 5)
        var reused = JSONWriter(reservingCapacity: 1)
        for round in 0..<200 {
            let value = JSONValue.object(JSONObject((0..<Int(random.next() % 40)).map { index in
                (key: "k\(index)\"", value: .string(String(repeating: "é\n", count: Int(random.next() % 50))))
            }))
            var fresh = JSONWriter()
            fresh.write(value)
            if round % 3 != 0 { reused.reset() }
            let mark = reused.count
            reused.write(value)
            #expect(reused.bytes(from: mark) == fresh.bytes)
            #expect(reused.withUnsafeBytes { Array($0[mark...]) } == fresh.bytes)
            #expect(reused.count == mark + fresh.count)
        }
        reused.reset()
        #expect(reused.isEmpty && reused.bytes.isEmpty)
    }

    /// Short pieces are copied a word at a time, overlapping; longer ones by `memmove`. Every
    /// length on either side of each size class, written after every small misalignment, reads
    /// back byte for byte, and nothing before it moves.
    @Test func piecesOfEveryLengthAreCopiedWhole() {
        for length in 0...80 {
            let piece = (0..<length).map { UInt8(ascii: "a") + UInt8($0 % 26) }
            for lead in 0..<10 {
                let prefix = [UInt8](repeating: UInt8(ascii: "-"), count: lead)
                var writer = JSONWriter(reservingCapacity: 1)
                writer.writeRaw(prefix)
                writer.writeRaw(piece)
                piece.withUnsafeBufferPointer { writer.writeRaw($0) }
                writer.writeString(String(decoding: piece, as: UTF8.self))
                piece.withUnsafeBytes { writer.writeString(utf8: $0) }
                let quoted = [UInt8(ascii: "\"")] + piece + [UInt8(ascii: "\"")]
                #expect(writer.bytes == prefix + piece + piece + quoted + quoted, "length \(length), after \(lead)")
            }
        }
    }

    /// A writer is a value: a copy shares the memory until one of them writes, and then each
    /// has its own bytes, whichever writes first, after a reset too, and however far either grows.
    @Test func aCopyKeepsItsBytesWhenEitherWrites() {
        var first = JSONWriter(reservingCapacity: 1)
        first.writeRaw("abc" as StaticString)
        var second = first
        second.writeString("x")
        first.write(.array([1, 2]))
        #expect(String(decoding: first.bytes, as: UTF8.self) == "abc[1,2]")
        #expect(String(decoding: second.bytes, as: UTF8.self) == "abc\"x\"")
        let kept = second
        second.reset()
        second.writeRaw([UInt8](repeating: UInt8(ascii: "z"), count: 300))
        #expect(String(decoding: kept.bytes, as: UTF8.self) == "abc\"x\"")
        #expect(second.bytes == [UInt8](repeating: UInt8(ascii: "z"), count: 300))
        #expect(kept.withUnsafeBytes { Array($0) } == Array("abc\"x\"".utf8))
    }

    static func written(_ text: String) -> String {
        var writer = JSONWriter()
        writer.writeString(text)
        return String(decoding: writer.bytes, as: UTF8.self)
    }

    static func written(utf8 bytes: [UInt8]) -> String {
        var writer = JSONWriter()
        bytes.withUnsafeBytes { writer.writeString(utf8: $0) }
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}

/// Event data leaves out what does not apply.
@Suite struct JSONObjectCompactTests {
    @Test func nullsAreLeftOutAndTheRestKeepsItsOrder() {
        let object = JSONObject.compact(["a": 1, "gone": .null, "b": "x", "also": JSONValue(nil as String?), "c": false])
        #expect(object.keys == ["a", "b", "c"])
        #expect(object == ["a": 1, "b": "x", "c": false])
        #expect(JSONObject.compact(["only": .null]).isEmpty)
    }
}
