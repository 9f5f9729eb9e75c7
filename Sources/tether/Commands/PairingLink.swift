import Foundation
import Logging
import TetherGateway

/// The one-time link `tether pair` and `tether serve --pair` print (gateway.md, "Pairing"): the
/// page's URL (`public_url` when set, else the listen address) with a fresh pairing code in its
/// fragment — never a token. The code is minted in the gateway's database, so a running gateway
/// honours it. The URL is data (`tether pair` prints it on stdout); the QR code of it and the
/// words around it are for the person at the terminal (stderr).
enum PairingLink {
    static func mint(database: String, password: String?, base: String, logger: Logger) async throws -> String {
        let log = try await EventStoreOpening.open(database, password: password, logger: logger)
        let code = try await log.mintPairingCode()
        return (base.hasSuffix("/") ? base : base + "/") + "#pair=" + code.code
    }

    /// The page's address for a gateway listening at `listen`, unless `public_url` says another.
    static func base(listen: ListenAddress, publicURL: String?) -> String {
        if let publicURL { return publicURL }
        let host = ["0.0.0.0", "::", ""].contains(listen.host) ? "127.0.0.1" : listen.host
        return ListenAddress(host: host, port: listen.port).url(boundPort: listen.port)
    }

    /// The QR code, then how to use it; `url` too when it is not printed on stdout.
    static func show(_ url: String, listen: ListenAddress, publicURL: String?, withURL: Bool) {
        var text = ""
        do {
            text += try QRCodeText.render(url, ansi: isatty(2) == 1)
        } catch {
            text += "(no QR code: \(error))\n"
        }
        text += "Scan the code with the phone's camera, or open the link, within 5 minutes: it logs one browser in, once.\n"
        if publicURL == nil && (listen.isLoopback || ["0.0.0.0", "::"].contains(listen.host)) {
            text += "The link names \(base(listen: listen, publicURL: nil)); a phone reaches it through a tunnel or the LAN: "
                + "set [serve] public_url to the address it uses.\n"
        }
        if withURL { text += url + "\n" }
        LineOutput.standardError.write(text)
    }
}
