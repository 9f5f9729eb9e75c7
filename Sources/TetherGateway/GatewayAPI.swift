import Foundation
import Hummingbird
import Logging
import TetherCore

/// The HTTP API (v1): what each route does, over the served profiles and the journal. The routes
/// themselves are registered in `GatewayAPI+Routes.swift`.
struct GatewayAPI: Sendable {
    let profiles: [ServedProfile]
    let journal: EventJournal
    let auth: GatewayAuth
    /// Wrong tokens per client address (bearer and login alike).
    let authFailures: AuthFailureLimiter
    /// The login cookies, kept in the log's database.
    var logins: KeptLogins { KeptLogins(auth: auth, store: journal.log) }
    let openGuard: OpenGatewayGuard
    let approvals: ApprovalDesk
    let heartbeat: Duration
    let version: String
    /// Who this gateway is, for gateways that fan it in.
    let identity: GatewayIdentity
    let logger: Logger
    /// Per-session followers of backends that stream per session, by profile name.
    let sessionFollows: [String: SessionFollows]

    /// The profile a route names; the router hands the segment over as sent, so it is
    /// percent-decoded here (a fanned-in profile is named `LOCAL/REMOTE`, sent as `LOCAL%2FREMOTE`).
    func profile(_ context: GatewayRequestContext) throws -> ServedProfile {
        let sent = context.parameters.get("profile") ?? ""
        let name = sent.removingPercentEncoding ?? sent
        guard let profile = profiles.first(where: { $0.name == name }) else {
            throw ProblemDetails(.notFound, "no served profile \(name)",
                                 detail: "GET /v1/profiles lists the profiles this gateway serves")
        }
        return profile
    }

    /// The id a route names in its path (`{session}`, `{approval}`, …). It becomes a segment of
    /// the backend's URL, sent with the backend's credentials: a dot segment (`.`, `..`), whole or
    /// as a part of a composite id, would name another route there, so it is refused here.
    /// The router hands the segment over as sent: it is percent-decoded here, once.
    func pathID(_ parameter: String, _ context: GatewayRequestContext) throws -> String {
        let sent = context.parameters.get(parameter) ?? ""
        guard let id = sent.removingPercentEncoding else {
            throw ProblemDetails(.badRequest, "the \(parameter) id \"\(sent)\" is not percent-encoded correctly",
                                 detail: "encode each byte of the id that is not a letter, a digit or -._~ as %XX")
        }
        guard !id.isEmpty, !CompositeID.hasDotSegment(id) else {
            throw ProblemDetails(.badRequest, "\"\(id)\" is not a valid \(parameter) id",
                                 detail: "an id is one path segment as the backend gave it; \".\" and \"..\" are refused")
        }
        return id
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
