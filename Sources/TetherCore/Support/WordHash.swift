/// A multiplicative hash over 8 bytes at a time, for ids read off the wire: ids differ
/// anywhere, often only in their last characters, so every byte counts. A multiplication
/// carries a change upwards only, so every byte reaches the top bits and not always the bottom
/// ones: a caller that takes a slot from it takes the top bits, and `Hasher` mixes all of them.
enum WordHash {
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
}
