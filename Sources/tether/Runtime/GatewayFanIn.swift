import TetherConfig
import TetherCore
import TetherGateway
import TetherGatewayClient

/// `tether serve` over `gateway` profiles: a team's central gateway fanning in each machine's.
/// Each remote profile becomes a served profile of its own, named `LOCAL/REMOTE` (its events say
/// so, and keep their backend), subscribed from the remote log by seq. Before anything listens,
/// each remote gateway is asked who it is: one that is this gateway, or fans it in (directly or
/// through others), is a loop, refused at start.
struct GatewayFanIn {
    let context: CommandContext
    /// This gateway's id (kept in its log).
    let id: String
    /// The ids of the gateways fanned in so far, and of those they fan in.
    private(set) var upstream: Set<String> = []

    init(context: CommandContext, config: ConfigFile, database: String, password: String?) async throws {
        self.context = context
        do {
            id = try await EventStoreOpening.open(database, password: password, logger: context.logger).gatewayID()
        } catch let error as GatewayStartError {
            throw TetherError(.configuration, error.description, hint: error.hint)
        } catch {
            throw TetherError(.configuration, "\(error)")
        }
    }

    /// The served profiles `gateway` stands for.
    mutating func profiles(of gateway: GatewayBackend) async throws -> [ServedProfile] {
        let local = gateway.configuration.scope.local
        let identity: GatewayIdentity?
        do {
            identity = try await gateway.identity()
        } catch let error as TetherError where error.code == .unavailable || error.code == .timeout {
            // A machine that is off: its profile is still served (and subscribed when it comes
            // back), but only when it is named, as nothing else can be listed.
            guard gateway.configuration.scope.remote != nil else {
                throw TetherError(error.code, "cannot fan in profile \(local): \(error.message)",
                                  hint: "start that gateway first, or set profiles.\(local).remote_profile so it is served while it is down")
            }
            context.logger.warning("cannot reach the gateway of profile \(local) to check for a loop; serving it and checking each time it connects",
                                   metadata: ["error": "\(error.message)"])
            identity = nil
        }
        if let identity {
            if let loop = gateway.loop(identity, refusing: [id]) { throw loop }
            upstream.formUnion(identity.lineage)
        }
        let remotes: [GatewayBackend.RemoteProfile]
        if identity == nil, let remote = gateway.configuration.scope.remote {
            remotes = [.init(name: remote, kind: nil, capabilities: GatewayBackend.relayedCapabilities)]
        } else {
            let served = try await gateway.servedProfiles()
            if let remote = gateway.configuration.scope.remote {
                guard let found = served.first(where: { $0.name == remote }) else {
                    throw TetherError(.configuration, "profile \(local) names remote_profile \"\(remote)\", which its gateway does not serve",
                                      hint: "it serves: \(served.map(\.name).joined(separator: ", "))")
                }
                remotes = [found]
            } else {
                remotes = served
            }
        }
        return remotes.map { remote in
            ServedProfile(name: "\(local)/\(remote.name)", backend: gateway.standing(for: remote, refusing: [id]), shownKind: remote.kind)
        }
    }
}
