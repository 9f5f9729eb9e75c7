/// Runs a stream's decoding ahead of its consumer, in a task of its own, so that the two use
/// two cores: `produce` reads and decodes (bytes → wire messages), `consume` does what must stay
/// in one task (a protocol machine, its I/O) with what was decoded. They meet in a bounded
/// `BatchChannel`, so the producer never gets more than `capacity` elements (or, when it sends
/// its batches with a weight, that much weight) ahead, a batch at a time, in order.
///
/// Structured: `consume` ends the stage. When it returns or throws, the producer is cancelled
/// and waited for before this returns. A failure of the producer reaches `consume` as the
/// channel's failure, after everything handed over before it (its `next()` rethrows it).
public func withPipelineStage<Element: Sendable, Consumed>(
    capacity: Int,
    produce: @escaping @Sendable (BatchChannel<Element>) async throws -> Void,
    consume: (BatchChannel<Element>) async throws -> Consumed
) async throws -> Consumed {
    let channel = BatchChannel<Element>(capacity: capacity)
    return try await withThrowingTaskGroup(of: Void.self, returning: Consumed.self) { group in
        group.addTask {
            do {
                try await produce(channel)
                channel.finish()
            } catch {
                channel.finish(throwing: error)
            }
        }
        // Whatever way `consume` ends, the producer stops (a send fails, a read is cancelled);
        // the group waits for it before returning.
        defer {
            channel.cancel()
            group.cancelAll()
        }
        return try await consume(channel)
    }
}

/// How far a stream's decoding may run ahead of its machine, in wire bytes (for a stage whose
/// producer sends each batch with the wire bytes it was decoded from). Small: the stage is there
/// to use the second core, not to queue; 1 MiB ahead made the OpenCode new-parts flood peak at
/// 71–73 MB where 8 KiB keeps it under 50 MB, at the same speed (bench/PROFILE.md).
public let decodedWireBytesAhead = 8 << 10
