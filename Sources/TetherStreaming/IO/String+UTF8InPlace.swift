#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension String {
    /// Lends the string's UTF-8 bytes where they are. `withUTF8` is `mutating`: called on a
    /// string the caller does not own, it needs a copy of it first (a retain and a release per
    /// call, on every line's strings); every native string is contiguous, so the copy is left to
    /// the rare bridged one.
    @inline(__always)
    package func withUTF8InPlace<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = self
        return try copy.withUTF8(body)
    }

    /// Byte-for-byte equality: `==` on String is canonical equivalence, under which two ids
    /// spelled with different bytes can be equal, and the bytes of one must not stand for the other.
    /// Both strings are borrowed, not copied: this runs for several fields of every line, on
    /// strings the producing thread is retaining at the same time. Safe: each buffer is read
    /// only inside the closure that lends it, and `memcmp` reads `count` bytes of both, which
    /// the equal counts checked first guarantee exist.
    package static func sameBytes(_ lhs: String?, _ rhs: String?) -> Bool {
        if lhs == nil || rhs == nil { return lhs == nil && rhs == nil }
        return lhs.unsafelyUnwrapped.withUTF8InPlace { left in
            rhs.unsafelyUnwrapped.withUTF8InPlace { right in
                left.count == right.count && (left.isEmpty || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0)
            }
        }
    }
}
