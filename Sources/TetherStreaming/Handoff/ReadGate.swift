import Synchronization

/// A socket's I/O thread deciding whether to read, for the `BatchChannel` it feeds: it reads
/// only while the consumer has room, so what it reads is always taken (`trySend` accepts it) and
/// it never blocks — it still has writes, pings and timers to serve. While the channel is full
/// it leaves the socket out of its `poll` (TCP then pushes back on the peer), and `wake` — which
/// writes the thread's wake pipe — is called once the consumer has taken a batch.
///
/// Owned by the I/O thread (a value it keeps in a local variable). One registration at a time:
/// the thread asks again on every turn of its loop, and only a wake that has arrived re-arms it.
public struct ReadGate<Element: Sendable> {
    public let channel: BatchChannel<Element>
    private let wake: @Sendable () -> Void
    private let arrived = RoomSignal()
    private var awaiting = false

    /// - Parameter wake: wakes the I/O thread's `poll` (called from the consumer's task, or
    ///   from `finish`/`cancel`); must not block.
    public init(channel: BatchChannel<Element>, wake: @escaping @Sendable () -> Void) {
        self.channel = channel
        self.wake = wake
    }

    /// Whether to read now. False while the channel is full; the room the consumer makes then
    /// calls `wake`, and the next call looks again.
    public mutating func mayRead() -> Bool {
        if awaiting {
            guard arrived.flag.exchange(false, ordering: .acquiringAndReleasing) else { return false }
            awaiting = false
        }
        let signal = arrived
        let wake = wake
        if channel.hasRoom(orCall: {
            signal.flag.store(true, ordering: .releasing)
            wake()
        }) {
            return true
        }
        awaiting = true
        return false
    }
}

/// Set by the consumer's side when it made room; read by the I/O thread.
private final class RoomSignal: Sendable {
    let flag = Atomic<Bool>(false)
}
