import FlyingFox
import FlyingSocks
import Foundation

extension CodexWorkerSimulator {
    /// What a job's SSE connection writes: a comment (`: connected`, `: ping`), an event frame, or
    /// the order to cut the connection.
    enum StreamOutput: Sendable {
        case comment([UInt8])
        case event([UInt8])
        case abort
    }

    struct StreamCut: Error, CustomStringConvertible {
        let description: String
    }

    /// The body of `GET /v1/jobs/{jid}/events` with `Accept: text/event-stream`, one chunk per frame.
    /// It never ends by itself (notes §2.5): it only stops by throwing, which makes FlyingFox close the
    /// socket without the terminating chunk, like a dropped connection. That happens when the client
    /// goes away, the server stops or restarts, or the `dropStreamAfter` fault fires.
    struct EventStreamBody: AsyncBufferedSequence, Sendable {
        typealias Element = UInt8

        let outputs: AsyncStream<StreamOutput>
        /// Cut the connection after this many event frames were written on it.
        let dropAfter: Int?

        func makeAsyncIterator() -> Iterator {
            Iterator(base: outputs.makeAsyncIterator(), dropAfter: dropAfter)
        }

        struct Iterator: AsyncBufferedIteratorProtocol {
            var base: AsyncStream<StreamOutput>.Iterator
            let dropAfter: Int?
            var eventsWritten = 0
            var pending: [UInt8] = []

            mutating func nextBuffer(suggested count: Int) async throws -> [UInt8]? {
                if !pending.isEmpty {
                    defer { pending = [] }
                    return pending
                }
                if let dropAfter, eventsWritten >= dropAfter {
                    throw StreamCut(description: "fault: stream dropped after \(eventsWritten) events")
                }
                guard let output = await base.next() else {
                    throw StreamCut(description: "stream cancelled")
                }
                switch output {
                case .comment(let bytes):
                    return bytes
                case .event(let bytes):
                    eventsWritten += 1
                    return bytes
                case .abort:
                    throw StreamCut(description: "server stopped or restarted")
                }
            }

            mutating func next() async throws -> UInt8? {
                if pending.isEmpty {
                    pending = try await nextBuffer(suggested: 4096) ?? []
                }
                return pending.isEmpty ? nil : pending.removeFirst()
            }
        }
    }
}
