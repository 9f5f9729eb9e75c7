import CLibSSH2
import TetherDigest
import Foundation

/// A server host key as the SSH wire carries it (the blob that known_hosts stores in base64).
struct HostKey: Equatable {
    let blob: [UInt8]

    /// The algorithm named inside the blob, e.g. `ssh-ed25519`.
    var algorithm: String { Self.algorithm(ofBlob: blob) ?? "unknown" }

    /// `SHA256:…` exactly as `ssh-keygen -l` and OpenSSH's prompts print it.
    var fingerprint: String { Self.fingerprint(of: blob) }

    /// The key-type bits of libssh2's knownhost typemask for this key.
    var knownHostKeyBits: Int32 { Self.knownHostKeyBits(for: algorithm) }

    /// `ssh-ed25519 SHA256:…`, for messages.
    var summary: String { "\(algorithm) \(fingerprint)" }

    var base64: String { Data(blob).base64EncodedString() }

    static func fingerprint(of blob: [UInt8]) -> String {
        var text = Data(Digest.sha256(blob)).base64EncodedString()
        while text.hasSuffix("=") { text.removeLast() }
        return "SHA256:\(text)"
    }

    /// The first SSH `string` of a public-key blob is its algorithm name.
    static func algorithm(ofBlob blob: [UInt8]) -> String? {
        guard blob.count >= 4 else { return nil }
        let length = Int(blob[0]) << 24 | Int(blob[1]) << 16 | Int(blob[2]) << 8 | Int(blob[3])
        guard length > 0, length <= 64, blob.count >= 4 + length else { return nil }
        return String(decoding: blob[4..<(4 + length)], as: UTF8.self)
    }

    /// Host key algorithms this libssh2 can verify, most preferred first (OpenSSH's own order).
    static let supportedAlgorithms = [
        "ssh-ed25519", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa",
    ]

    static func knownHostKeyBits(for algorithm: String) -> Int32 {
        switch algorithm {
        case "ssh-ed25519": return LIBSSH2_KNOWNHOST_KEY_ED25519
        case "ecdsa-sha2-nistp256": return LIBSSH2_KNOWNHOST_KEY_ECDSA_256
        case "ecdsa-sha2-nistp384": return LIBSSH2_KNOWNHOST_KEY_ECDSA_384
        case "ecdsa-sha2-nistp521": return LIBSSH2_KNOWNHOST_KEY_ECDSA_521
        case "ssh-rsa": return LIBSSH2_KNOWNHOST_KEY_SSHRSA
        case "ssh-dss": return LIBSSH2_KNOWNHOST_KEY_SSHDSS
        default: return LIBSSH2_KNOWNHOST_KEY_UNKNOWN
        }
    }

    static func algorithm(forKnownHostBits bits: Int32) -> String {
        switch bits & LIBSSH2_KNOWNHOST_KEY_MASK {
        case LIBSSH2_KNOWNHOST_KEY_ED25519: return "ssh-ed25519"
        case LIBSSH2_KNOWNHOST_KEY_ECDSA_256: return "ecdsa-sha2-nistp256"
        case LIBSSH2_KNOWNHOST_KEY_ECDSA_384: return "ecdsa-sha2-nistp384"
        case LIBSSH2_KNOWNHOST_KEY_ECDSA_521: return "ecdsa-sha2-nistp521"
        case LIBSSH2_KNOWNHOST_KEY_SSHRSA: return "ssh-rsa"
        case LIBSSH2_KNOWNHOST_KEY_SSHDSS: return "ssh-dss"
        default: return "unknown"
        }
    }
}
