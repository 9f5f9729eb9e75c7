import Testing
import TetherCore
@testable import TetherACP
import TetherStreaming

@Suite struct PermissionRequestsTests {
    let ask = PermissionAsk(approvalID: "job~appr", session: "s", toolCall: ["toolCallId": "call_1"],
                            options: PermissionAsk.options(for: [.accept, .acceptForSession, .decline]),
                            accepted: [.accept, .acceptForSession, .acceptWithAmendment, .decline, .cancel])

    @Test func optionsMapDecisionsToACPKinds() {
        let options = PermissionAsk.options(for: [.accept, .acceptForSession, .acceptWithAmendment, .decline, .cancel])
        #expect(options.map(\.kind) == ["allow_once", "allow_always", "reject_once"])
        #expect(options.map(\.optionID) == ["accept", "accept_for_session", "decline"])
    }

    @Test(arguments: [("accept", Decision.accept), ("accept_for_session", .acceptForSession), ("decline", .decline)])
    func theSelectedOptionIsSentExactlyOnce(option: String, decision: Decision) {
        var requests = PermissionRequests()
        requests.asked(ask, requestID: 1)
        #expect(requests.editorAnswered(requestID: 1, .selected(optionID: option)) == [.approve(approvalID: "job~appr", decision: decision, session: "s")])
        #expect(requests.editorAnswered(requestID: 1, .selected(optionID: option)).isEmpty)
        #expect(requests.resolved(approvalID: "job~appr").isEmpty)
    }

    @Test func anApprovalResolvedElsewhereWithdrawsTheRequestAndALateAnswerSendsNothing() {
        var requests = PermissionRequests()
        requests.asked(ask, requestID: 2)
        #expect(requests.resolved(approvalID: "job~appr") == [.withdraw(requestID: 2)])
        #expect(requests.editorAnswered(requestID: 2, .selected(optionID: "accept")).isEmpty)
        #expect(requests.resolved(approvalID: "job~appr").isEmpty)
    }

    @Test func aCancelledAnswerOutsideSessionCancelDeclines() {
        var requests = PermissionRequests()
        requests.asked(ask, requestID: 3)
        #expect(requests.editorAnswered(requestID: 3, .cancelled) == [.approve(approvalID: "job~appr", decision: .decline, session: "s")])
    }

    @Test func cancelledAnswersThatArePartOfSessionCancelSendNothing() {
        var requests = PermissionRequests()
        requests.asked(ask, requestID: 4)
        requests.sessionCancelled("s")
        #expect(requests.editorAnswered(requestID: 4, .cancelled).isEmpty)
    }

    @Test func theTurnsEndWithdrawsOpenRequestsOfThatSessionOnly() {
        var requests = PermissionRequests()
        requests.asked(ask, requestID: 5)
        var other = ask
        other.session = "t"
        other.approvalID = "other"
        requests.asked(other, requestID: 6)
        #expect(requests.turnEnded(session: "s") == [.withdraw(requestID: 5)])
        #expect(requests.editorAnswered(requestID: 5, .selected(optionID: "accept")).isEmpty)
        #expect(requests.editorAnswered(requestID: 6, .selected(optionID: "accept")) == [.approve(approvalID: "other", decision: .accept, session: "t")])
    }

    @Test func anUnknownOptionOrAnUnreadableAnswerDeclines() {
        var requests = PermissionRequests()
        requests.asked(ask, requestID: 7)
        #expect(requests.editorAnswered(requestID: 7, .selected(optionID: "bogus")) == [.approve(approvalID: "job~appr", decision: .decline, session: "s")])
        #expect(!requests.isOpen(8))
    }

    /// An approval that comes between `session/cancel` and the turn's end: the editor answers it
    /// `cancelled` as part of the cancel too.
    @Test func aRequestAskedAfterSessionCancelIsPartOfItToo() {
        var requests = PermissionRequests()
        requests.sessionCancelled("s")
        requests.asked(ask, requestID: 9)
        #expect(requests.editorAnswered(requestID: 9, .cancelled).isEmpty)
        // Once the turn has ended, the session's next turn is not cancelled.
        _ = requests.turnEnded(session: "s")
        requests.asked(ask, requestID: 10)
        #expect(requests.editorAnswered(requestID: 10, .cancelled) == [.approve(approvalID: "job~appr", decision: .decline, session: "s")])
    }

