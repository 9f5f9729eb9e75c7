import FlyingFox
import FlyingSocks
import Foundation

extension CodexWorkerSimulator {
    /// What a job's SSE connection writes: a comment (`: connected`, `: ping`), event frames (the
    /// replay as one batch, then each live event), or the order to cut the connection.
    enum StreamOutput: Sendable {
        case comment([UInt8])
        case events([[UInt8]])
        case abort
        /// `Options.closeFinishedStreams`: `: eof`, then end the body cleanly.
        case end
    }

    struct StreamCut: Error, CustomStringConvertible {
        let description: String
    }

    /// The body of `GET /v1/jobs/{jid}/events` with `Accept: text/event-stream`. Frames waiting
    /// together (a replay) go out joined into chunks of up to `Iterator.chunkLimit` bytes, as a
    /// buffered server writes them; a live event goes out as soon as it is appended.
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
            static let chunkLimit = 64 * 1024

            var base: AsyncStream<StreamOutput>.Iterator
            let dropAfter: Int?
            var eventsWritten = 0
            /// Frames received and not yet written.
            var frames: ArraySlice<[UInt8]> = []
            var pending: [UInt8] = []
            /// `.end` was read: `: eof` is out, the body ends at the next call.
            var ended = false

            mutating func nextBuffer(suggested count: Int) async throws -> [UInt8]? {
                if !pending.isEmpty {
                    defer { pending = [] }
                    return pending
                }
                if ended { return nil }
                if let dropAfter, eventsWritten >= dropAfter {
                    throw StreamCut(description: "fault: stream dropped after \(eventsWritten) events")
                }
                if frames.isEmpty {
                    guard let output = await base.next() else {
                        throw StreamCut(description: "stream cancelled")
                    }
                    switch output {
                    case .comment(let bytes): return bytes
                    case .events(let batch): frames = batch[...]
                    case .abort: throw StreamCut(description: "server stopped or restarted")
                    case .end:
                        ended = true
                        return Array(": eof\n\n".utf8)
                    }
                }
                return takeFrames()
            }

            /// Joins waiting frames up to the chunk limit (at least one), never past `dropAfter`.
            private mutating func takeFrames() -> [UInt8] {
                var chunk: [UInt8] = []
                while let frame = frames.first,
                      chunk.isEmpty || chunk.count + frame.count <= Self.chunkLimit,
                      dropAfter.map({ eventsWritten < $0 }) ?? true {
                    chunk += frame
                    frames.removeFirst()
                    eventsWritten += 1
                }
                return chunk
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
