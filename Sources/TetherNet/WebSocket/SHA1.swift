import CCrypto

/// SHA-1, for the WebSocket handshake only: `Sec-WebSocket-Accept` is base64(SHA-1(key + GUID)).
/// From libcrypto, which libcurl already loads.
enum SHA1 {
    static func hash(_ message: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 20)
        let ok = message.withUnsafeBytes { bytes in tether_sha1(bytes.baseAddress, bytes.count, &digest) }
        // EVP_Digest fails only when OpenSSL cannot allocate or lacks SHA-1 (a FIPS-only build).
        precondition(ok == 1, "libcrypto could not compute SHA-1")
        return digest
    }
}
