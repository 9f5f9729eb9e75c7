#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import TetherCore

/// Who Tether is on the relay. The relay keeps one socket per peer id and a new registration
/// kicks the old one, so (protocols/notification.md §8): `watch` registers with the stable id
/// — the profile's `peer_id`, else one derived from user, host and profile and kept in the
/// state directory — because pushes and relay-queued messages are addressed to it; one-shot
/// commands register as `<stable>~<random>`, so they never kick a running `watch` off (the
/// desktop answers each request's `from`).
enum NotificationPeerIdentity {
    /// The stable id: `configured`, else the stored default, else a new default (stored).
    static func stable(configured: String?, store: NotificationQueueStore, profile: String) throws(TetherError) -> String {
        if let configured, !configured.isEmpty { return configured }
        if let data = FileManager.default.contents(atPath: store.peerIDFile) {
            let stored = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if !stored.isEmpty { return stored }
        }
        let id = derived(user: userName(), host: hostName(), profile: profile)
        try store.write(Array((id + "\n").utf8), to: store.peerIDFile)
        return id
    }

    /// `tether-<user>@<host>-<profile>`, each part reduced to `[A-Za-z0-9._-]`.
    static func derived(user: String, host: String, profile: String) -> String {
        func clean(_ text: String) -> String {
            let kept = String(text.map { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) ? $0 : "-" })
            return kept.isEmpty ? "unknown" : kept
        }
        let shortHost = host.split(separator: ".").first.map(String.init) ?? host
        return "tether-\(clean(user))@\(clean(shortHost))-\(clean(profile))"
    }

    /// A fresh id for one command's connection.
    static func ephemeral(from stable: String) -> String {
        "\(stable)~\(String(UInt32.random(in: .min ... .max), radix: 16))"
    }

    static func userName() -> String {
        if let entry = getpwuid(getuid()), let name = entry.pointee.pw_name { return String(cString: name) }
        return ProcessInfo.processInfo.environment["USER"] ?? "user"
    }

    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "host" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
