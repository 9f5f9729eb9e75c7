import FuzzSupport
import TetherStreaming

runFuzzer(fuzz)

/// The JSON parser every adapter reads the wire with. Options: bit 0 limits nesting to 16
/// instead of the default.
///
/// Oracles: no crash, ASan report or stack overflow; an error's offset lies within the input;
/// text and byte entry points agree; whatever parses re-serializes to JSON that parses again to
/// the same serialization (the writer and the parser agree on every value the parser makes);
/// `JSONScanner`, walking the document (bit 1: reading its top-level members whole instead of
/// entering them), accepts exactly what the parser accepts and reads the same members.
func fuzz(_ input: FuzzInput) {
    let depth = input.options & 1 != 0 ? 16 : JSONParser.defaultMaxDepth
    let scanned = scan(input.payload, buildingMembers: input.options & 2 != 0)

    let value: JSONValue
    do {
        value = try JSONParser.parse(input.payload, maxDepth: depth)
    } catch {
        fuzzRequire(error.offset >= 0 && error.offset <= input.payload.count,
                    "error offset \(error.offset) outside a \(input.payload.count)-byte input")
        if depth == JSONParser.defaultMaxDepth { fuzzRequire(scanned == nil, "the scanner accepted what the parser rejects (\(error))") }
        return
    }
    fuzzRequire(scanned != nil, "the scanner rejected what the parser accepts")
    // Keys compare as spelled on the wire: only where nothing is escaped.
    if let scanned, let object = value.object, !input.payload.contains(UInt8(ascii: "\\")) {
        fuzzRequire(scanned == object.entries.map(\.key), "the scanner read other top-level keys than the parser")
    }
    if let text = String(validating: input.payload, as: UTF8.self) {
        let fromText = try? JSONParser.parse(text, maxDepth: depth)
        fuzzRequire(fromText == value, "parse(String) and parse(bytes) disagree")
    }
    let serialized = value.serialized
    let reparsed: JSONValue
    do {
        reparsed = try JSONParser.parse(serialized, maxDepth: depth)
    } catch {
        fuzzRequire(false, "the writer's output does not parse (\(error)): \(serialized)")
        return
    }
    fuzzRequire(reparsed.serialized == serialized, "serialization is not stable: \(serialized) vs \(reparsed.serialized)")
}

/// Walks `bytes` with `JSONScanner`: the top-level object's members entered (objects nested up
/// to the scanner's limit) or read whole, anything else skipped. The top-level keys in order
/// (escaped keys spelled as on the wire), or nil when the scanner rejects the document.
func scan(_ bytes: [UInt8], buildingMembers: Bool) -> [String]? {
    func enter(_ scanner: inout JSONScanner, depth: Int) throws(JSONScanner.Error) {
        try scanner.enterObject()
        while try scanner.nextKey() != nil {
            if scanner.kind == .object, depth < JSONScanner.enteredLimit {
                try enter(&scanner, depth: depth + 1)
            } else if scanner.kind == .string {
                _ = try scanner.string()
            } else {
                try scanner.skip()
            }
        }
    }
    return try? JSONScanner.scan(bytes) { scanner throws(JSONScanner.Error) -> [String] in
        guard scanner.kind == .object else {
            try scanner.skip()
            return []
        }
        var keys: [String] = []
        try scanner.enterObject()
        while let key = try scanner.nextKey() {
            keys.append(key.string)
            if buildingMembers {
                _ = try scanner.value()
            } else if scanner.kind == .object {
                try enter(&scanner, depth: 2)
            } else {
                try scanner.skip()
            }
        }
        return keys
    }
}
