
/// A multiplicative hash over 8 bytes at a time, for ids read off the wire: ids differ
/// anywhere, often only in their last characters, so every byte counts. A multiplication
/// carries a change upwards only, so every byte reaches the top bits and not always the bottom
/// ones: a caller that takes a slot from it takes the top bits, and `tableHash` mixes all of them.
public enum WordHash {
    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        let count = bytes.count
        var hash = UInt64(truncatingIfNeeded: count) &* 0x9E37_79B9_7F4A_7C15
        guard count >= 8, let raw = bytes.baseAddress else {
            // Shorter than a word: its bytes in one, little-endian, as a load would read them.
            var word: UInt64 = 0
            for (index, byte) in bytes.enumerated() { word |= UInt64(byte) << (8 * UInt64(index)) }
            return (hash ^ word) &* 0xC4CE_B9FE_1A85_EC53
        }
        var offset = 0
        while offset + 8 <= count {
            hash = (hash ^ raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)) &* 0xFF51_AFD7_ED55_8CCD
            offset += 8
        }
        if offset < count {
            // The last 8 bytes, overlapping what came before.
            hash = (hash ^ raw.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self)) &* 0xC4CE_B9FE_1A85_EC53
        }
        return hash
    }

    /// What a `Dictionary` or `Set` asks a key for (`_rawHashValue(seed:)`), from a word that
    /// already stands for the key: the word mixed with the table's seed by MurmurHash3's 64-bit
    /// finalizer, every bit of both reaching every bit of the result, the low bits a table uses
    /// included. Seeding, feeding and finalizing `Hasher`'s SipHash for one word cost more than
    /// the lookup it served, several times a frame (bench/PROFILE.md).
    @inline(__always)
    public static func tableHash(_ word: UInt64, seed: Int) -> Int {
        TableHash.mix(word, seed: seed)
    }
}
