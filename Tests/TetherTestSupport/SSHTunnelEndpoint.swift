import Foundation

/// What a profile with `tunnel = NAME` needs from the test machine: a real sshd on loopback
/// (started), a fresh client key it trusts, and a known_hosts file that trusts it back — or is
/// empty, for the unknown-host cases.
struct SSHTunnelEndpoint: Sendable {
    let server: SSHServerFixture
    let key: String
    let knownHosts: String

    init(trusted: Bool = true, label: String = "client") throws {
        server = try SSHServerFixture()
        let directory = try TestFiles.makeTemporaryDirectory(label)
        key = directory + "/id_ed25519"
        try Tools.generateKey(type: "ed25519", at: key)
        try server.authorize(publicKeyOf: key)
        try server.start()
        knownHosts = directory + "/known_hosts"
        try (trusted ? try server.knownHostsLine() + "\n" : "").write(toFile: knownHosts, atomically: true, encoding: .utf8)
    }

    /// The config's `[tunnels.vps]` table for this endpoint, with `extra` lines appended.
    func table(extra: String = "") -> String {
        """
        [tunnels.vps]
        host = "127.0.0.1"
        port = \(server.port)
        user = "root"
        identity = "\(key)"
        known_hosts = "\(knownHosts)"
        \(extra)
        """
    }
}
