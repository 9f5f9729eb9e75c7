import Testing
@testable import TetherStreaming

@Suite struct JSONScannerTests {
    /// A walk that enters every object and reads every string, skipping the rest: the top-level
    /// keys in order, or the error.
    static func walk(_ text: String, enteringObjects: Bool = true) throws(JSONScanner.Error) -> [String] {
        func enter(_ scanner: inout JSONScanner) throws(JSONScanner.Error) {
            try scanner.enterObject()
            while try scanner.nextKey() != nil {
                switch scanner.kind {
                case .object where enteringObjects: try enter(&scanner)
                case .string: _ = try scanner.string()
                default: try scanner.skip()
                }
            }
        }
        return try JSONScanner.scan(Array(text.utf8)) { scanner throws(JSONScanner.Error) -> [String] in
            guard scanner.kind == .object else {
                try scanner.skip()
                return []
            }
            var keys: [String] = []
            try scanner.enterObject()
            while let key = try scanner.nextKey() {
                keys.append(key.string)
                if scanner.kind == .object, enteringObjects { try enter(&scanner) } else { try scanner.skip() }
            }
            return keys
        }
    }

    @Test func readsTheFieldsAskedForAndStepsOverTheRest() throws {
        let text = #" {"directory":"/w","project":{"id":[1,2,{"x":null}],"n":-1.5e3},"payload":{"type":"t","properties":{"a":"x\"y","b":true,"c":null}}} "#
        let read = try JSONScanner.scan(Array(text.utf8)) { scanner throws(JSONScanner.Error) -> (String?, String?, String?, Bool?, Bool) in
            var directory: String?, type: String?, a: String?, b: Bool?, cIsNull = false
            try scanner.enterObject()
            while let key = try scanner.nextKey() {
                if key == "directory" {
                    directory = try scanner.string()
                } else if key == "payload" {
                    try scanner.enterObject()
                    while let key = try scanner.nextKey() {
                        if key == "type" {
                            type = try scanner.string()
                        } else if key == "properties" {
                            try scanner.enterObject()
                            while let key = try scanner.nextKey() {
                                if key == "a" { a = try scanner.string() }
                                else if key == "b" { b = try scanner.bool() }
                                else if key == "c" { cIsNull = try scanner.skipIsNull() }
                            }
                        }
                    }
                }
                // `project` is never read: nextKey steps over it.
            }
            return (directory, type, a, b, cIsNull)
        }
        #expect(read.0 == "/w")
        #expect(read.1 == "t")
        #expect(read.2 == "x\"y")
        #expect(read.3 == true)
        #expect(read.4)
    }

