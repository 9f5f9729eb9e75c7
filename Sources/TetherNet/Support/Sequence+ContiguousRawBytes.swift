extension Sequence<UInt8> {
    /// Calls `body` with these bytes as one contiguous buffer: in place when the sequence stores
    /// them so, else copied once. The framers' array-in, outputs-out `feed` builds on it.
    func withContiguousRawBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        if let result = withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) {
            return result
        }
        return Array(self).withUnsafeBytes(body)
    }
}
