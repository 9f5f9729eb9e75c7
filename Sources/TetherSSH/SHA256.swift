import CCrypto

/// SHA-256, for OpenSSH-style `SHA256:` fingerprints of host keys (libssh2 can hash the live
/// session's key, not a key read from known_hosts or the pin store). From libcrypto, which
/// libssh2 already loads.
enum SHA256 {
    static func hash(_ message: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        let ok = message.withUnsafeBytes { bytes in tether_sha256(bytes.baseAddress, bytes.count, &digest) }
        precondition(ok == 1, "libcrypto could not compute SHA-256")
        return digest
    }
}
