import Foundation
import TetherCore

/// What keeps an open gateway (no tokens, loopback only) from being driven by a web page the
/// user happens to visit. With no credential to present, the browser itself is the risk:
/// - a page on another site can send a form or a `no-cors` fetch to `http://127.0.0.1:7420`
///   (an approval, a prompt): the browser marks it with that site's `Origin`, which is refused
///   unless it is the gateway's own (the request's `Host`);
/// - DNS rebinding makes the gateway same-origin with such a page (its name resolves to
///   127.0.0.1): the `Host` is then that name, refused unless it is an IP address,
///   `localhost`, or `public_url`'s host.
/// - a cross-site `<img>`, `<script>` or link is a GET that carries no `Origin` at all: the
///   browser's `Sec-Fetch-Site` says where it came from, and `cross-site` or `same-site` (another
///   port or subdomain of the same site) is refused.
/// Clients that are not browsers send no `Origin` and no `Sec-Fetch-Site`, and the address they
/// dialled as `Host`.
struct OpenGatewayGuard: Sendable {
    /// `public_url`'s host, lowercased: the name a proxy in front of the gateway is reached by.
    let publicHost: String?

    init(publicURL: String?) {
        publicHost = publicURL.flatMap { URL(string: $0)?.host?.lowercased() }
    }

    /// Why the request is refused, nil when it may go on.
    func problem(host: String?, origin: String?, fetchSite: String? = nil) -> ProblemDetails? {
        if let fetchSite, Self.foreignFetchSites.contains(fetchSite.lowercased()) {
            return ProblemDetails(.forbidden, "a request from another site (Sec-Fetch-Site: \(fetchSite)) may not use this gateway",
                                  detail: "without tokens only the gateway's own page may call it from a browser; "
                                      + "add tokens to the [serve] table to let other pages in")
        }
        // An empty Host is allowed for a request with no authority (RFC 9112 §3.2): no name to check.
        if let host, !host.isEmpty {
            // The port does not matter for the name; a Host that does not parse is not checked
            // by name, so it is refused.
            guard let name = HostPort(authority: host.lowercased(), defaultPort: 80)?.host else {
                return ProblemDetails(.forbidden, "this gateway cannot read the Host header \(host)",
                                      detail: "send the address you dialled: host, host:port or [ipv6]:port")
            }
            if !allows(name) {
                return ProblemDetails(.forbidden, "this gateway does not answer to the name \(name)",
                                      detail: "without tokens it answers to an IP address, localhost or public_url's host only "
                                          + "(a web page that made its name point here must not drive your agents); "
                                          + "set public_url, or reach it by address")
            }
        }
        if let origin, !(host.map { Self.isSameOrigin(origin, host: $0) } ?? false) {
            return ProblemDetails(.forbidden, "a web page from \(origin) may not use this gateway",
                                  detail: "without tokens only the gateway's own page may call it from a browser; "
                                      + "add tokens to the [serve] table to let other pages in")
        }
        return nil
    }

    /// Whether a browser's `Origin` is the site the request went to (`Host`, its port
    /// defaulting to the origin scheme's).
    static func isSameOrigin(_ origin: String, host: String) -> Bool {
        guard let url = URL(string: origin), let scheme = url.scheme?.lowercased(), var originHost = url.host?.lowercased(),
              let defaultPort = defaultPort(scheme), let requested = HostPort(authority: host.lowercased(), defaultPort: defaultPort)
        else { return false }  // "null" too: a sandboxed or file page
        if originHost.hasPrefix("[") { originHost = String(originHost.dropFirst().dropLast()) }
        return requested == HostPort(host: originHost, port: url.port ?? defaultPort)
    }

    /// `Sec-Fetch-Site` values of a request another site started (`same-origin` and `none`, a
    /// typed URL or a bookmark, are the gateway's own).
    static let foreignFetchSites: Set<String> = ["cross-site", "same-site"]

    private func allows(_ name: String) -> Bool {
        name == "localhost" || name == publicHost || Self.isIPAddress(name)
    }

    static func defaultPort(_ scheme: String) -> Int? {
        switch scheme {
        case "http": 80
        case "https": 443
        default: nil
        }
    }

    static func isIPAddress(_ name: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, name, &v4) == 1 || inet_pton(AF_INET6, name, &v6) == 1
    }
}
