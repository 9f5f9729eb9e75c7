import Testing
@testable import TetherStreaming

/// A key that hashes its bytes once: equal exactly when its text is, and every byte counts.
@Suite struct HashedKeyTests {
    @Test func equalTextsAreEqualKeysWithEqualHashes() {
        let made = "ws-1\u{1F}019a0000-f100-7000-8000-000000000001"
        let key = HashedKey(made)
        let again = HashedKey(String(made.utf8.map { Character(Unicode.Scalar($0)) }))  // another string, same text
        #expect(key == again && key.hashValue == again.hashValue)
        #expect(key.text == made && key.description == made)
    }

    /// Every byte reaches the word: texts of every length up to 40 that differ in one byte, at
    /// any position (the last one too, where a thread's id and its turn's differ), hash apart.
    @Test func textsThatDifferInOneByteAnywhereHashApart() {
        for length in 1...40 {
            let base = [UInt8](repeating: UInt8(ascii: "a"), count: length)
            var hashes: Set<Int> = [HashedKey(String(decoding: base, as: UTF8.self)).hashValue]
            for position in 0..<length {
                var changed = base
                changed[position] = UInt8(ascii: "b")
                let key = HashedKey(String(decoding: changed, as: UTF8.self))
                #expect(key != HashedKey(String(decoding: base, as: UTF8.self)))
                hashes.insert(key.hashValue)
            }
            #expect(hashes.count == length + 1, "length \(length)")
        }
    }

    /// Texts of different lengths whose words could be alike (padding with zero bytes) are told
    /// apart by their length, and the empty text is a key like any other.
    @Test func lengthCountsAndTheEmptyTextIsAKey() {
        let texts = ["", "\u{0}", "\u{0}\u{0}", "a", "a\u{0}", String(repeating: "\u{0}", count: 8), String(repeating: "\u{0}", count: 9)]
        #expect(Set(texts.map { HashedKey($0).hashValue }).count == texts.count)
        #expect(Set(texts.map(HashedKey.init)).count == texts.count)
    }

    /// What a `Dictionary` asks a key for: one value for equal keys under one seed, another
    /// under another seed, and ids that differ in a byte or two (a stream's part ids) spread over
    /// the low bits a table uses about as random values would.
    @Test func rawHashesSpreadOverATablesLowBits() {
        let ids = (0..<4096).map { HashedKey("prt_2dc23289980\(String($0, radix: 36))utaoeudV22bbXK") }
        for seed in [0, 7, -1] {
            let buckets = Set(ids.map { $0._rawHashValue(seed: seed) & 4095 })
            #expect(buckets.count > 2_400, "seed \(seed): \(buckets.count) of 4,096 buckets")  // random: about 2,589
        }
        let again = HashedKey(String(ids[5].text.utf8.map { Character(Unicode.Scalar($0)) }))
        #expect(ids[5]._rawHashValue(seed: 7) == again._rawHashValue(seed: 7))
        #expect(ids[5]._rawHashValue(seed: 7) != ids[5]._rawHashValue(seed: 8))
        // And a table of them finds each one, and nothing else.
        let table = Dictionary(uniqueKeysWithValues: ids.enumerated().map { ($1, $0) })
        #expect(ids.enumerated().allSatisfy { table[HashedKey($1.text)] == $0 })
        #expect(table[HashedKey("prt_2dc23289980-utaoeudV22bbXK")] == nil)
    }

    /// As a bounded map's key: found by its text however it was made, the oldest let go first.
    @Test func keysARecentMap() {
        var map = RecentMap<HashedKey, Int>(capacity: 2)
        map[HashedKey("session\u{1F}item-1")] = 1
        map[HashedKey("session\u{1F}item-2")] = 2
        map[HashedKey("session\u{1F}item-3")] = 3
        #expect(map[HashedKey("session\u{1F}item-1")] == nil)
        #expect(map[HashedKey("session\u{1F}" + "item-2")] == 2 && map[HashedKey("session\u{1F}item-3")] == 3)
        #expect(map.evicted == 1)
    }
}
