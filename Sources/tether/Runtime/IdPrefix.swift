import TetherCore

/// Ids as a person types them: any prefix that matches one id of the kind the backend lists
/// (as `git` takes a commit's), and `last` for the newest pending approval. A prefix that matches
/// several is refused with the ids it matched; one that matches none is passed on whole, for the
/// backend to judge (it may know ids it does not list: an archived thread, a legacy server's
/// permission).
struct IdPrefix {
    /// What the ids name, for messages: "session", "approval".
    let noun: String
    /// The command that lists them, for hints: "sessions list".
    let listing: String

    static let session = IdPrefix(noun: "session", listing: "sessions list")
    static let approval = IdPrefix(noun: "approval", listing: "approvals")

    /// The one id `typed` stands for among `ids`, or `typed` itself when it matches none.
    func resolve(_ typed: String, among ids: [String]) throws -> String {
        if typed.isEmpty {
            throw TetherError(.usage, "an empty \(noun) id", hint: "`tether \(listing)` shows them")
        }
        if ids.contains(typed) { return typed }
        let matches = ids.filter { $0.hasPrefix(typed) }
        switch matches.count {
        case 0: return typed
        case 1: return matches[0]
        default:
            let shown = matches.prefix(10).map { "  " + $0 }.joined(separator: "\n")
            let more = matches.count > 10 ? "\n  … and \(matches.count - 10) more" : ""
            throw TetherError(.usage, "\"\(typed)\" is the start of \(matches.count) \(noun) ids:\n\(shown)\(more)",
                              hint: "type more of the id, enough to pick one")
        }
    }
}

/// The word that stands for the newest pending approval.
let newestApprovalWord = "last"

extension Backend {
    /// The session id `typed` (a whole id or an unambiguous prefix) stands for. A backend that
    /// cannot list sessions gets `typed` as it is.
    func resolveSession(_ typed: String) async throws -> String {
        guard capabilities.contains(.sessions) else { return typed }
        let sessions: [Session]
        do {
            sessions = try await listSessions(SessionListRequest(includeArchived: true))
        } catch let error as TetherError where error.code == .unsupported {
            return typed
        }
        return try IdPrefix.session.resolve(typed, among: sessions.map(\.id))
    }

    /// The approval id `typed` stands for: a whole id, an unambiguous prefix of a pending one,
    /// or `last` (the newest pending: the last the backend lists); with the pending approval
    /// itself when it is listed. Where the backend cannot list what is pending, a prefix is
    /// passed on whole and `last` is refused.
    func resolveApproval(_ typed: String) async throws -> (id: String, pending: Approval?) {
        let pending: [Approval]
        do {
            pending = try await pendingApprovals(session: nil)
        } catch let error as TetherError where error.code == .unsupported && typed != newestApprovalWord {
            return (typed, nil)
        }
        if typed == newestApprovalWord {
            guard let newest = pending.last else {
                throw TetherError(.notFound, "no approval is pending, so there is no `last` to answer",
                                  hint: "`tether approvals` lists what is pending; `tether events --follow` shows new ones")
            }
            return (newest.id, newest)
        }
        let id = try IdPrefix.approval.resolve(typed, among: pending.map(\.id))
        return (id, pending.first { $0.id == id })
    }
}
