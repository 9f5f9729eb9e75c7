import Hummingbird
import NIOCore

/// Hummingbird's per-request context plus what the gateway needs: the connection (so a slow SSE
/// client can be closed) and how the request was authenticated.
public struct GatewayRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public let channel: any Channel
    /// The session cookie's value when the request was authenticated by cookie.
    public var sessionCookie: String?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}
