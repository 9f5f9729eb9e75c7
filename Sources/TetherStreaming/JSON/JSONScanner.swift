/// A forward-only walk over one JSON document, for a hot path that wants a few fields of a
/// message and not its tree: the keys it asks about are read, everything else is stepped over —
/// checked as strictly as `JSONParser` checks it, never built. A stream that knows the shape of
/// its busiest messages reads them with this and falls back to `JSONParser` for the rest.
///
/// Pull style: `enterObject()`, then `nextKey()` until it returns nil; after each key, read the
/// value (`string()`, `bool()`, …), enter it, or `skip()` it. `scan` checks that the document
/// was walked to its end (a value left unread is skipped there).
public struct JSONScanner {
    public typealias Error = JSONParser.Error

    private var parser: JSONParser
    /// Objects entered and not yet closed.
    private var depth = 0
    /// Bit `n`: the object entered at depth `n + 1` has had a member (a `,` comes before the
    /// next). Objects are entered at most `enteredLimit` deep; deeper values can be skipped.
    private var started: UInt64 = 0
    public static let enteredLimit = 64
    /// A value was announced by `nextKey` and not yet read.
    private var pendingValue = false
    /// A key was spelled with an escape: it is compared unescaped nowhere, so a reader that
    /// needs every key it knows should fall back to the parser (see `sawEscapedKey`).
    public private(set) var sawEscapedKey = false
    /// The top-level value was entered, read or skipped.
    private var tookTopLevel = false
    /// The walk was given up (`abandon()`).
    private var abandoned = false

    private init(_ parser: JSONParser) {
        self.parser = parser
    }

    /// Walks `bytes` with `body`; throws what `body` or the document's syntax throws. `strings`:
    /// a table that shares the strings the stream repeats (see `JSONStringTable`).
    public static func scan<Value>(_ bytes: [UInt8], strings: JSONStringTable? = nil,
                                   _ body: (inout JSONScanner) throws(Error) -> Value) throws(Error) -> Value {
        try bytes.withUnsafeBufferPointer { buffer in
            Swift.Result { () throws(Error) in
                var scanner = JSONScanner(JSONParser(bytes: buffer, maxDepth: JSONParser.defaultMaxDepth, strings: strings))
                scanner.parser.skipWhitespace()
                let result = try body(&scanner)
                try scanner.finish()
                return result
            }
        }.get()
    }

    /// Walks `bytes` with `body`, for a reader that may find the message is not one it reads:
    /// nil when `body` says so (returns nil: the rest is left unread and unchecked), when a key
    /// was spelled with an escape (see `sawEscapedKey`), or when the document is not JSON. The
    /// caller then parses the bytes with `JSONParser`, which reads every message right.
    public static func read<Value>(_ bytes: [UInt8], strings: JSONStringTable? = nil,
                                   _ body: (inout JSONScanner) throws(Error) -> Value?) -> Value? {
        try? scan(bytes, strings: strings) { scanner throws(Error) -> Value? in
            guard let value = try body(&scanner), !scanner.sawEscapedKey else {
                scanner.abandon()
                return nil
            }
            return value
        }
    }

    /// The kind of the value about to be read.
    public enum Kind: Equatable, Sendable { case object, array, string, number, bool, null }

    public var kind: Kind? {
        guard parser.index < parser.bytes.count else { return nil }
        switch parser.bytes[parser.index] {
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool
        case UInt8(ascii: "n"): return .null
        default: return .number
        }
    }

    // MARK: Objects

    /// Steps into the object about to be read.
    public mutating func enterObject() throws(Error) {
        guard kind == .object else { throw parser.failure("expected an object") }
        guard depth + 1 <= Swift.min(parser.maxDepth, Self.enteredLimit) else {
            throw parser.failure("objects entered deeper than \(Swift.min(parser.maxDepth, Self.enteredLimit))")
        }
        parser.index += 1
        depth += 1
        started &= ~(1 << UInt64(depth - 1))
        pendingValue = false
        tookTopLevel = true
    }

    /// The next key of the object entered last, positioned at its value; nil when the object
    /// closes (it is then left). The key's bytes are valid until the scan ends.
    public mutating func nextKey() throws(Error) -> JSONKey? {
        guard depth > 0 else { throw parser.failure("not in an object") }
        if pendingValue { try skip() }
        parser.skipWhitespace()
        guard parser.index < parser.bytes.count else { throw parser.failure("unexpected end of input in object") }
        if parser.bytes[parser.index] == UInt8(ascii: "}") {
            parser.index += 1
            depth -= 1
            parser.skipWhitespace()
            return nil
        }
        let bit: UInt64 = 1 << UInt64(depth - 1)
        if started & bit != 0 {
            guard parser.bytes[parser.index] == UInt8(ascii: ",") else { throw parser.failure("expected ',' or '}'") }
            parser.index += 1
            parser.skipWhitespace()
        }
        started |= bit
        guard parser.index < parser.bytes.count, parser.bytes[parser.index] == UInt8(ascii: "\"") else {
            throw parser.failure("expected a string key")
        }
        let start = parser.index + 1
        // A key is a plain run up to its closing quote (one pass, nothing to unescape); one
        // that stops at anything else is stepped over as any string, checked, and marked.
        let end = JSONStringBytes.endOfPlainRun(parser.bytes, from: start)
        if end < parser.bytes.count, parser.bytes[end] == UInt8(ascii: "\"") {
            parser.index = end + 1
        } else {
            try parser.skipString()
            sawEscapedKey = true
        }
        let key = JSONKey(bytes: UnsafeBufferPointer(rebasing: parser.bytes[start..<(parser.index - 1)]))
        parser.skipWhitespace()
        guard parser.index < parser.bytes.count, parser.bytes[parser.index] == UInt8(ascii: ":") else { throw parser.failure("expected ':'") }
        parser.index += 1
        parser.skipWhitespace()
        pendingValue = true
        return key
    }

