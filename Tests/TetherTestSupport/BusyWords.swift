import TetherCore
import TetherStreaming

/// The words a `JSONStringTable` started with `vocabulary` does not hand back as the literal
/// itself, in each of two batches: what an adapter's `busyWords` test expects to be none. (Two
/// words that share a slot leave one of them a copy, and a word outside the vocabulary is one.)
public func wordsNotReadAsTheirLiterals(_ words: [String], vocabulary: [String]? = nil) -> [String] {
    let table = JSONStringTable(vocabulary: vocabulary ?? words)
    var copies: [String] = []
    for _ in 0..<2 {
        for word in words {
            var literal = word
            guard var read = try? JSONParser.parse(Array("\"\(word)\"".utf8), strings: table).string,
                  literal.withUTF8({ $0.baseAddress }) == read.withUTF8({ $0.baseAddress }) else {
                copies.append(word)
                continue
            }
        }
        table.startBatch()
    }
    return copies
}
