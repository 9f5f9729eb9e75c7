import Foundation

extension CodexWorkerSimulator {
    /// One event as the worker stores and sends it: `{type, ts, jobId, seq, payload}`.
    /// Serialized once, because every replay and every SSE frame sends the same bytes.
    struct Envelope: Sendable {
        let type: String
        let seq: Int
        let json: JSON
        /// `id: <seq>` / `event: <type>` / `data: <envelope>` and a blank line (notes §2.2).
        let sseFrame: [UInt8]

        init(type: String, ts: String, jobId: String, seq: Int, payload: JSON) {
            self.type = type
            self.seq = seq
            self.json = Self.json(type: type, ts: ts, jobId: jobId, seq: seq, payload: payload)
            self.sseFrame = Array("id: \(seq)\nevent: \(type)\ndata: \(json.serialized)\n\n".utf8)
        }

        /// The envelope's JSON alone (thread history synthesizes these and never streams them).
        static func json(type: String, ts: String, jobId: String, seq: Int, payload: JSON) -> JSON {
            .object([
                ("type", .string(type)), ("ts", .string(ts)), ("jobId", .string(jobId)),
                ("seq", .int(seq)), ("payload", payload),
            ])
        }
    }

    enum JobState: String, Sendable {
        case queued = "QUEUED", running = "RUNNING", waitingApproval = "WAITING_APPROVAL"
        case done = "DONE", failed = "FAILED", cancelled = "CANCELLED"

        var isTerminal: Bool { self == .done || self == .failed || self == .cancelled }

        /// `toJobStateFromTurnStatus`.
        init(turnStatus: String) {
            switch turnStatus {
            case "completed": self = .done
            case "failed": self = .failed
            case "interrupted": self = .cancelled
            default: self = .running
            }
        }
    }

    /// The API's decision values (notes §4) and the optional argv amendment.
    struct Decision: Sendable, Equatable {
        static let all = ["accept", "accept_for_session", "accept_with_execpolicy_amendment", "decline", "cancel"]
        let value: String
        let amendment: [String]?

        var runsTheAction: Bool { value.hasPrefix("accept") }
    }

    /// What the script runner of a job waits for.
    enum JobSignal: Sendable {
        case decided(approvalId: String, Decision)
        case interrupt
    }

    struct Approval {
        enum Kind: String { case commandExecution = "command_execution", fileChange = "file_change" }
        let id: String
        let kind: Kind
        let itemId: String
        var decision: Decision?
    }

    /// A job: its state, its event log (with retention) and its live subscribers.
    /// Not thread-safe on its own: the `Store` lock guards every access.
    final class Job {
        let id: String
        let threadId: String
        let turnId: String
        let retention: Int
        private(set) var state: JobState = .queued
        var pendingApprovalCount = 0
        let createdAt: Date
        private(set) var updatedAt: Date
        private(set) var terminalAt: Date?
        var errorMessage: String?
        var approvals: [String: Approval] = [:]
        /// Set by `POST cancel`; the runner turns it into `turn.completed(interrupted)`.
        var interruptRequested = false
        /// How many SSE connections were opened on this job (for the drop-once fault).
        var streamsOpened = 0

        private(set) var events: [Envelope] = []
        private(set) var firstSeq = 0
        private var nextSeq = 0
        var subscribers: [Int: AsyncStream<StreamOutput>.Continuation] = [:]

        let signals: AsyncStream<JobSignal>
        let signalSink: AsyncStream<JobSignal>.Continuation

        init(id: String, threadId: String, turnId: String, retention: Int, now: Date) {
            self.id = id
            self.threadId = threadId
            self.turnId = turnId
            self.retention = max(1, retention)
            self.createdAt = now
            self.updatedAt = now
            (signals, signalSink) = AsyncStream.makeStream(of: JobSignal.self)
        }

        /// `Options.closeFinishedStreams`, copied in by the store.
        var closesFinishedStreams = false

        var isTerminal: Bool { state.isTerminal }

        /// `#appendEvent`: assign the next seq, trim to the retention, push to live subscribers.
        @discardableResult
        func append(_ type: String, _ payload: JSON, now: Date = Date()) -> Envelope {
            let envelope = Envelope(type: type, ts: Fixtures.iso(now), jobId: id, seq: nextSeq, payload: payload)
            nextSeq += 1
            events.append(envelope)
            if events.count > retention {
                events.removeFirst(events.count - retention)
            }
            firstSeq = events.first?.seq ?? nextSeq
            updatedAt = now
            let frame = StreamOutput.events([envelope.sseFrame])
            for subscriber in subscribers.values {
                subscriber.yield(frame)
                if closesFinishedStreams, type == "job.finished" { subscriber.yield(.end) }
            }
            return envelope
        }

        /// Emits `job.state` only when the state changes; QUEUED carries no `errorMessage`.
        func setState(_ newState: JobState, now: Date = Date()) {
            guard newState != state else { return }
            state = newState
            if newState.isTerminal { terminalAt = now }
            if newState == .queued {
                append("job.state", ["state": .string(newState.rawValue)], now: now)
            } else {
                append("job.state", ["state": .string(newState.rawValue), "errorMessage": .optional(errorMessage)], now: now)
            }
        }

        /// `job.state` (terminal) then `job.finished`, once.
        func finish(_ terminal: JobState, now: Date = Date()) {
            guard !isTerminal else { return }
            setState(terminal, now: now)
            append("job.finished", ["state": .string(terminal.rawValue), "errorMessage": .optional(errorMessage)], now: now)
            signalSink.finish()
        }

        /// `#toJobSnapshot`.
        var snapshot: JSON {
            [
                "jobId": .string(id), "threadId": .string(threadId), "turnId": .string(turnId),
                "state": .string(state.rawValue), "pendingApprovalCount": .int(pendingApprovalCount),
                "createdAt": .string(Fixtures.iso(createdAt)), "updatedAt": .string(Fixtures.iso(updatedAt)),
                "terminalAt": .optional(terminalAt.map(Fixtures.iso)), "errorMessage": .optional(errorMessage),
            ]
        }

        /// `WorkerService.listEvents` (notes §2.3): absent cursor = every retained event;
        /// `cursor < firstSeq - 1` is expired; otherwise every retained event with `seq > cursor`.
        func events(after rawCursor: String?) throws -> (data: [Envelope], nextCursor: Int) {
            let cursor: Int
            if let rawCursor, !rawCursor.isEmpty {
                guard let parsed = Int(rawCursor) else {
                    throw HTTPError(400, "INVALID_CURSOR", "cursor 必须是整数 (cursor must be an integer)")
                }
                cursor = parsed
            } else {
                cursor = firstSeq - 1
            }
            guard cursor >= firstSeq - 1 else {
                throw HTTPError(
                    409, "CURSOR_EXPIRED",
                    "cursor 已过期，请先获取任务快照再重连 (cursor \(cursor) is older than the first retained event \(firstSeq); fetch the job snapshot, then reconnect)"
                )
            }
            let data = events.filter { $0.seq > cursor }
            return (data, data.last?.seq ?? cursor)
        }
    }
}