    // MARK: Values

    /// The string about to be read; nil (stepped over) when the value is of another kind.
    public mutating func string() throws(Error) -> String? {
        guard kind == .string else {
            try skip()
            return nil
        }
        pendingValue = false
        tookTopLevel = true
        let value = try parser.parseString()
        parser.skipWhitespace()
        return value
    }

    /// Reads the string about to be read into `slot`, for a reader that must agree with
    /// `JSONParser`'s tree: false (nothing read) when `slot` is already filled (a repeated key:
    /// the tree keeps the first) or the value is not a string (the tree's `.string` is nil).
    public mutating func string(into slot: inout String?) throws(Error) -> Bool {
        guard slot == nil, kind == .string else { return false }
        slot = try string()
        return true
    }

    /// The boolean about to be read; nil (stepped over) when the value is of another kind.
    public mutating func bool() throws(Error) -> Bool? {
        let value: Bool?
        switch kind {
        case .bool:
            let isTrue = parser.bytes[parser.index] == UInt8(ascii: "t")
            try parser.expectLiteral(isTrue ? "true" : "false")
            pendingValue = false
            tookTopLevel = true
            parser.skipWhitespace()
            value = isTrue
        default:
            try skip()
            value = nil
        }
        return value
    }

    /// The integer about to be read, as `JSONValue.int` reads one (an integral double counts);
    /// nil (stepped over) when the value is not such a number.
    public mutating func int() throws(Error) -> Int64? {
        guard kind == .number else {
            try skip()
            return nil
        }
        pendingValue = false
        tookTopLevel = true
        let value = try parser.parseNumber()
        parser.skipWhitespace()
        return value.int
    }

    /// Whether the value about to be read is `null`; it is stepped over either way.
    public mutating func skipIsNull() throws(Error) -> Bool {
        let isNull = kind == .null
        try skip()
        return isNull
    }

    /// The value about to be read, built whole.
    public mutating func value() throws(Error) -> JSONValue {
        pendingValue = false
        tookTopLevel = true
        let value = try parser.parseValue(depth: depth)
        parser.skipWhitespace()
        return value
    }

    /// Walks the object about to be read, member by member: `member` reads or skips each value
    /// and returns false to stop there, the rest left unread. False when the walk was stopped, or
    /// the value is not an object (then nothing was read). Inlinable, so that a reader's
    /// `member` is inlined into its walk rather than called through a closure for every key.
    @inlinable
    public mutating func members(_ member: (JSONKey, inout JSONScanner) throws(Error) -> Bool) throws(Error) -> Bool {
        guard kind == .object else { return false }
        try enterObject()
        while let key = try nextKey() {
            guard try member(key, &self) else { return false }
        }
        return true
    }

    /// Steps over the value about to be read.
    public mutating func skip() throws(Error) {
        pendingValue = false
        tookTopLevel = true
        try parser.skipValue(depth: depth)
        parser.skipWhitespace()
    }

    /// Ends the walk here, the rest of the document unread and unchecked: for a reader that
    /// found the message is not one it reads, and will hand the bytes to `JSONParser` instead.
    /// Nothing read so far may be trusted as part of a valid document.
    public mutating func abandon() {
        abandoned = true
    }

    /// The end of the walk: a top-level value not read is stepped over, objects still open are
    /// walked to their end, and nothing may follow.
    private mutating func finish() throws(Error) {
        if abandoned { return }
        if !tookTopLevel { try skip() }
        while depth > 0 { while try nextKey() != nil {} }
        parser.skipWhitespace()
        guard parser.index == parser.bytes.count else { throw parser.failure("unexpected data after the value") }
    }
}

/// An object key as it appears on the wire (unescaped keys only compare equal to their text).
public struct JSONKey {
    @usableFromInline let bytes: UnsafeBufferPointer<UInt8>

    /// Inlinable: a reader compares each key with a chain of literals, and inlined, the length
    /// test against each literal is a constant compare.
    @inlinable
    public static func == (key: JSONKey, text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard key.bytes.count == count else { return false }
        let start = text.utf8Start
        for offset in 0..<count where key.bytes[offset] != start[offset] { return false }
        return true
    }

    public var string: String { String(decoding: bytes, as: UTF8.self) }
}
