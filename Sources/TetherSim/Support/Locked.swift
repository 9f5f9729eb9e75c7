import Foundation

/// A value guarded by a lock, for state that synchronous code (SSE body iterators, route handlers,
/// test accessors) must reach without hopping onto an actor. `Synchronization.Mutex` would do, but
/// it needs macOS 15 and the package still builds for macOS 14.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    var current: Value {
        withLock { $0 }
    }
}
