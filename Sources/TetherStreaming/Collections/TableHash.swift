/// A hash table's hash of a key that already is one well-spread word, with the table's seed:
/// MurmurHash3's 64-bit finalizer, every bit of both reaching every bit of the result, the low
/// bits a table uses included. The one definition for the keys that answer `_rawHashValue(seed:)`
/// themselves (`StreamSeqKey` and `WordHash.tableHash`).
package enum TableHash {
    @inline(__always)
    package static func mix(_ word: UInt64, seed: Int) -> Int {
        var mixed = word ^ UInt64(bitPattern: Int64(seed))
        mixed ^= mixed >> 33
        mixed &*= 0xFF51_AFD7_ED55_8CCD
        mixed ^= mixed >> 33
        mixed &*= 0xC4CE_B9FE_1A85_EC53
        mixed ^= mixed >> 33
        return Int(truncatingIfNeeded: mixed)
    }
}
