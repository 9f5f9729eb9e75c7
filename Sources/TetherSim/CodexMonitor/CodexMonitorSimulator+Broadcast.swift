extension CodexMonitorSimulator {
    /// The daemon's single event channel: every notification goes to every authenticated
    /// connection, with no per-workspace or per-thread filtering (notes §1.3).
    final class Broadcast: Sendable {
        /// What a lagging receiver may skip (see `Options.lagEvents`).
        enum EventTag: Sendable {
            case plain
            /// A streamed delta of the given item.
            case delta(itemID: String)
        }

        private let connections = Locked<[Int: Connection]>([:])
        private let dropClaimed = Locked(false)

        func add(_ connection: Connection) {
            connections.withLock { $0[connection.index] = connection }
        }

        func remove(_ connection: Connection) {
            _ = connections.withLock { $0.removeValue(forKey: connection.index) }
        }

        var all: [Connection] {
            connections.withLock { $0.values.sorted { $0.index < $1.index } }
        }

        /// A daemon notification `{method, params}` (e.g. `terminal-output`).
        func notify(_ method: String, _ params: JSON, tag: EventTag = .plain) {
            send(Wire.notification(method, params), tag: tag)
        }

        /// `app-server-event` around a raw app-server message.
        func appServerEvent(workspaceID: String, message: JSON, tag: EventTag = .plain) {
            send(Wire.appServerEvent(workspaceID: workspaceID, message: message), tag: tag)
        }

        private func send(_ notification: JSON, tag: EventTag) {
            let line = Array((notification.serialized + "\n").utf8)
            for connection in all {
                connection.enqueueEvent(line, tag: tag)
            }
        }

        /// `dropConnectionAfter` fires once per simulator: the first connection to claim it wins.
        func claimDrop() -> Bool {
            dropClaimed.withLock { claimed in
                defer { claimed = true }
                return !claimed
            }
        }
    }
}