    /// A long editor session asks many approvals: the settled ones are not kept.
    @Test func answeredAndWithdrawnRequestsAreForgotten() {
        var requests = PermissionRequests()
        for (number, settle) in ["answered", "resolved", "turn ended"].enumerated() {
            var asked = ask
            asked.approvalID = settle
            let id = JSONValue.int(Int64(number))
            requests.asked(asked, requestID: id)
            switch settle {
            case "answered": _ = requests.editorAnswered(requestID: id, .selected(optionID: "accept"))
            case "resolved": _ = requests.resolved(approvalID: settle)
            default: _ = requests.turnEnded(session: "s")
            }
            let open = requests.isOpen(id)
            #expect(!open, "\(settle)")
        }
        let empty = requests.isEmpty
        #expect(empty)
    }
}

/// A question the backend answers, put to the editor as one option per choice.
@Suite struct QuestionPermissionTests {
    static let question: JSONValue = [["question": "Which database?", "header": "DB",
                                       "options": [["label": "SQLite"], ["label": "PostgreSQL", "description": "a server"]]]]

    func asked(answersQuestions: Bool, questions: JSONValue = question) -> [SessionUpdateAction] {
        var mapper = SessionUpdateMapper(session: "s", mode: .live, answersQuestions: answersQuestions)
        let approval = Approval(id: "q1", session: "s", turn: "t", kind: .question, title: "Which database?",
                                options: [.accept, .decline], risk: .low, extra: ["questions": questions])
        return mapper.map(.approvalRequested(approval))
    }

    @Test func eachChoiceIsAnOptionAndDismissDeclines() throws {
        guard case .requestPermission(let ask) = try #require(asked(answersQuestions: true).last) else {
            Issue.record("no permission request"); return
        }
        #expect(ask.options.map(\.name) == ["SQLite", "PostgreSQL", "Dismiss"])
        #expect(ask.options.map(\.kind) == ["allow_once", "allow_once", "reject_once"])
        var requests = PermissionRequests()
        requests.asked(ask, requestID: 1)
        #expect(requests.editorAnswered(requestID: 1, .selected(optionID: "answer-2"))
            == [.approve(approvalID: "q1", decision: .accept, answers: [["PostgreSQL"]], session: "s")])
        requests.asked(ask, requestID: 2)
        #expect(requests.editorAnswered(requestID: 2, .selected(optionID: "decline")) == [.approve(approvalID: "q1", decision: .decline, session: "s")])
        requests.asked(ask, requestID: 3)
        #expect(requests.editorAnswered(requestID: 3, .cancelled) == [.approve(approvalID: "q1", decision: .decline, session: "s")])
    }

    /// What ACP cannot ask (several questions, several answers, no choices), or a backend that
    /// cannot answer, is shown and left to `tether approve`, never answered with a guess.
    static let twoQuestions: JSONValue = [["question": "A?", "options": [["label": "x"]]], ["question": "B?", "options": [["label": "y"]]]]
    static let severalAnswers: JSONValue = [["question": "A?", "multiple": true, "options": [["label": "x"], ["label": "y"]]]]
    static let noChoices: JSONValue = [["question": "Name?", "options": []]]

    @Test(arguments: [(true, twoQuestions), (true, severalAnswers), (true, noChoices), (false, question)])
    func whatCannotBeAskedIsNotAsked(answersQuestions: Bool, questions: JSONValue) {
        let actions = asked(answersQuestions: answersQuestions, questions: questions)
        #expect(!actions.contains { if case .requestPermission = $0 { true } else { false } })
        #expect(actions.contains { if case .approvalNotAskable = $0 { true } else { false } })
    }
}
