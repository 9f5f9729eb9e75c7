import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
import TetherCore

/// `[serve] notify`: when an `approval.requested` is appended, POST a short `text/plain` body
/// with a `Title` header to `url` (the shape ntfy and most webhook receivers take), or run
/// `command` with the title and the body as its last two arguments (`notify-send TITLE BODY`);
/// once per approval id even across restarts, retried with backoff capped at 60 s for at least
/// an hour, on its own task so the log never waits for it.
struct ApprovalPush: Sendable {
    enum Target: Sendable {
        case url(String)
        case command([String])
    }

    let target: Target
    let publicURL: String?
    let log: any EventStore
    let logger: Logger
    var giveUpAfter: Duration = .seconds(2 * 3600)

    func attach(to journal: EventJournal) {
        // Pushes a previous run claimed and could not deliver: read before this run claims any,
        // or one it just claimed would be pushed twice.
        let leftOver = Task { (try? await log.undeliveredPushes()) ?? [] }
        journal.observe { logged, event in
            guard event.type == .approvalRequested, let id = event.data["id"]?.stringish, let profile = event.profile else { return }
            Task {
                do {
                    guard try await log.claimPush(profile: profile, approval: id) else { return }
                } catch {
                    logger.error("cannot record an approval push", metadata: ["error": "\(error)"])
                    return
                }
                await deliver(Self.message(for: event, publicURL: publicURL), approval: id, profile: profile)
            }
        }
        Task {
            for pending in await leftOver.value {
                // Answered since (here or elsewhere): nobody needs asking any more.
                if (try? await log.decision(profile: pending.profile, approval: pending.approval)) != nil {
                    try? await log.markPushDelivered(profile: pending.profile, approval: pending.approval)
                    continue
                }
                guard let event = try? EventCodec.decode(pending.line) else { continue }
                Task { await deliver(Self.message(for: event, publicURL: publicURL), approval: pending.approval, profile: pending.profile) }
            }
        }
    }

    struct Message: Sendable, Equatable {
        let title: String
        let body: String
    }

    static func message(for event: Event, publicURL: String?) -> Message {
        let data = event.data
        let what = data["command"]?.stringish
            ?? data["patterns"]?.array?.compactMap(\.stringish).joined(separator: " ")
            ?? data["title"]?.stringish ?? "an approval"
        var lines = [what]
        if let cwd = data["cwd"]?.string { lines.append("in \(cwd)") }
        if let risk = data["risk"]?.string { lines.append("risk: \(risk)") }
        if let publicURL { lines.append(publicURL) }
        return Message(title: "Approval needed (\(event.profile ?? "tether"))", body: lines.joined(separator: "\n"))
    }

    /// Posts until it is accepted, with backoff capped at 60 s, for up to `giveUpAfter`.
    func deliver(_ message: Message, approval id: String, profile: String) async {
        var delay: Duration = .seconds(1)
        let deadline = ContinuousClock.now + giveUpAfter
        while ContinuousClock.now < deadline {
            do {
                try await post(message)
                try? await log.markPushDelivered(profile: profile, approval: id)
                return
            } catch {
                logger.warning("approval push failed; retrying", metadata: ["approval": "\(id)", "error": "\(Self.reason(error))", "retry_in": "\(delay)"])
            }
            do { try await Task.sleep(for: delay) } catch { return }
            delay = min(delay * 2, .seconds(60))
        }
        logger.error("gave up pushing an approval", metadata: ["approval": "\(id)"])
    }

    /// Why a push failed, fit for the log: a URLSession error's description carries the notify
    /// URL, and its path (an ntfy topic) or query is a secret.
    static func reason(_ error: any Error) -> String {
        switch error {
        case let refused as PushRefused: refused.description
        case let failed as CommandFailed: failed.description
        default: (error as NSError).localizedDescription
        }
    }

    struct PushRefused: Error, CustomStringConvertible {
        let status: Int
        var description: String { "the notify URL answered HTTP \(status)" }
    }

    struct CommandFailed: Error, CustomStringConvertible {
        let status: Int32
        var description: String { "the notify command exited \(status)" }
    }

    func post(_ message: Message) async throws {
        switch target {
        case .url(let url): try await post(message, to: url)
        case .command(let argv): try await run(argv, message)
        }
    }

    func run(_ argv: [String], _ message: Message) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: argv[0].contains("/") ? argv[0] : "/usr/bin/env")
        process.arguments = (argv[0].contains("/") ? Array(argv.dropFirst()) : argv) + [message.title, message.body]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        let status: Int32 = try await withCheckedThrowingContinuation { continuation in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch { continuation.resume(throwing: error) }
        }
        guard status == 0 else { throw CommandFailed(status: status) }
    }

    func post(_ message: Message, to url: String) async throws {
        guard let target = URL(string: url) else { throw PushRefused(status: 0) }
        var request = URLRequest(url: target, timeoutInterval: 20)
        request.httpMethod = "POST"
        request.setValue("text/plain; charset=utf-8", forHTTPHeaderField: "Content-Type")
        request.setValue(message.title, forHTTPHeaderField: "Title")
        request.httpBody = Data(message.body.utf8)
        let (_, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard (200..<300).contains(status) else { throw PushRefused(status: status) }
    }
}
