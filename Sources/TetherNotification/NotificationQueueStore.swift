#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import TetherCore
import TetherStreaming

/// The per-profile notification state under the state directory:
/// `notification/<profile>/queue.json` (the offline queue) and `peer-id` (our stable peer id).
///
/// Several `tether` processes may run at once (a `watch` and one-shot commands), so every
/// change to the queue is a locked read-modify-write (`flock` on `queue.lock`, file replaced
/// atomically), and only one process drains at a time (`drain.lock`, not waited for).
struct NotificationQueueStore: Sendable {
    let directory: String

    init(stateDirectory: String, profile: String) {
        let safe = String(profile.map { $0.isLetter || $0.isNumber || "-_.".contains($0) ? $0 : "_" })
        directory = (stateDirectory as NSString).appendingPathComponent("notification/\(safe.isEmpty ? "_" : safe)")
    }

    var queueFile: String { (directory as NSString).appendingPathComponent("queue.json") }
    var peerIDFile: String { (directory as NSString).appendingPathComponent("peer-id") }

    // MARK: Queue

    /// The queue as stored; empty when there is none.
    func load() throws(TetherError) -> NotificationOfflineQueue {
        guard let data = FileManager.default.contents(atPath: queueFile) else { return NotificationOfflineQueue() }
        do {
            return NotificationOfflineQueue(json: try JSONParser.parse([UInt8](data)))
        } catch {
            throw TetherError(.configuration, "the notification offline queue at \(queueFile) is not valid JSON (\(error))",
                              hint: "move it aside; queued commands in it are lost")
        }
    }

    /// Runs `body` on the stored queue under the lock and stores the result.
    @discardableResult
    func update<T>(_ body: (inout NotificationOfflineQueue) -> T) throws(TetherError) -> T {
        guard let lock = try FileLock(path: (directory as NSString).appendingPathComponent("queue.lock"), wait: true, store: self) else {
            preconditionFailure("a lock that is waited for is always taken")
        }
        defer { lock.release() }
        var queue = try load()
        let result = body(&queue)
        try write(Array(queue.json.serialized.utf8), to: queueFile)
        return result
    }

    /// The drain lock, or nil when another process is draining.
    func tryDrainLock() throws(TetherError) -> FileLock? {
        try FileLock(path: (directory as NSString).appendingPathComponent("drain.lock"), wait: false, store: self)
    }

    // MARK: Files

    func ensureDirectory() throws(TetherError) {
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw unwritable(directory, error)
        }
    }

    func write(_ bytes: [UInt8], to path: String) throws(TetherError) {
        try ensureDirectory()
        do {
            try Data(bytes).write(to: URL(fileURLWithPath: path), options: .atomic)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        } catch {
            throw unwritable(path, error)
        }
    }

    func unwritable(_ path: String, _ error: any Error) -> TetherError {
        TetherError(.configuration, "cannot write Tether's notification state at \(path): \(error.localizedDescription)",
                    hint: "make the state directory writable (it is $XDG_STATE_HOME/tether, else ~/.local/state/tether)")
    }

    /// An exclusive `flock` on a file, held until `release()`.
    final class FileLock: Sendable {
        private let fd: Int32

        /// Nil when `wait` is false and another process holds the lock.
        init?(path: String, wait: Bool, store: NotificationQueueStore) throws(TetherError) {
            try store.ensureDirectory()
            let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw store.unwritable(path, POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)) }
            while flock(fd, LOCK_EX | (wait ? 0 : LOCK_NB)) != 0 {
                if errno == EINTR { continue }
                let failure = errno
                close(fd)
                if failure == EWOULDBLOCK { return nil }
                throw store.unwritable(path, POSIXError(POSIXErrorCode(rawValue: failure) ?? .EIO))
            }
            self.fd = fd
        }

        /// Closing the descriptor releases the lock.
        func release() { close(fd) }
    }
}
