import CLibSSH2
import Foundation
import Logging

/// One OpenSSH known_hosts-format file loaded into libssh2's knownhost collection, which matches
/// plain names, `[host]:port` names and hashed `|1|salt|hash` names (HMAC-SHA1) for us.
/// Lines libssh2 cannot parse are skipped one by one (libssh2's own readfile stops at the first);
/// `@revoked` keys are kept aside, `@cert-authority` lines are ignored (no certificates here).
final class KnownHostsFile {
    enum Match {
        case match
        /// Recorded for this name with the same key type, but a different key.
        case mismatch(recorded: HostKeyRecord)
        case notFound
    }

    struct HostKeyRecord {
        let algorithm: String
        let fingerprint: String
    }

    let path: String
    private let collection: OpaquePointer
    private(set) var revokedBlobs: [[UInt8]] = []

    /// A missing file is an empty one; an unreadable one is a configuration error.
    init(session: SSHSession, path: String, role: String, logger: Logger) throws(SSHError) {
        guard let collection = libssh2_knownhost_init(session.raw) else {
            throw SSHError(.handshakeFailed, "libssh2 could not allocate a known-hosts collection")
        }
        self.collection = collection
        self.path = path
        guard FileManager.default.fileExists(atPath: path) else { return }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw SSHError(.invalidConfiguration, "cannot read the \(role) \(path); check its permissions")
        }
        for (index, rawLine) in String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).enumerated() {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("@revoked") {
                if let blob = Self.keyBlob(ofFields: line.split(whereSeparator: \.isWhitespace).dropFirst(2)) {
                    revokedBlobs.append(blob)
                }
                continue
            }
            if line.hasPrefix("@") { continue }
            let rc = line.withCString { libssh2_knownhost_readline(collection, $0, strlen($0), LIBSSH2_KNOWNHOST_FILE_OPENSSH) }
            if rc < 0 {
                logger.debug("skipping a line libssh2 cannot parse", metadata: ["file": "\(path)", "line": "\(index + 1)"])
            }
        }
    }

    deinit { libssh2_knownhost_free(collection) }

    /// Looks `name` (already `host` or `[host]:port`, lower-cased) up with the key's own type.
    /// Passing port -1 keeps libssh2 from also trying the bare host for a non-22 port, which
    /// OpenSSH never does.
    func check(name: String, key: HostKey) -> Match {
        check(name: name, blob: key.blob, typeBits: key.knownHostKeyBits)
    }

    /// Whether any key of this algorithm is recorded for `name` (checked with a dummy key).
    func hasKey(for name: String, algorithm: String) -> Bool {
        if case .mismatch = check(name: name, blob: [0], typeBits: HostKey.knownHostKeyBits(for: algorithm)) { return true }
        return false
    }

    /// Any recorded key for `name`, whatever its type (for "a key of another type is known").
    func anyRecord(for name: String) -> HostKeyRecord? {
        if case .mismatch(let record) = check(name: name, blob: [0], typeBits: 0) { return record }
        return nil
    }

    private func check(name: String, blob: [UInt8], typeBits: Int32) -> Match {
        var found: UnsafeMutablePointer<libssh2_knownhost>?
        let typemask = LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | typeBits
        let rc = blob.withUnsafeBytes { bytes in
            libssh2_knownhost_checkp(collection, name, -1, bytes.baseAddress?.assumingMemoryBound(to: CChar.self),
                                     bytes.count, typemask, &found)
        }
        switch rc {
        case LIBSSH2_KNOWNHOST_CHECK_MATCH:
            return .match
        case LIBSSH2_KNOWNHOST_CHECK_MISMATCH:
            let algorithm = HostKey.algorithm(forKnownHostBits: found?.pointee.typemask ?? 0)
            var fingerprint = "(unreadable key)"
            if let text = found?.pointee.key, let decoded = Data(base64Encoded: String(cString: text)) {
                fingerprint = HostKey.fingerprint(of: [UInt8](decoded))
            }
            return .mismatch(recorded: HostKeyRecord(algorithm: algorithm, fingerprint: fingerprint))
        default:
            return .notFound
        }
    }

    private static func keyBlob(ofFields fields: ArraySlice<Substring>) -> [UInt8]? {
        // `@revoked <hosts> <type> <base64> [comment]`: fields here start at <type>.
        guard fields.count >= 2, let data = Data(base64Encoded: String(fields[fields.startIndex + 1])) else { return nil }
        return [UInt8](data)
    }
}
