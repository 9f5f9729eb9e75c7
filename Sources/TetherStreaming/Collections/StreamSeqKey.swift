/// What identifies a message of a numbered stream, for dropping the ones seen again: the stream
/// (a job, say), the message's seq in it and its kind. A set of these is asked once per message
/// of a busy stream, so the key hashes as one word made of the seq, the stream's tag (its id
/// hashed once, when the stream is named: `Stream`) and the kind's length, instead of feeding
/// both strings to `Hasher` each time (bench/PROFILE.md, "Codex Worker without stdlib internals").
package struct StreamSeqKey: Hashable, Sendable {
    /// A stream's id with its hash, made once per stream and reused for each of its messages.
    package struct Stream: Hashable, Sendable {
        package let id: String
        fileprivate let tag: UInt64

        package init(_ id: String) {
            self.id = id
            tag = UInt64(bitPattern: Int64(id.hashValue))
        }

        package static func == (a: Stream, b: Stream) -> Bool {
            a.tag == b.tag && a.id == b.id
        }

        package func hash(into hasher: inout Hasher) {
            hasher.combine(tag)
        }

        // Safe: see `StreamSeqKey._rawHashValue(seed:)`; the word is the tag, a function of `id`.
        package func _rawHashValue(seed: Int) -> Int {
            TableHash.mix(tag, seed: seed)
        }
    }

    package let stream: Stream
    package let seq: Int64
    package let kind: String

    package init(stream: Stream, seq: Int64, kind: String) {
        self.stream = stream
        self.seq = seq
        self.kind = kind
    }

    private var word: UInt64 {
        UInt64(bitPattern: seq) &* 0x9E37_79B9_7F4A_7C15 ^ stream.tag
            ^ UInt64(truncatingIfNeeded: kind.utf8.count) &* 0xC2B2_AE3D_27D4_EB4F
    }

    package static func == (a: StreamSeqKey, b: StreamSeqKey) -> Bool {
        a.seq == b.seq && a.stream == b.stream && a.kind == b.kind
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(word)
    }

    /// What `Set`, `Dictionary` and `hashValue` ask a key for, answered without `Hasher`.
    /// What keeps it safe: it is the stdlib's customization point for exactly this, and it
    /// agrees with `hash(into:)` and `==` — both hash the same word, and the word depends only
    /// on fields `==` compares (the tag is a function of the stream's id), so equal keys hash
    /// alike in every table; the table's seed is mixed into every bit of the result.
    package func _rawHashValue(seed: Int) -> Int {
        TableHash.mix(word, seed: seed)
    }
}
