import TetherCore

/// The lifecycle of the permission requests put to the editor — pure state, actions out. It
/// guarantees the contract's "exactly once": an approval gets at most one decision from the
/// editor, none once it was settled elsewhere or withdrawn, and none for the `cancelled` answers
/// that are part of a `session/cancel`.
public struct PermissionRequests: Sendable {
    /// The editor's answer to `session/request_permission`.
    public enum Answer: Sendable, Equatable {
        case selected(optionID: String)
        case cancelled
        /// Not a `RequestPermissionResponse` (or a JSON-RPC error).
        case unreadable
    }

    public enum Action: Sendable, Equatable {
        /// Send this decision to the backend (`approve`).
        case approve(approvalID: String, decision: Decision)
        /// Withdraw the editor's open request: `$/cancel_request {requestId}`.
        case withdraw(requestID: JSONValue)
    }

    private enum State: Sendable, Equatable { case open, answered, withdrawn }

    private struct Entry: Sendable {
        var ask: PermissionAsk
        var state: State
        /// `session/cancel` came while it was open: a `cancelled` answer is part of that abort.
        var cancelledBySession = false
    }

    private var entries: [JSONValue: Entry] = [:]
    private var requestForApproval: [String: JSONValue] = [:]

    public init() {}

    /// The request `requestID` now asks the editor about `ask`.
    public mutating func asked(_ ask: PermissionAsk, requestID: JSONValue) {
        entries[requestID] = Entry(ask: ask, state: .open)
        requestForApproval[ask.approvalID] = requestID
    }

    /// Whether `requestID` is one of ours.
    public func isPermissionRequest(_ requestID: JSONValue) -> Bool { entries[requestID] != nil }

    /// The editor answered. A second answer, one to a withdrawn request, and a `cancelled` that
    /// belongs to `session/cancel` send nothing.
    public mutating func editorAnswered(requestID: JSONValue, _ answer: Answer) -> [Action] {
        guard var entry = entries[requestID], entry.state == .open else { return [] }
        entry.state = .answered
        entries[requestID] = entry
        switch answer {
        case .selected(let optionID):
            guard let option = entry.ask.options.first(where: { $0.optionID == optionID }) else {
                return declineOrCancel(entry)
            }
            return [.approve(approvalID: entry.ask.approvalID, decision: option.decision)]
        case .cancelled, .unreadable:
            if entry.cancelledBySession { return [] }
            return declineOrCancel(entry)
        }
    }

    /// Outside `session/cancel`, an editor that dismisses the request declines the tool.
    private func declineOrCancel(_ entry: Entry) -> [Action] {
        for decision in [Decision.decline, .cancel] where entry.ask.accepted.contains(decision) {
            return [.approve(approvalID: entry.ask.approvalID, decision: decision)]
        }
        return []
    }

    /// The backend says the approval is settled. If the editor has not answered, someone else
    /// did (`tether approve`, the gateway's page): withdraw the editor's request.
    public mutating func resolved(approvalID: String) -> [Action] {
        guard let requestID = requestForApproval[approvalID], var entry = entries[requestID], entry.state == .open else {
            return []
        }
        entry.state = .withdrawn
        entries[requestID] = entry
        return [.withdraw(requestID: requestID)]
    }

    /// `session/cancel`: the editor answers its open requests `cancelled` as part of the abort.
    public mutating func sessionCancelled(_ session: String) {
        for (id, entry) in entries where entry.ask.session == session && entry.state == .open {
            entries[id]?.cancelledBySession = true
        }
    }

    /// The session's turn ended (its prompt answers now): requests still open are moot.
    public mutating func turnEnded(session: String) -> [Action] {
        var actions: [Action] = []
        for (id, entry) in entries where entry.ask.session == session && entry.state == .open {
            entries[id]?.state = .withdrawn
            actions.append(.withdraw(requestID: id))
        }
        return actions
    }
}
