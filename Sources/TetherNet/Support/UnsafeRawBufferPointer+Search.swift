#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension UnsafeRawBufferPointer {
    /// The first index at or after `start` holding `byte`, found with `memchr` (the framers'
    /// search for line ends). Safe for any `start`: out of range finds nothing, and `memchr`
    /// reads only the `count - start` bytes this buffer owns.
    func firstIndex(of byte: UInt8, from start: Int) -> Int? {
        guard let base = baseAddress, start >= 0, start < count,
              let found = memchr(base + start, Int32(byte), count - start)
        else { return nil }
        return UnsafeRawPointer(found) - base
    }
}
