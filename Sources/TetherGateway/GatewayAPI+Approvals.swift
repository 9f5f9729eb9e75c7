import Foundation
import Hummingbird
import TetherCore

/// Pending approvals across profiles, and answering one.
extension GatewayAPI {
    func pendingApprovals(_ request: Request) async throws -> Response {
        let wanted = Set(request.uri.queryParameters.getAll("profile"))
        for name in wanted where !profiles.contains(where: { $0.name == name }) {
            throw ProblemDetails(.notFound, "no served profile \(name)", detail: "GET /v1/profiles lists the profiles this gateway serves")
        }
        var lines: [String] = []
        var unavailable: [String] = []
        for profile in profiles where (wanted.isEmpty || wanted.contains(profile.name)) && profile.backend.capabilities.contains(.approvals) {
            do {
                let approvals = try await profile.backend.pendingApprovals(session: nil)
                lines += approvals.map { Self.line(profile.stamp(.approvalRequested($0))) }
            } catch {
                // One unreachable backend does not hide the others' approvals; the header says
                // whose are missing, so a client keeps what it knows of those.
                logger.warning("cannot list pending approvals", metadata: ["profile": "\(profile.name)", "error": "\(error)"])
                if wanted.count == 1 { throw try problem(error, doing: "listing the pending approvals of \(profile.name)") }
                unavailable.append(profile.name)
            }
        }
        var response = JSONResponse.array(lines)
        if !unavailable.isEmpty {
            // Each name percent-encoded (UTF-8): a profile name may hold a comma or any character.
            let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
            response.headers[HTTPFields.unavailableProfiles] = unavailable
                .map { $0.addingPercentEncoding(withAllowedCharacters: unreserved) ?? $0 }.joined(separator: ",")
        }
        return response
    }

    func problem(_ error: any Error, doing what: String) throws -> ProblemDetails {
        if let error = error as? TetherError { return ProblemDetails(error, doing: what) }
        return ProblemDetails(.unavailable, "\(what) failed", detail: "\(error)")
    }

    func answer(_ request: Request, context: GatewayRequestContext) async throws -> Response {
        let profile = try profile(context)
        try require(.approvals, "approvals", of: profile)
        let id = try pathID("approval", context)
        let body = try await JSONRequest.object(request)
        guard let name = body["decision"]?.string, let decision = Decision(rawValue: name) else {
            throw ProblemDetails(.badRequest, "no valid decision",
                                 detail: "send {\"decision\":D} with D one of: \(Decision.names)")
        }
        var amendment: [String] = []
        if let value = body["amendment"] {
            guard let items = value.array?.compactMap(\.string), items.count == value.array?.count else {
                throw ProblemDetails(.badRequest, "amendment must be an array of strings", detail: "send \"amendment\":[\"argv0\",\"arg\",…]")
            }
            amendment = items
        }
        // An amendment belongs to its decision: with another one it would be dropped, and the
        // original command accepted, without a word.
        if !amendment.isEmpty, decision != .acceptWithAmendment {
            throw ProblemDetails(.badRequest, "an amendment goes with the decision accept_with_amendment only",
                                 detail: "send {\"decision\":\"accept_with_amendment\",\"amendment\":[…]}, or drop the amendment")
        }
        // A question's answer: for each of its questions, in order, the chosen labels or typed text.
        var answers: [[String]] = []
        if let value = body["answers"], !value.isNull {
            let lists = value.array ?? []
            let parsed = lists.map { $0.array?.compactMap(\.string) ?? [] }
            // Every list non-empty and all strings (compactMap dropped nothing).
            let wellFormed = zip(lists, parsed).allSatisfy { list, strings in !strings.isEmpty && strings.count == list.array?.count }
            guard !lists.isEmpty, wellFormed else {
                throw ProblemDetails(.badRequest, "answers must be a non-empty array of non-empty arrays of strings",
                                     detail: "send \"answers\":[[\"label\"],…]: for each question, in order, the chosen labels or typed text")
            }
            guard decision == .accept else {
                throw ProblemDetails(.badRequest, "answers go with the decision accept only",
                                     detail: "send {\"decision\":\"accept\",\"answers\":[…]}, or decline the question without answers")
            }
            answers = parsed
        }
        let answer = ApprovalAnswer(decision: decision, amendment: amendment, answers: answers)
        let line = try await approvals.answer(answer, approval: id, profile: profile)
        return JSONResponse.raw(line)
    }
}