    @Test func aValueOfAnotherKindReadsAsNilAndIsSteppedOver() throws {
        let read = try JSONScanner.scan(Array(#"{"a":{"b":"c"},"d":"e"}"#.utf8)) { scanner throws(JSONScanner.Error) -> [String?] in
            var strings: [String?] = []
            try scanner.enterObject()
            while try scanner.nextKey() != nil { strings.append(try scanner.string()) }
            return strings
        }
        #expect(read == [nil, "e"])
    }

    @Test func buildsAMemberWholeWhenAsked() throws {
        let value = try JSONScanner.scan(Array(#"{"skip":1,"keep":{"x":[1,"2"]}}"#.utf8)) { scanner throws(JSONScanner.Error) -> JSONValue? in
            var kept: JSONValue?
            try scanner.enterObject()
            while let key = try scanner.nextKey() {
                if key == "keep" { kept = try scanner.value() }
            }
            return kept
        }
        #expect(value == ["x": [1, "2"]])
    }

    @Test(arguments: [
        #"{"a":1}"#, #"{}"#, #"[1,{"a":2}]"#, #""s""#, "3", " { \"a\" : { \"b\" : [ ] } , \"c\" : \"d\" } ",
        #"{"a":{"b":{"c":{"d":"e"}}},"f":[{"g":{}}]}"#, #"{"\u0061":1,"b\"":2}"#,
        #"{"n":[0,-0,-0.0,1.5e3,2E-7,-9.25e+2,12345678901234567890123,1796544522255],"m":0}"#,
    ])
    func acceptsWhatTheParserAccepts(text: String) throws {
        let value = try JSONParser.parse(text)
        let keys = try Self.walk(text)
        if let object = value.object, !text.contains("\\") { #expect(keys == object.keys) }
        #expect(try Self.walk(text, enteringObjects: false).count == keys.count)
    }

    /// The parser's own malformed cases, and ones that hide in what a walk only steps over.
    @Test(arguments: [
        "", " ", "{", "}", "[", "[1,]", "{\"a\":}", "{\"a\" 1}", "{a:1}", "01", "1.", "-", "tru", "\"abc", "\"\\x\"",
        "\"\\u12G4\"", "\"a\nb\"", "[1 2]", "{\"a\":1,}", "1 2", "{\"a\":1}}", "\u{FEFF}{}",
        "{\"skipped\":[1,]}", "{\"skipped\":{\"x\":01}}", "{\"skipped\":\"\\q\"}", "{\"a\":1 \"b\":2}", "{\"a\":{\"b\":1}",
        "{\"a\":1}x", "{\"k\\x\":1}", "{\"a\":\"\u{01}\"}",
        "{\"skipped\":-}", "{\"skipped\":-01}", "{\"skipped\":1.e5}", "{\"skipped\":1e}", "{\"skipped\":1E+}",
        "{\"skipped\":.5}", "{\"skipped\":+1}", "{\"skipped\":1.5.2}", "{\"skipped\":[-0.0e-7,1x]}",
    ])
    func rejectsWhatTheParserRejects(text: String) {
        #expect(throws: JSONParser.Error.self) { try JSONParser.parse(text) }
        #expect(throws: JSONParser.Error.self) { try Self.walk(text) }
        #expect(throws: JSONParser.Error.self) { try Self.walk(text, enteringObjects: false) }
    }

    @Test func everyPrefixOfAFrameIsRejectedAndNoneCrashes() throws {
        let frame = #"{"directory":"/home/dev","payload":{"type":"message.part.updated","properties":{"part":{"id":"prt_1","time":{"start":1,"end":null},"text":"h\u00e9\"llo"},"delta":"x"}}}"#
        let bytes = Array(frame.utf8)
        #expect(throws: Never.self) { try Self.walk(frame) }
        for end in 0..<bytes.count {
            let prefix = String(decoding: bytes[..<end], as: UTF8.self)
            #expect(throws: JSONParser.Error.self) { try Self.walk(prefix) }
        }
    }

    @Test func escapedKeysAreFlaggedNotMatched() throws {
        let seen = try JSONScanner.scan(Array(#"{"\u0074ype":"x"}"#.utf8)) { scanner throws(JSONScanner.Error) -> (Bool, Bool) in
            try scanner.enterObject()
            let key = try scanner.nextKey()
            let matched = key.map { $0 == "type" } ?? false
            while try scanner.nextKey() != nil {}
            return (matched, scanner.sawEscapedKey)
        }
        #expect(seen == (false, true))
    }

    /// Keys are read in one pass up to their closing quote: a plain key of any length reads as
    /// itself, unflagged; an escape anywhere in one, on either side of an eight-byte word,
    /// flags it; a control character in one is an error.
    @Test func keysOfEveryLengthAndEscapeOffset() throws {
        func firstKey(_ text: String) throws -> (String, Bool) {
            try JSONScanner.scan(Array(text.utf8)) { scanner throws(JSONScanner.Error) -> (String, Bool) in
                try scanner.enterObject()
                let key = try scanner.nextKey()?.string ?? ""
                while try scanner.nextKey() != nil {}
                return (key, scanner.sawEscapedKey)
            }
        }
        for length in 0..<20 {
            let plain = String(repeating: "k", count: length)
            #expect(try firstKey("{\"\(plain)\":1,\"b\":2}") == (plain, false))
            for offset in 0...length {
                let escaped = String(plain.prefix(offset)) + #"\""# + String(plain.dropFirst(offset))
                #expect(try firstKey("{\"\(escaped)\":1}").1 == true)
                let control = String(plain.prefix(offset)) + "\u{01}" + String(plain.dropFirst(offset))
                #expect(throws: JSONParser.Error.self) { try firstKey("{\"\(control)\":1}") }
            }
        }
    }

    @Test func anAbandonedWalkIsNotCheckedFurther() throws {
        let text = #"{"type":"other","rest":[1,,,"#
        let type = try JSONScanner.scan(Array(text.utf8)) { scanner throws(JSONScanner.Error) -> String? in
            try scanner.enterObject()
            _ = try scanner.nextKey()
            let type = try scanner.string()
            scanner.abandon()
            return type
        }
        #expect(type == "other")
        #expect(throws: JSONParser.Error.self) { try Self.walk(text) }
    }

    @Test func objectsAreEnteredToALimitAndSkippedBeyondIt() throws {
        let deep = String(repeating: #"{"a":"#, count: 100) + "1" + String(repeating: "}", count: 100)
        #expect(throws: JSONParser.Error.self) { try Self.walk(deep) }  // entered: stops at the limit
        #expect(try Self.walk(deep, enteringObjects: false) == ["a"])  // skipped: the parser's depth
        let tooDeep = String(repeating: "[", count: 300) + String(repeating: "]", count: 300)
        #expect(throws: JSONParser.Error.self) { try Self.walk(tooDeep) }
    }
}
