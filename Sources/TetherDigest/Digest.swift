import CCrypto

/// The digests Tether needs, from libcrypto (which libcurl and libssh2 already load): SHA-1 for
/// the WebSocket handshake (`Sec-WebSocket-Accept` is base64(SHA-1(key + GUID))), SHA-256 for
/// OpenSSH-style host-key fingerprints and for the logins the gateway keeps.
public enum Digest {
    public static func sha1(_ message: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 20)
        let ok = message.withUnsafeBytes { bytes in tether_sha1(bytes.baseAddress, bytes.count, &digest) }
        // EVP_Digest fails only when OpenSSL cannot allocate or lacks the algorithm (SHA-1 in a
        // FIPS-only build).
        precondition(ok == 1, "libcrypto could not compute SHA-1")
        return digest
    }

    public static func sha256(_ message: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        let ok = message.withUnsafeBytes { bytes in tether_sha256(bytes.baseAddress, bytes.count, &digest) }
        precondition(ok == 1, "libcrypto could not compute SHA-256")
        return digest
    }

    /// Lowercase hex, two digits a byte.
    public static func hex(_ digest: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(digest.count * 2)
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
