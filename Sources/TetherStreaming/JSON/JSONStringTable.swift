#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The long strings a batch of a stream has parsed, so that the next message of the batch
/// repeating one (the session id, the message id, the event type, the project hash — in every
/// frame of a stream) shares the copy already made instead of allocating its own. Strings of up
/// to 15 UTF-8 bytes are stored inline by Swift and need no table.
///
/// A fixed number of slots, each keeping the last string that hashed to it: bounded whatever the
/// stream says, and a string that stops recurring is simply overwritten. Owned by one stream's
/// task (not `Sendable`): pass it to `JSONParser.parse(_:strings:)`, and call `startBatch()` for
/// each batch.
///
/// A `vocabulary` of the wire's own words (event types, method names), given as string
/// literals, is where every batch starts: a literal is stored in the program and Swift counts
/// no references to it, so a word every message repeats costs no allocation, no reference
/// count moving between cores, and compares equal at once to the adapter's literal when the
/// compiler made the two one.
public final class JSONStringTable {
    /// Strings shorter than this are inline in Swift and never allocated.
    static let shortestShared = 16
    /// Longer strings are rarely repeated ids: hashing them would cost more than it saves.
    static let longestShared = 128

    private var slots: [String?]
    /// What each batch starts with: the vocabulary, each word in its slot.
    private let words: [String?]
    /// A slot is the hash's top bits: 64 minus this many (see `hash`).
    private let shift: UInt64

    /// `slots` is rounded up to a power of two. `vocabulary`: string literals (see above); a
    /// word outside the shared lengths is left out, and of two that share a slot the later stays.
    public init(slots: Int = 256, vocabulary: [String] = []) {
        var count = 2, bits: UInt64 = 1
        while count < slots {
            count <<= 1
            bits += 1
        }
        let shift = 64 - bits
        var words = [String?](repeating: nil, count: count)
        for word in vocabulary {
            var spelled = word
            let slot = spelled.withUTF8 { run -> Int? in
                guard run.count >= Self.shortestShared, run.count <= Self.longestShared else { return nil }
                return Self.slot(run, shift: shift)
            }
            if let slot { words[slot] = word }
        }
        self.shift = shift
        self.words = words
        self.slots = words
    }

    /// The string these UTF-8 bytes spell: a shared copy when one is in the table, else a new
    /// one (kept for next time); nil when the run is too short or too long to be worth sharing.
    func string(_ run: UnsafeBufferPointer<UInt8>) -> String? {
        guard run.count >= Self.shortestShared, run.count <= Self.longestShared else { return nil }
        let slot = Self.slot(run, shift: shift)
        if let cached = slots[slot] {
            let same = cached.withUTF8InPlace { stored in
                stored.count == run.count && memcmp(stored.baseAddress!, run.baseAddress!, run.count) == 0
            }
            if same { return cached }
        }
        let made = String(decoding: run, as: UTF8.self)
        slots[slot] = made
        return made
    }

    /// Forgets every string but the vocabulary's (literals, counted by no one): call it at the
    /// start of each batch (a network read, or a consumer's poll). A string kept for a whole stream is shared by the events the decoding
    /// task is making and the events the writer, on the other core, is releasing, and its
    /// reference count then moves between the cores on every retain and release; on a 2-core
    /// flood that cost more than the allocations the table saves (bench/PROFILE.md, part nine).
    /// Shared within one batch, a string is mostly counted by one core at a time: the batch is
    /// decoded and mapped before it is written.
    public func startBatch() {
        for index in slots.indices { slots[index] = words[index] }
    }

    /// The slot of a run: the top bits of its hash, the only ones every byte reaches (a
    /// multiplication carries a change upwards only; the bottom bits would miss the last byte,
    /// which read little-endian is the top of the last word, and two ids that differ only
    /// there — a thread's and its turn's, numbered alike — would take turns in one slot).
    private static func slot(_ run: UnsafeBufferPointer<UInt8>, shift: UInt64) -> Int {
        Int(truncatingIfNeeded: WordHash.hash(UnsafeRawBufferPointer(run)) >> shift)
    }
}
