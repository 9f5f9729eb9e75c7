import TetherCore
import TetherStreaming

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
        /// Send this decision to the backend (`approve`); `session`: where to say it if that fails.
        /// `answers`: a question's, as the chosen option carries it.
        case approve(approvalID: String, decision: Decision, answers: [[String]] = [], session: String)
        /// Withdraw the editor's open request: `$/cancel_request {requestId}`.
        case withdraw(requestID: JSONValue)
    }

    /// The requests the editor has not answered, and which we have not withdrawn. A settled one
    /// is forgotten: a later answer to it is not ours and sends nothing.
    private var open: [JSONValue: PermissionAsk] = [:]
    private var requestForApproval: [String: JSONValue] = [:]
    /// Sessions between `session/cancel` and their turn's end: the editor answers their requests
    /// `cancelled` as part of the cancel — also those asked after it, while the turn winds down.
    private var cancelledSessions: Set<String> = []

    public init() {}

    /// Nothing is held.
    var isEmpty: Bool { open.isEmpty && requestForApproval.isEmpty && cancelledSessions.isEmpty }

    /// The request `requestID` now asks the editor about `ask`.
    public mutating func asked(_ ask: PermissionAsk, requestID: JSONValue) {
        open[requestID] = ask
        requestForApproval[ask.approvalID] = requestID
    }

    /// Whether `requestID` is one of ours and still waits for the editor's answer.
    public func isOpen(_ requestID: JSONValue) -> Bool { open[requestID] != nil }

    /// The editor answered. A second answer, one to a withdrawn request, and a `cancelled` that
    /// belongs to `session/cancel` send nothing.
    public mutating func editorAnswered(requestID: JSONValue, _ answer: Answer) -> [Action] {
        guard let ask = settle(requestID) else { return [] }
        switch answer {
        case .selected(let optionID):
            guard let option = ask.options.first(where: { $0.optionID == optionID }) else {
                return declineOrCancel(ask)
            }
            return [.approve(approvalID: ask.approvalID, decision: option.decision, answers: option.answers, session: ask.session)]
        case .cancelled, .unreadable:
            if cancelledSessions.contains(ask.session) { return [] }
            return declineOrCancel(ask)
        }
    }

    /// Forgets the open request `requestID`, and returns what it asked.
    private mutating func settle(_ requestID: JSONValue) -> PermissionAsk? {
        guard let ask = open.removeValue(forKey: requestID) else { return nil }
        if requestForApproval[ask.approvalID] == requestID { requestForApproval[ask.approvalID] = nil }
        return ask
    }

    /// Outside `session/cancel`, an editor that dismisses the request declines the tool.
    private func declineOrCancel(_ ask: PermissionAsk) -> [Action] {
        for decision in [Decision.decline, .cancel] where ask.accepted.contains(decision) {
            return [.approve(approvalID: ask.approvalID, decision: decision, session: ask.session)]
        }
        return []
    }

    /// The backend says the approval is settled. If the editor has not answered, someone else
    /// did (`tether approve`, the gateway's page): withdraw the editor's request.
    public mutating func resolved(approvalID: String) -> [Action] {
        guard let requestID = requestForApproval[approvalID], settle(requestID) != nil else { return [] }
        return [.withdraw(requestID: requestID)]
    }

    /// `session/cancel`: until the turn ends, the editor answers the session's requests
    /// `cancelled` as part of the abort.
    public mutating func sessionCancelled(_ session: String) {
        cancelledSessions.insert(session)
    }

    /// The session's turn ended (its prompt answers now): requests still open are moot.
    public mutating func turnEnded(session: String) -> [Action] {
        cancelledSessions.remove(session)
        let moot = open.filter { $0.value.session == session }.keys
        for id in moot { _ = settle(id) }
        return moot.map { .withdraw(requestID: $0) }
    }
}
