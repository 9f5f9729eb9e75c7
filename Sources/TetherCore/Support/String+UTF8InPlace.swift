extension String {
    /// Lends the string's UTF-8 bytes where they are. `withUTF8` is `mutating`: called on a
    /// string the caller does not own, it needs a copy of it first (a retain and a release per
    /// call, on every line's strings); every native string is contiguous, so the copy is left to
    /// the rare bridged one.
    @inline(__always)
    func withUTF8InPlace<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = self
        return try copy.withUTF8(body)
    }
}
