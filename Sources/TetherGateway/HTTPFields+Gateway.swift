import HTTPTypes
import TetherCore

/// Header names the gateway reads or writes that HTTPTypes does not predefine.
extension HTTPFields {
    static let lastEventID = HTTPField.Name("Last-Event-ID")!
    static let forwardedProto = HTTPField.Name("X-Forwarded-Proto")!
    /// On `GET /v1/approvals`: the profiles whose backend could not be asked (comma-separated,
    /// each percent-encoded).
    static let unavailableProfiles = HTTPField.Name("Tether-Unavailable-Profiles")!
    static let accelBuffering = HTTPField.Name("X-Accel-Buffering")!
    /// `GatewayIdentity` on an event stream: this gateway's id and its upstream (comma-separated).
    static let gatewayID = HTTPField.Name(GatewayIdentity.idHeader)!
    static let gatewayUpstream = HTTPField.Name(GatewayIdentity.upstreamHeader)!
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
    /// Where a browser's request came from (`cross-site`, `same-site`, `same-origin`, `none`).
    static let fetchSite = HTTPField.Name("Sec-Fetch-Site")!
    static let retryAfter = HTTPField.Name("Retry-After")!
}
