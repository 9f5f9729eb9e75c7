import Testing
import TetherTestSupport
@testable import TetherStreaming

@Suite struct JSONParserTests {
    @Test(arguments: [
        ("null", JSONValue.null), ("true", .bool(true)), ("false", .bool(false)), ("0", .int(0)), ("-12", .int(-12)),
        ("1.5", .double(1.5)), ("1e3", .double(1000)), ("-0.25E-2", .double(-0.0025)), ("\"\"", .string("")),
        ("\"a\\\"b\\\\c\\/d\\n\\t\"", .string("a\"b\\c/d\n\t")), ("\"\\u00e9\\u4e2d\"", .string("é中")),
        ("\"\\ud83d\\ude00\"", .string("😀")), ("\"\\ud83d\"", .string("\u{FFFD}")), ("[]", .array([])),
        ("[1,[2,[3]]]", .array([.int(1), .array([.int(2), .array([.int(3)])])])), ("{}", .object([:])),
        (" { \"a\" : 1 , \"b\" : [ true ] } ", .object(["a": .int(1), "b": .array([.bool(true)])])),
        ("9223372036854775807", .int(Int64.max)), ("92233720368547758070", .double(9.2233720368547758e19)),
        ("-9223372036854775808", .int(Int64.min)), ("9223372036854775808", .double(9.223372036854775808e18)),
        ("-9223372036854775809", .double(-9.223372036854775809e18)), ("-0", .int(0)), ("120", .int(120)),
        ("[{\"a\":[1,{\"b\":[]}],\"c\":{}},[2]]", .array([.object(["a": .array([.int(1), .object(["b": .array([])])]), "c": .object([:])]),
                                                .array([.int(2)])])),
        ("\"żółw 🐢\"", .string("żółw 🐢")),
    ])
    func parsesValidJSON(text: String, expected: JSONValue) throws {
        #expect(try JSONParser.parse(text) == expected)
    }

    @Test(arguments: [
        "", " ", "{", "}", "[", "[1,]", "{\"a\":}", "{\"a\" 1}", "{a:1}", "01", "1.", ".5", "-", "1e", "+1", "tru", "nul",
        "\"abc", "\"\\x\"", "\"\\u12\"", "\"\\u12G4\"", "\"a\nb\"", "[1 2]", "{\"a\":1,}", "1 2", "NaN", "'a'",
        "{\"a\":1}}", "[\"\\", "\u{FEFF}{}",
    ])
    func rejectsMalformedJSONWithAnOffset(text: String) {
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse(text) }
    }

    @Test func reportsWhereItFailed() {
        do {
            _ = try JSONParser.parse("{\"a\": [1, 2, x]}")
            Issue.record("should have failed")
        } catch {
            #expect(error.offset == 13)
        }
    }

    @Test func boundsNestingDepth() {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse(deep) }
        let fine = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect((try? JSONParser.parse(fine)) != nil)
    }

    @Test func keepsObjectKeyOrder() throws {
        let value = try JSONParser.parse("{\"z\":1,\"a\":2,\"m\":3}")
        #expect(value.object?.keys == ["z", "a", "m"])
    }

    @Test func roundTripsThroughTheWriter() throws {
        let text = "{\"s\":\"line\\nquote\\\"back\\\\slash\\u0001é\",\"n\":-3,\"d\":0.5,\"a\":[null,true,false],\"o\":{}}"
        let value = try JSONParser.parse(text)
        #expect(value.serialized == text)
        #expect(try JSONParser.parse(value.serialized) == value)
    }

    /// Random bytes and random truncations of valid documents: always an error or a value, never a crash.
    /// Plain runs are searched eight bytes at a time: an escape, a quote or a control character
    /// is found wherever it falls in a word, and the scanner's skip agrees with the parser.
    @Test func stringsAreReadRightWhateverTheOffsetOfWhatEndsARun() throws {
        for before in 0..<20 {
            for after in [0, 1, 7, 8, 9, 17] {
                let head = String(repeating: "a", count: before), tail = String(repeating: "b", count: after)
                let text = "[\"" + head + "\\n\\\"" + tail + "\",\"" + head + "\"]"
                #expect(try JSONParser.parse(text) == [.string(head + "\n\"" + tail), .string(head)])
                #expect(throws: Never.self) { try JSONScanner.scan(Array(text.utf8)) { scanner throws(JSONScanner.Error) in try scanner.skip() } }
                let control = "\"" + head + "\u{01}" + tail + "\""
                #expect(throws: JSONParser.Error.self) { try JSONParser.parse(control) }
                #expect(throws: JSONParser.Error.self) { try JSONScanner.scan(Array(control.utf8)) { scanner throws(JSONScanner.Error) in try scanner.skip() } }
                let unterminated = "\"" + head + tail
                #expect(throws: JSONParser.Error.self) { try JSONParser.parse(unterminated) }
                #expect(throws: JSONParser.Error.self) { try JSONScanner.scan(Array(unterminated.utf8)) { scanner throws(JSONScanner.Error) in try scanner.skip() } }
            }
        }
    }

    @Test func survivesGarbageAndTruncation() {
        var random = SeededRandom(seed: 42)
        let valid = Array("{\"a\":[1,2.5,\"x\\u00e9\",{\"b\":null,\"c\":[true,false]}],\"d\":\"\\ud83d\\ude00\"}".utf8)
        for _ in 0..<5_000 {
            let length = Int(random.next() % 64)
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            _ = try? JSONParser.parse(bytes)
        }
        for cut in 0..<valid.count {
            #expect(throws: JSONParser.Error.self) { try JSONParser.parse(Array(valid[..<cut])) }
        }
        for _ in 0..<5_000 {
            var mutated = valid
            mutated[Int(random.next() % UInt64(valid.count))] = UInt8(truncatingIfNeeded: random.next())
            _ = try? JSONParser.parse(mutated)
        }
    }
}

