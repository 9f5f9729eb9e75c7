/// The consuming side of an adapter's event stream, in the one task that owns its stream
/// machine: each batch `next` returns is fed to the machine element by element, in order, until
/// the machine is done; after each batch `endOfBatch` hands on what it produced. The adapter
/// supplies only its protocol: where batches come from, what an element means to its machine
/// (`feed`, which runs the machine's actions), and its outbox.
///
/// Each element is moved out of its batch, not copied: a copy retains every string and tree it
/// holds, made by the decoding task on the other core. `placeholder` takes its place and should
/// hold nothing counted (a case without a payload, a number).
///
/// Returns true once the machine is done, false when `next` ran out (nil: the input ended).
@inlinable
public func pumpStream<Input>(
    batches next: () async throws -> [Input]?,
    leaving placeholder: Input,
    isDone: () -> Bool,
    feed: (Input) async throws -> Void,
    endOfBatch: () async throws -> Void
) async throws -> Bool {
    while !isDone() {
        guard var batch = try await next() else { return false }
        for index in batch.indices {
            if isDone() { break }  // the rest is not the machine's any more
            var element = placeholder
            swap(&element, &batch[index])
            try await feed(element)
        }
        try await endOfBatch()
    }
    return true
}

/// `pumpStream(batches:…)` with the input read and decoded ahead, in a task of its own
/// (`withPipelineStage`): `produce` sends what it decoded, at most `capacity` ahead.
@inlinable
public func pumpStream<Input: Sendable>(
    decodingAhead capacity: Int,
    produce: @escaping @Sendable (BatchChannel<Input>) async throws -> Void,
    leaving placeholder: Input,
    isDone: () -> Bool,
    feed: (Input) async throws -> Void,
    endOfBatch: () async throws -> Void
) async throws -> Bool {
    try await withPipelineStage(capacity: capacity, produce: produce) { channel in
        try await pumpStream(batches: { try await channel.next() }, leaving: placeholder,
                             isDone: isDone, feed: feed, endOfBatch: endOfBatch)
    }
}
