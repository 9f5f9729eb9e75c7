import Testing
@testable import TetherNet

/// JSON-lines framing. Every table case is framed whole, byte by byte, and split in two at every
/// position, and all must agree.
@Suite("LineFramer")
struct LineFramerTests {
    typealias Output = LineFramer.Output

    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let input: [UInt8]
        let limit: Int
        let expected: [Output]
        let end: LineFramer.EndOfInput

        var testDescription: String { name }

        init(_ name: String, _ input: String, limit: Int = 64, _ expected: [Output], end: LineFramer.EndOfInput = .clean) {
            self.init(name, bytes: Array(input.utf8), limit: limit, expected, end: end)
        }

        init(_ name: String, bytes: [UInt8], limit: Int = 64, _ expected: [Output], end: LineFramer.EndOfInput = .clean) {
            self.name = name
            self.input = bytes
            self.limit = limit
            self.expected = expected
            self.end = end
        }
    }

    static func line(_ text: String) -> Output { .line(Array(text.utf8)) }

    static func frame(_ chunks: [ArraySlice<UInt8>], limit: Int) -> ([Output], LineFramer.EndOfInput) {
        var framer = LineFramer(maxLineLength: limit)
        var outputs: [Output] = []
        for chunk in chunks {
            chunk.withUnsafeBytes { framer.feed($0) { outputs.append($0) } }
        }
        return (outputs, framer.finish())
    }

    static let cases: [Case] = [
        Case("one line", "{\"a\":1}\n", [line("{\"a\":1}")]),
        Case("two lines", "a\nb\n", [line("a"), line("b")]),
        Case("CRLF is stripped", "a\r\nb\r\n", [line("a"), line("b")]),
        Case("only one CR is stripped", "a\r\r\n", [line("a\r")]),
        Case("a CR inside a line is kept", "a\rb\n", [line("a\rb")]),
        Case("empty lines are skipped", "\n\na\n\n\r\n", [line("a")]),
        Case("a CR-only line is skipped", "\r\n", []),
        Case("surrounding spaces are kept", " a \n", [line(" a ")]),
        Case("bytes pass through untouched", bytes: [0xFF, 0x00, 0xFE, 0x0A], [.line([0xFF, 0x00, 0xFE])]),
        Case("a trailing fragment is a truncated frame", "a\nbc", [line("a")], end: .truncated(fragment: Array("bc".utf8))),
        Case("a trailing CR without LF is a truncated frame", "a\r", [], end: .truncated(fragment: Array("a\r".utf8))),
        Case("empty input", "", []),

        Case("a line at the limit", "abcd\n", limit: 4, [line("abcd")]),
        Case("the limit excludes the stripped CR", "abcd\r\n", limit: 4, [line("abcd")]),
        Case("a kept CR counts toward the limit", "abc\r\r\nabcd\r\r\n", limit: 4, [line("abc\r"), .lineTooLong(limit: 4)]),
        Case("one byte over the limit", "abcde\n", limit: 4, [.lineTooLong(limit: 4)]),
        Case("overflow in the middle, then recovery", "ab\nabcdefgh\ncd\n", limit: 4,
             [line("ab"), .lineTooLong(limit: 4), line("cd")]),
        Case("a long line is reported once", "abcdefghijklmnopqrstuvwxyz\nz\n", limit: 4, [.lineTooLong(limit: 4), line("z")]),
        Case("two long lines, two reports", "abcdefg\nhijklmn\n", limit: 4, [.lineTooLong(limit: 4), .lineTooLong(limit: 4)]),
        Case("a long line of CRs", "\r\r\r\r\r\r\nok\n", limit: 4, [.lineTooLong(limit: 4), line("ok")]),
        Case("overflow in the final fragment", "ab\nabcdefgh", limit: 4, [line("ab"), .lineTooLong(limit: 4)],
             end: .truncated(fragment: [])),
    ]

    @Test(arguments: cases)
    func framing(_ testCase: Case) {
        let input = testCase.input
        let whole = Self.frame([input[...]], limit: testCase.limit)
        #expect(whole.0 == testCase.expected, "whole")
        #expect(whole.1 == testCase.end, "whole")

        let byteByByte = Self.frame(input.indices.map { input[$0...$0] }, limit: testCase.limit)
        #expect(byteByByte.0 == testCase.expected, "byte by byte")
        #expect(byteByByte.1 == testCase.end, "byte by byte")

        for split in input.indices.dropFirst() {
            let halves = Self.frame([input[..<split], input[split...]], limit: testCase.limit)
            #expect(halves.0 == testCase.expected, "split at \(split)")
            #expect(halves.1 == testCase.end, "split at \(split)")
        }
    }

    struct ChunkedCase: Sendable, CustomTestStringConvertible {
        let name: String
        let chunks: [String]
        let limit: Int
        let expected: [Output]
        var testDescription: String { name }
    }

    static let chunkedCases: [ChunkedCase] = [
        ChunkedCase(name: "overflow across chunks is reported once", chunks: ["abc", "de", "fgh\nxy\n"], limit: 4,
                    expected: [.lineTooLong(limit: 4), line("xy")]),
        ChunkedCase(name: "a CR at a chunk end does not count against a full line", chunks: ["abc\r", "\n"], limit: 3,
                    expected: [line("abc")]),
        ChunkedCase(name: "a held CR that turns out to be content overflows", chunks: ["abc\r", "d\n"], limit: 3,
                    expected: [.lineTooLong(limit: 3)]),
        ChunkedCase(name: "a held CR followed by CRLF is content", chunks: ["abc\r", "\r\n"], limit: 4,
                    expected: [line("abc\r")]),
        ChunkedCase(name: "CR and LF in separate chunks", chunks: ["a\r", "\nb\r", "\n"], limit: 4,
                    expected: [line("a"), line("b")]),
        ChunkedCase(name: "the report comes as soon as the limit is passed", chunks: ["ab", "cdef"], limit: 4,
                    expected: [.lineTooLong(limit: 4)]),
    ]

    @Test(arguments: chunkedCases)
    func framingAcrossChunks(_ testCase: ChunkedCase) {
        let result = Self.frame(testCase.chunks.map { Array($0.utf8)[...] }, limit: testCase.limit)
        #expect(result.0 == testCase.expected)
    }

    @Test func finishLeavesTheFramerReusable() {
        var framer = LineFramer(maxLineLength: 8)
        #expect(framer.feed(Array("{\"a\":1}\n{\"b\"".utf8)) == [Self.line("{\"a\":1}")])
        #expect(framer.finish() == .truncated(fragment: Array("{\"b\"".utf8)))
        #expect(framer.finish() == .clean)
        #expect(framer.feed(Array("{\"c\":3}\n".utf8)) == [Self.line("{\"c\":3}")])
        #expect(framer.finish() == .clean)
    }

    @Test func sequenceWithoutContiguousStorage() {
        var framer = LineFramer(maxLineLength: 8)
        #expect(framer.feed("a\r\nb\n".utf8.lazy.map { $0 }) == [Self.line("a"), Self.line("b")])
    }

    // MARK: - Memory bound

    /// The framer never asks for more than the limit, but the allocator may round a request
    /// up and Array reports the usable size: glibc to a page for large blocks, jemalloc (which
    /// the binary links) to its next size class, at most a quarter more (four classes a doubling).
    static func allocatorSlack(_ limit: Int) -> Int { max(4096, limit / 4) }

    /// A 10 MB line against a 1 MiB limit: reported once, skipped, and never buffered past the limit.
    @Test(arguments: [65_536, 100_003, 10_000_000])
    func hugeLineKeepsMemoryBounded(chunkSize: Int) {
        let limit = 1 << 20
        var input = [UInt8](repeating: UInt8(ascii: "x"), count: 10_000_000)
        input += Array("\n{\"ok\":true}\n".utf8)
        var framer = LineFramer(maxLineLength: limit)
        var outputs: [Output] = []
        var largestBuffered = 0
        var largestCapacity = 0
        var start = 0
        while start < input.count {
            let end = min(start + chunkSize, input.count)
            input[start..<end].withUnsafeBytes { framer.feed($0) { outputs.append($0) } }
            largestBuffered = max(largestBuffered, framer.bufferedByteCount)
            largestCapacity = max(largestCapacity, framer.bufferCapacity)
            start = end
        }
        #expect(largestBuffered <= limit)
        #expect(largestCapacity <= limit + Self.allocatorSlack(limit))
        #expect(outputs == [.lineTooLong(limit: limit), Self.line("{\"ok\":true}")])
        #expect(framer.finish() == .clean)
    }

    /// A line of exactly the limit, in chunks, is delivered whole without the buffer outgrowing the limit.
    @Test func lineAtTheLimitAcrossChunks() {
        let limit = 1 << 20
        let payload = [UInt8](repeating: UInt8(ascii: "y"), count: limit)
        let input = payload + Array("\r\n".utf8)
        var framer = LineFramer(maxLineLength: limit)
        var outputs: [Output] = []
        var largestCapacity = 0
        for start in stride(from: 0, to: input.count, by: 65_536) {
            input[start..<min(start + 65_536, input.count)].withUnsafeBytes { framer.feed($0) { outputs.append($0) } }
            largestCapacity = max(largestCapacity, framer.bufferCapacity)
        }
        #expect(largestCapacity <= limit + Self.allocatorSlack(limit))
        #expect(outputs == [.line(payload)])
        #expect(framer.bufferCapacity <= 64 << 10, "a large buffer is released after its line")
    }
}
