import Foundation

/// What can be told about a private key file without decrypting it: its algorithm (so an RSA key
/// gets the RSA explanation) and whether it needs a passphrase. libssh2 does the actual loading.
struct PrivateKeyFile {
    enum Problem: Error {
        case missing
        case unreadable
    }

    /// `ssh-ed25519`, `ecdsa-sha2-nistp256`, `ssh-rsa`, …; nil when the format does not say.
    let algorithm: String?
    let isEncrypted: Bool

    var isRSA: Bool { algorithm == "ssh-rsa" }

    init(path: String) throws(Problem) {
        guard FileManager.default.fileExists(atPath: path) else { throw .missing }
        guard let data = FileManager.default.contents(atPath: path) else { throw .unreadable }
        let text = String(decoding: data.prefix(64 * 1024), as: UTF8.self)
        if let body = Self.pemBody(text, label: "OPENSSH PRIVATE KEY"), let parsed = Self.parseOpenSSH(body) {
            algorithm = parsed.algorithm
            isEncrypted = parsed.cipher != "none"
        } else if text.contains("BEGIN RSA PRIVATE KEY") {
            algorithm = "ssh-rsa"
            isEncrypted = text.contains("ENCRYPTED")
        } else if text.contains("BEGIN EC PRIVATE KEY") {
            algorithm = "ecdsa"
            isEncrypted = text.contains("ENCRYPTED")
        } else if text.contains("BEGIN DSA PRIVATE KEY") {
            algorithm = "ssh-dss"
            isEncrypted = text.contains("ENCRYPTED")
        } else {
            // PKCS#8 and unknown formats: the algorithm is inside the (maybe encrypted) DER.
            algorithm = Self.publicKeyAlgorithm(besides: path)
            isEncrypted = text.contains("BEGIN ENCRYPTED PRIVATE KEY")
        }
    }

    /// The first word of `path.pub`, if there is one.
    private static func publicKeyAlgorithm(besides path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path + ".pub") else { return nil }
        return String(decoding: data.prefix(256), as: UTF8.self).split(separator: " ").first.map(String.init)
    }

    private static func pemBody(_ text: String, label: String) -> [UInt8]? {
        guard let start = text.range(of: "-----BEGIN \(label)-----"),
              let end = text.range(of: "-----END \(label)-----", range: start.upperBound..<text.endIndex)
        else { return nil }
        let base64 = text[start.upperBound..<end.lowerBound].filter { !$0.isWhitespace }
        return Data(base64Encoded: String(base64)).map { [UInt8]($0) }
    }

    /// `openssh-key-v1\0`, string cipher, string kdf, string kdf options, uint32 count, string
    /// public key (whose first string is the algorithm) — all before the encrypted part.
    private static func parseOpenSSH(_ bytes: [UInt8]) -> (cipher: String, algorithm: String?)? {
        let magic = Array("openssh-key-v1".utf8) + [0]
        guard bytes.starts(with: magic) else { return nil }
        var offset = magic.count
        func readString() -> [UInt8]? {
            guard offset + 4 <= bytes.count else { return nil }
            let length = Int(bytes[offset]) << 24 | Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            offset += 4
            guard length >= 0, offset + length <= bytes.count else { return nil }
            defer { offset += length }
            return Array(bytes[offset..<(offset + length)])
        }
        guard let cipher = readString(), readString() != nil, readString() != nil else { return nil }
        offset += 4 // number of keys
        let publicKey = readString()
        return (String(decoding: cipher, as: UTF8.self), publicKey.flatMap(HostKey.algorithm(ofBlob:)))
    }
}
