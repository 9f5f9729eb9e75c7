import TetherCore

/// Tether decisions ⇄ OpenCode permission replies (`once | always | reject`).
enum OpenCodeDecision {
    /// What an OpenCode permission can be answered with. `cancel` rejects and aborts the turn.
    static let supported: [Decision] = [.accept, .acceptForSession, .decline, .cancel]

    static func reply(for decision: Decision) throws -> String {
        switch decision {
        case .accept: return "once"
        case .acceptForSession: return "always"
        case .decline, .cancel: return "reject"
        case .acceptWithAmendment:
            throw TetherError(.unsupported, "OpenCode cannot accept a permission with an amended command",
                              hint: "use --decision accept, accept_for_session (OpenCode's \"always\"), decline or cancel")
        }
    }

    static func decision(forReply reply: String) -> String {
        switch reply {
        case "once": return Decision.accept.rawValue
        case "always": return Decision.acceptForSession.rawValue
        case "reject": return Decision.decline.rawValue
        default: return reply
        }
    }
}
