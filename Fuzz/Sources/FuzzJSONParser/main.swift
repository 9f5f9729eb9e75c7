import FuzzSupport
import TetherCore

runFuzzer(fuzz)

/// The JSON parser every adapter reads the wire with. Options: bit 0 limits nesting to 16
/// instead of the default.
///
/// Oracles: no crash, ASan report or stack overflow; an error's offset lies within the input;
/// text and byte entry points agree; whatever parses re-serializes to JSON that parses again to
/// the same serialization (the writer and the parser agree on every value the parser makes).
func fuzz(_ input: FuzzInput) {
    let depth = input.options & 1 != 0 ? 16 : JSONParser.defaultMaxDepth

    let value: JSONValue
    do {
        value = try JSONParser.parse(input.payload, maxDepth: depth)
    } catch {
        fuzzRequire(error.offset >= 0 && error.offset <= input.payload.count,
                    "error offset \(error.offset) outside a \(input.payload.count)-byte input")
        return
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
