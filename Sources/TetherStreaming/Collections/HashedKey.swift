/// A string key looked up over and over — a part's or a turn's, on every line of a stream — that
/// hashes its bytes once, when it is made (`WordHash`). Each lookup then gives `Hasher` one word,
/// where a `String` key gives it every byte (SipHash over the whole key), and a dictionary that
/// removes an entry hashes again each one it moves back: a bounded map letting go of its oldest
/// part for every new one does that on every part.
///
/// Each table's seed is mixed with the word, but two keys whose words collide collide in every
/// table: ids come from the user's own backend, and the maps they key are bounded.
public struct HashedKey: Hashable, Sendable, CustomStringConvertible {
    public let text: String
    private let word: UInt64

    public init(_ text: String) {
        word = text.withUTF8InPlace { WordHash.hash(UnsafeRawBufferPointer($0)) }
        self.text = text
    }

    public static func == (lhs: HashedKey, rhs: HashedKey) -> Bool {
        lhs.word == rhs.word && lhs.text == rhs.text
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(word)
    }

    /// What a `Dictionary` or `Set` asks a key for, without `Hasher` (`WordHash.tableHash`).
    public func _rawHashValue(seed: Int) -> Int {
        WordHash.tableHash(word, seed: seed)
    }

    public var description: String { text }
}
