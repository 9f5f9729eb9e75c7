import Testing
@testable import TetherCore

@Suite struct EventCodecTests {
    @Test func writesTheEnvelopeInTheDocumentedOrder() {
        var codec = EventCodec()
        var event = Event.partDelta(session: "ses_1", turn: "msg_1", part: "prt_1", kind: .text, delta: "I'll run ",
                                    cursor: "job_1:13")
        event.ts = 1_795_311_231_409
        event.profile = "home"
        event.backend = .codexWorker
        let line = String(decoding: codec.encode(event), as: UTF8.self)
        #expect(line == #"{"v":1,"type":"part.delta","ts":"2026-11-22T01:33:51.409Z","profile":"home","backend":"codex-worker","session":"ses_1","turn":"msg_1","part":"prt_1","cursor":"job_1:13","data":{"kind":"text","field":"text","delta":"I'll run "}}"# + "\n")
    }

    @Test func omitsAbsentIdsAndRawUnlessAsked() {
        var plain = EventCodec()
        var event = Event.connection(.connected)
        event.raw = ["x": 1]
        let line = String(decoding: plain.encode(event), as: UTF8.self)
        #expect(!line.contains("\"session\""))
        #expect(!line.contains("\"raw\""))
        var raw = EventCodec(includeRaw: true)
        #expect(String(decoding: raw.encode(event), as: UTF8.self).contains(#","raw":{"x":1}}"#))
    }

    @Test func everyLineIsOneLine() {
        var codec = EventCodec()
        let event = Event.partDelta(session: "s", turn: "t", part: "p", kind: .text, delta: "a\nb\r\nc\u{2028}")
        let bytes = codec.encode(event)
        #expect(bytes.filter { $0 == 0x0A }.count == 1)
        #expect(bytes.last == 0x0A)
    }

    /// A codec reuses the bytes of what repeats from line to line (a type's opening at one
    /// time, profile and backend; the session; the turn): every line of a long run must be what
    /// a fresh codec writes for it alone, including ids equal as Strings but not as bytes.
    @Test func aReusedCodecWritesWhatAFreshOneWrites() {
        let precomposed = "ses_caf\u{E9}"
        let decomposed = "ses_cafe\u{301}"
        #expect(precomposed == decomposed)  // what makes byte equality matter
        let sessions: [String?] = ["ses_1", "ses_1", nil, precomposed, decomposed, "ses_\"q\"", "ses_1"]
        let turns: [String?] = ["msg_1", nil, "msg_1", "msg_2"]
        let profiles: [String?] = ["home", "home", nil, "h\u{F6}me", "ho\u{308}me"]
        var events: [Event] = []
        for index in 0..<120 {
            let types: [EventType] = [.partStarted, .partDelta, .turnStarted, .error]
            var event = Event(types[index % types.count], session: sessions[index % sessions.count],
                              turn: turns[index % turns.count], part: index % 3 == 0 ? nil : "prt_\(index / 2)",
                              cursor: index % 5 == 0 ? "c\(index)" : nil, data: ["n": .int(Int64(index))],
                              ts: 1_795_311_231_409 + Double(index / 7))
            event.profile = profiles[index % profiles.count]
            event.backend = index % 11 == 0 ? .codexWorker : (index % 13 == 0 ? nil : .openCode)
            events.append(event)
        }
        var reused = EventCodec()
        var lines: [UInt8] = []
        lines = reused.encodeLines(events, profile: "fallback", backend: .codexMonitor)
        var fresh: [UInt8] = []
        for event in events {
            var codec = EventCodec()
            fresh += codec.encodeLines([event], profile: "fallback", backend: .codexMonitor)
        }
        expectSameLines(lines, fresh)
        // And one at a time through the same codec.
        var oneByOne: [UInt8] = []
        for event in events { oneByOne += reused.encode(event) }
        var freshAlone: [UInt8] = []
        for event in events {
            var codec = EventCodec()
            freshAlone += codec.encode(event)
        }
        expectSameLines(oneByOne, freshAlone)
    }

    /// Byte equality, line by line, showing the first line that differs with its non-ASCII
    /// scalars spelled out (String `==` would call canonically equal lines the same).
    private func expectSameLines(_ actual: [UInt8], _ expected: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        let actualLines = actual.split(separator: 0x0A, omittingEmptySubsequences: false)
        let expectedLines = expected.split(separator: 0x0A, omittingEmptySubsequences: false)
        #expect(actualLines.count == expectedLines.count, sourceLocation: sourceLocation)
        func spelled(_ line: ArraySlice<UInt8>) -> String {
            String(decoding: line, as: UTF8.self).unicodeScalars
                .map { $0.isASCII ? String($0) : "\\u{\(String($0.value, radix: 16))}" }.joined()
        }
        for (index, (got, want)) in zip(actualLines, expectedLines).enumerated() where !got.elementsEqual(want) {
            Issue.record("line \(index + 1) differs:\n  got  \(spelled(got))\n  want \(spelled(want))", sourceLocation: sourceLocation)
            return
        }
    }

    @Test(arguments: EventType.allCases)
    func roundTripsEveryType(type: EventType) throws {
        var codec = EventCodec(includeRaw: true)
        var event = Event(type, session: "s", turn: "t", part: "p", cursor: "c", data: ["k": "v", "n": 2], raw: ["r": true],
                          ts: 1_700_000_000_123)
        event.profile = "p1"
        event.backend = .openCode
        let line = String(decoding: codec.encode(event).dropLast(), as: UTF8.self)
        #expect(try EventCodec.decode(line) == event)
    }

    @Test(arguments: [
        (0.0, "1970-01-01T00:00:00.000Z"), (951_782_400_000, "2000-02-29T00:00:00.000Z"),
        (1_795_311_231_409, "2026-11-22T01:33:51.409Z"), (4_102_444_799_999, "2099-12-31T23:59:59.999Z"),
        (-1, "1969-12-31T23:59:59.999Z"),
    ])
    func formatsTimestampsInUTCWithMilliseconds(milliseconds: Double, text: String) {
        #expect(EventCodec.timestamp(milliseconds: milliseconds) == text)
        #expect(EventCodec.parseTimestamp(text) == milliseconds)
    }

    /// Fuzzing found a trap: a fraction of 19+ digits overflowed. Only the first three count.
    @Test(arguments: [
        ("2026-11-22T01:33:51.4Z", 1_795_311_231_400.0), ("2026-11-22T01:33:51.40912Z", 1_795_311_231_409.0),
        ("2026-11-22T01:33:51.409123456789012345678901234567890Z", 1_795_311_231_409.0),
    ])
    func parsesAnyNumberOfFractionDigits(text: String, milliseconds: Double) {
        #expect(EventCodec.parseTimestamp(text) == milliseconds)
    }

    @Test(arguments: ["2026-11-22T01:33:51.Z", "2026-11-22T01:33:51.4x9Z", "2026-11-22T01:33:51,409Z"])
    func rejectsMalformedFractions(text: String) {
        #expect(EventCodec.parseTimestamp(text) == nil)
    }

    @Test(arguments: ["", "{}", "[1]", #"{"v":2,"type":"error","ts":"2026-11-22T01:33:51.409Z"}"#,
                      #"{"v":1,"type":"nope","ts":"2026-11-22T01:33:51.409Z"}"#, #"{"v":1,"type":"error","ts":"yesterday"}"#])
    func rejectsLinesThatAreNotV1Events(line: String) {
        #expect(throws: EventCodec.DecodingError.self) { try EventCodec.decode(line) }
    }
}
