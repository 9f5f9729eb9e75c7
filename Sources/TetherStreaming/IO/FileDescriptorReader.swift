#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `read(2)` into an array: the one place a descriptor is read into Swift memory by hand.
public enum FileDescriptorReader {
    /// Reads at most `buffer.count` bytes into the start of `buffer`: the count read, 0 at the
    /// end, or -1 with `errno` set (EINTR and EAGAIN are the caller's to retry).
    public static func read(_ descriptor: Int32, into buffer: inout [UInt8]) -> Int {
        buffer.withUnsafeMutableBytes { raw in
            // Safe: `raw` spans the array's whole storage, which `read` fills at most.
            readBytes(descriptor, raw.baseAddress, raw.count)
        }
    }
}

#if canImport(Glibc)
private let readBytes = Glibc.read
#elseif canImport(Darwin)
private let readBytes = Darwin.read
#endif
