/// What `GET /v1/health` reports.
public enum GatewayInfo {
    /// Set by the CLI to the tether version; the library does not depend on the transport layer.
    nonisolated(unsafe) public static var version = "0"
}
