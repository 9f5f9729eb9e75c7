import Hummingbird
import Logging
import TetherCore

/// The HTTP API (v1): what each route does, over the served profiles and the journal. The routes
/// themselves are registered in `GatewayAPI+Routes.swift`.
struct GatewayAPI: Sendable {
    let profiles: [ServedProfile]
    let journal: EventJournal
    let auth: GatewayAuth
    let openGuard: OpenGatewayGuard
    let approvals: ApprovalDesk
    let heartbeat: Duration
    let version: String
    let logger: Logger
    /// Per-session followers of backends that stream per session, by profile name.
    let sessionFollows: [String: SessionFollows]

    func profile(_ context: GatewayRequestContext) throws -> ServedProfile {
        let name = context.parameters.get("profile") ?? ""
        guard let profile = profiles.first(where: { $0.name == name }) else {
            throw ProblemDetails(.notFound, "no served profile \(name)",
                                 detail: "GET /v1/profiles lists the profiles this gateway serves")
        }
        return profile
    }

    func require(_ capability: BackendCapabilities, _ what: String, of profile: ServedProfile) throws {
        guard profile.backend.capabilities.contains(capability) else {
            throw ProblemDetails(.unsupported, "\(what) is not supported by the \(profile.kind.rawValue) backend",
                                 detail: "profile \(profile.name) cannot do this; GET /v1/profiles shows each profile's capabilities")
        }
    }

    /// Runs a backend call, turning its failure into a problem that says what failed.
    func calling<T: Sendable>(_ what: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let problem as ProblemDetails {
            throw problem
        } catch let error as TetherError {
            throw ProblemDetails(error, doing: what)
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw ProblemDetails(.unavailable, "\(what) failed", detail: "\(error)")
        }
    }

    static func line(_ event: Event) -> String {
        var codec = EventCodec()
        var bytes = codec.encode(event)
        bytes.removeLast()
        return String(decoding: bytes, as: UTF8.self)
    }
}
