import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `--listen stdio://` (codex's default): NDJSON both ways, one session (note §1, §6c).
extension CodexAppServerSimulator {
    /// Serves one session on `input`/`output` until `input` reaches EOF, then returns; the caller
    /// exits at once, which aborts running turns, as codex does (note §6c).
    public func runStdio(input: Int32 = 0, output: Int32 = 1) async {
        let writer = LineWriter(descriptor: output)
        // The server ending a stdio session is the process ending (`--flood-close`).
        let connection = open(.init(send: { writer.write($0) }, close: {
            writer.drain(timeout: .seconds(120))
            exit(0)
        }))
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread { [self] in
                readLines(from: input) { self.receive($0, from: connection) }
                continuation.resume()
            }
            thread.start()
        }
        writer.drain(timeout: .milliseconds(200))
    }

    /// Blocking reads on a thread of its own (never on the cooperative pool); each non-blank
    /// line goes to `handle`.
    private func readLines(from descriptor: Int32, handle: (String) -> Void) {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(descriptor, &chunk, chunk.count)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return }
            buffer += chunk[0..<count]
            var start = 0
            while let newline = buffer[start...].firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[start..<newline], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                start = newline + 1
                if !line.isEmpty { handle(line) }
            }
            buffer.removeFirst(start)
        }
    }
}

/// Lines queued by any thread, written in order by one thread of its own, so that a slow reader
/// never blocks the world (which queues with its lock held).
final class LineWriter: Sendable {
    private struct Queue {
        var lines: [String] = []
        var writing = false
        var broken = false
    }

    private let descriptor: Int32
    private let queue = Locked(Queue())
    private let ready = NSCondition()

    init(descriptor: Int32) {
        self.descriptor = descriptor
        let thread = Thread { [self] in run() }
        thread.start()
    }

    func write(_ line: String) {
        ready.lock()
        queue.withLock { $0.lines.append(line) }
        ready.signal()
        ready.unlock()
    }

    /// Waits (up to `timeout`) until everything queued is written.
    func drain(timeout: Duration) {
        let deadline = ContinuousClock.now.advanced(by: timeout)
        while ContinuousClock.now < deadline {
            let idle = queue.withLock { ($0.lines.isEmpty && !$0.writing) || $0.broken }
            if idle { return }
            usleep(2000)
        }
    }

    private func run() {
        while true {
            ready.lock()
            var batch: [String] = []
            while batch.isEmpty {
                batch = queue.withLock { queue in
                    let lines = queue.lines
                    queue.lines = []
                    queue.writing = !lines.isEmpty
                    return lines
                }
                if batch.isEmpty { ready.wait() }
            }
            ready.unlock()
            var bytes: [UInt8] = []
            for line in batch {
                bytes += Array(line.utf8)
                bytes.append(0x0A)
            }
            let ok = writeAll(bytes)
            queue.withLock {
                $0.writing = false
                if !ok { $0.broken = true }
            }
            if !ok { return }
        }
    }

    private func writeAll(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { raw in
                #if canImport(Glibc)
                Glibc.write(descriptor, raw.baseAddress, raw.count)
                #else
                Darwin.write(descriptor, raw.baseAddress, raw.count)
                #endif
            }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }
}
