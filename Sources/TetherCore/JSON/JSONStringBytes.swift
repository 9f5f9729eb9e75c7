/// What the JSON reader and writer both look for in a string's bytes — `"`, `\` and control
/// characters, the bytes that end a plain run — found eight bytes at a time: strings are most
/// of the bytes of every wire message and every line Tether writes.
enum JSONStringBytes {
    /// Whether any of a word's eight bytes is a control character, `"` or `\` (or, with
    /// `asciiOnly`, 0x80 or more): the classic "has a zero byte" / "has a byte less than n" tests,
    /// exact as a yes or no for the whole word.
    @inline(__always)
    static func needsAttention(_ word: UInt64, asciiOnly: Bool) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        func hasZeroByte(_ value: UInt64) -> Bool { (value &- ones) & ~value & highs != 0 }
        let control = (word &- ones &* 0x20) & ~word & highs != 0
        return control || hasZeroByte(word ^ (ones &* 0x22)) || hasZeroByte(word ^ (ones &* 0x5C))
            || (asciiOnly && word & highs != 0)
    }

    /// The index of the first `"`, `\` or control byte in `bytes` at or after `start` (with
    /// `asciiOnly`, also the first of 0x80 or more); `bytes.count` when there is none.
    @inline(__always)
    static func endOfPlainRun(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, asciiOnly: Bool = false) -> Int {
        guard let base = bytes.baseAddress else { return start }
        let raw = UnsafeRawPointer(base)
        let count = bytes.count
        var index = start
        while index + 8 <= count, !needsAttention(raw.loadUnaligned(fromByteOffset: index, as: UInt64.self), asciiOnly: asciiOnly) {
            index += 8
        }
        while index < count {
            let byte = base[index]
            if byte == 0x22 || byte == 0x5C || byte < 0x20 || (asciiOnly && byte >= 0x80) { return index }
            index += 1
        }
        return count
    }
}
