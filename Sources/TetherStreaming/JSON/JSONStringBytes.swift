/// What the JSON reader and writer both look for in a string's bytes — `"`, `\` and control
/// characters, the bytes that end a plain run — found eight bytes at a time: strings are most
/// of the bytes of every wire message and every line Tether writes.
enum JSONStringBytes {
    /// A word (eight bytes, the first in the low bits) with the top bit of each byte set that
    /// is a control character, `"` or `\` (or, with `asciiOnly`, 0x80 or more): the classic
    /// "has a zero byte" / "has a byte less than n" tests. A borrow can mark a byte after a
    /// matching one, never before it, so the lowest mark is exactly the first match.
    @inline(__always)
    static func attentionMask(_ word: UInt64, asciiOnly: Bool) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func zeroBytes(_ value: UInt64) -> UInt64 { (value &- ones) & ~value & highs }
        var mask = (word &- ones &* 0x20) & ~word & highs
        mask |= zeroBytes(word ^ (ones &* 0x22)) | zeroBytes(word ^ (ones &* 0x5C))
        if asciiOnly { mask |= word & highs }
        return mask
    }

    /// The index of the first `"`, `\` or control byte in `bytes` at or after `start` (with
    /// `asciiOnly`, also the first of 0x80 or more); `bytes.count` when there is none. A word at
    /// a time, the last few bytes too (read as the buffer's last word, padded above them with
    /// bytes that need nothing): the strings of a wire message or a line are mostly shorter than
    /// two words.
    @inline(__always)
    static func endOfPlainRun(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, asciiOnly: Bool = false) -> Int {
        guard let base = bytes.baseAddress else { return start }
        let raw = UnsafeRawPointer(base)
        let count = bytes.count
        var index = start
        while index + 8 <= count {
            let mask = attentionMask(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)), asciiOnly: asciiOnly)
            if mask != 0 { return index + mask.trailingZeroBitCount >> 3 }
            index += 8
        }
        guard index < count else { return count }
        let rest = count - index  // 1 to 7 bytes
        let padding: UInt64 = 0x4141_4141_4141_4141 << (UInt64(rest) &* 8)  // "A"s above them
        var tail: UInt64
        if count >= 8 {
            // The buffer's last word, shifted down past the bytes already searched: one load
            // (a copy of 1 to 7 bytes into a word was a call to `memcpy`, for most strings).
            let last = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))
            tail = last >> (UInt64(8 - rest) &* 8)
        } else {
            tail = shortBuffer(base + index, count: rest)
        }
        tail |= padding
        let mask = attentionMask(tail, asciiOnly: asciiOnly)
        return mask != 0 ? index + mask.trailingZeroBitCount >> 3 : count
    }

    /// 1 to 7 bytes (what is left of a buffer shorter than a word: a key or a short value the
    /// writer quotes) in one word, the first in the low bits: two loads that may overlap, whose
    /// shared bytes are the same. Out of line: inlined, it made `endOfPlainRun` too large to be
    /// inlined where it is used (`JSONScanner.nextKey`, for every key).
    @inline(never)
    private static func shortBuffer(_ base: UnsafePointer<UInt8>, count: Int) -> UInt64 {
        let raw = UnsafeRawPointer(base)
        if count >= 4 {
            let low = UInt64(UInt32(littleEndian: raw.loadUnaligned(as: UInt32.self)))
            let high = UInt64(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: count - 4, as: UInt32.self)))
            return low | high << (UInt64(count - 4) &* 8)
        }
        let middle = count / 2, last = count - 1
        return UInt64(base[0]) | UInt64(base[middle]) << (UInt64(middle) &* 8) | UInt64(base[last]) << (UInt64(last) &* 8)
    }
}