/// A stream's table of recent long strings: the same values as without it, one shared copy.
@Suite struct JSONStringTableTests {
    static let frame = #"{"type":"message.part.updated","session":"ses_d26e6ba000ffWLv9XPCaXTwQk2","short":"tiny","k":["ses_d26e6ba000ffWLv9XPCaXTwQk2"]}"#

    @Test func valuesAreTheSameWithAndWithoutATable() throws {
        let table = JSONStringTable(slots: 4)
        for _ in 0..<3 {
            #expect(try JSONParser.parse(Array(Self.frame.utf8), strings: table) == JSONParser.parse(Self.frame))
        }
    }

    @Test func aRepeatedLongStringIsOneSharedCopy() throws {
        let table = JSONStringTable()
        let first = try JSONParser.parse(Array(Self.frame.utf8), strings: table)
        let second = try JSONParser.parse(Array(Self.frame.utf8), strings: table)
        #expect(Self.storage(first["session"]?.string) != nil)
        #expect(Self.storage(first["session"]?.string) == Self.storage(second["session"]?.string))
        #expect(Self.storage(first["session"]?.string) == Self.storage(second["k"]?[0]?.string))
        // Without the table, each parse makes its own.
        let third = try JSONParser.parse(Self.frame)
        #expect(Self.storage(third["session"]?.string) != Self.storage(first["session"]?.string))
    }

    /// A new batch shares nothing with the last: its strings are copies of their own, so the
    /// events of two batches (on two cores) never hold one string between them.
    @Test func aNewBatchMakesItsOwnCopies() throws {
        let table = JSONStringTable()
        let first = try JSONParser.parse(Array(Self.frame.utf8), strings: table)
        table.startBatch()
        let second = try JSONParser.parse(Array(Self.frame.utf8), strings: table)
        let third = try JSONParser.parse(Array(Self.frame.utf8), strings: table)
        #expect(first == second)
        #expect(Self.storage(second["session"]?.string) != nil)
        #expect(Self.storage(first["session"]?.string) != Self.storage(second["session"]?.string))
        #expect(Self.storage(second["session"]?.string) == Self.storage(third["session"]?.string))
    }

    /// A word of the vocabulary reads back as the literal itself, in every batch: no copy of
    /// its own, so no reference count for two cores to share.
    @Test func aVocabularyWordIsTheLiteralInEveryBatch() throws {
        let word = "message.part.updated"
        // Words the table does not share (inline, or too long) are left out, harmlessly.
        let table = JSONStringTable(vocabulary: [word, "short", String(repeating: "x", count: 200)])
        var previous: JSONValue?
        for _ in 0..<3 {
            let parsed = try JSONParser.parse(Array(Self.frame.utf8), strings: table)
            #expect(try parsed == JSONParser.parse(Self.frame))
            #expect(Self.storage(parsed["type"]?.string) == Self.storage(word))
            // An id is still a copy of the batch's own, not the last batch's.
            if let previous { #expect(Self.storage(parsed["session"]?.string) != Self.storage(previous["session"]?.string)) }
            previous = parsed
            table.startBatch()
        }
        // Without the word in its vocabulary, a table makes a copy.
        let plain = try JSONParser.parse(Array(Self.frame.utf8), strings: JSONStringTable())
        #expect(Self.storage(plain["type"]?.string) != Self.storage(word))
    }

    /// Ids that differ only in their last characters (a thread's and its turn's, numbered alike;
    /// parts numbered in order) each keep a slot: a stream that names them in turn shares each.
    @Test func idsThatDifferOnlyAtTheEndAreSharedSideBySide() throws {
        let table = JSONStringTable()
        let ids = (1...4).map { "019a0000-f100-7000-8000-00000000000\($0)" } + ["prt_d26e6ba000ffWLv9XPCaXTw01", "prt_d26e6ba000ffWLv9XPCaXTw02"]
        let line = Array("[\(ids.map { "\"\($0)\"" }.joined(separator: ","))]".utf8)
        let first = try JSONParser.parse(line, strings: table)
        let second = try JSONParser.parse(line, strings: table)
        for index in ids.indices {
            #expect(first[index]?.string == ids[index])
            #expect(Self.storage(first[index]?.string) == Self.storage(second[index]?.string), "\(ids[index])")
        }
    }

    /// Strings that collide in a slot replace each other; each still reads back exactly.
    @Test func collisionsNeverMixStringsUp() throws {
        let table = JSONStringTable(slots: 2, vocabulary: ["aaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbb"])
        var random = SeededRandom(seed: 7)
        for round in 0..<2_000 {
            if round % 100 == 0 { table.startBatch() }  // the vocabulary back in its slots
            let length = 16 + Int(random.next() % 40)
            let text = String((0..<length).map { _ in Character(Unicode.Scalar(UInt8(97 + random.next() % 3))) })
            #expect(try JSONParser.parse(Array("\"\(text)\"".utf8), strings: table) == .string(text))
            let word = round % 2 == 0 ? "aaaaaaaaaaaaaaaaaaaa" : "aaaaaaaaaaaaaaaaaaab"
            #expect(try JSONParser.parse(Array("\"\(word)\"".utf8), strings: table) == .string(word))
        }
    }

    /// The address of a string's UTF-8 storage (nil for a small, inline string).
    static func storage(_ text: String?) -> UnsafeRawPointer? {
        guard var text, text.utf8.count > 15 else { return nil }
        return text.withUTF8 { UnsafeRawPointer($0.baseAddress) }
    }
}
