#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Testing
@testable import TetherACP

/// The editor's side of stdin is a pipe we write to; the agent's side is read by `StdinLines`.
@Suite struct StdinLinesTests {
    /// A pipe whose read end `StdinLines` reads; `write` and `close` act on the editor's end.
    final class Pipe: @unchecked Sendable {
        let readEnd: Int32
        let writeEnd: Int32

        init(nonBlockingReadEnd: Bool) {
            var ends: [Int32] = [0, 0]
            precondition(pipe(&ends) == 0)
            (readEnd, writeEnd) = (ends[0], ends[1])
            if nonBlockingReadEnd {
                precondition(fcntl(readEnd, F_SETFL, fcntl(readEnd, F_GETFL) | O_NONBLOCK) == 0)
            }
        }

        func write(_ bytes: [UInt8]) {
            bytes.withUnsafeBytes { raw in
                var offset = 0
                while offset < raw.count {
                    let written = unistdWrite(writeEnd, raw.baseAddress! + offset, raw.count - offset)
                    precondition(written > 0)
                    offset += written
                }
            }
        }

        func write(_ text: String) { write(Array(text.utf8)) }
        func closeWriteEnd() { close(writeEnd) }
        deinit { close(readEnd) }
    }

    private func collect(_ lines: AsyncStream<String>) async -> [String] {
        var got: [String] = []
        for await line in lines { got.append(line) }
        return got
    }

    /// A parent (Node, a terminal multiplexer) may leave the descriptor non-blocking: a quiet
    /// editor then reads as EAGAIN, which stdio's readLine took for EOF and the agent stopped.
    @Test func aNonBlockingStdinWaitsThroughTheEditorsPauses() async {
        let pipe = Pipe(nonBlockingReadEnd: true)
        let lines = StdinLines.stream(fileDescriptor: pipe.readEnd)
        let editor = Task.detached {
            pipe.write("{\"id\":1}\n")
            try? await Task.sleep(for: .milliseconds(100))
            pipe.write("{\"id\":2}\n{\"id\"")
            try? await Task.sleep(for: .milliseconds(100))
            pipe.write(":3}\n")
            pipe.closeWriteEnd()
        }
        #expect(await collect(lines) == [#"{"id":1}"#, #"{"id":2}"#, #"{"id":3}"#])
        await editor.value
    }

    @Test func crlfEmptyLinesALastLineWithoutLFAndInvalidUTF8() async {
        let pipe = Pipe(nonBlockingReadEnd: false)
        let lines = StdinLines.stream(fileDescriptor: pipe.readEnd)
        pipe.write(Array("a\r\n\n\r\nb\n".utf8) + [0x63, 0xFF, 0x0A] + Array("last".utf8))
        pipe.closeWriteEnd()
        #expect(await collect(lines) == ["a", "b", "c\u{FFFD}", "last"])
    }

    @Test func aLineOverTheLimitIsSkippedAndTheNextOneRead() async {
        let pipe = Pipe(nonBlockingReadEnd: false)
        let lines = StdinLines.stream(fileDescriptor: pipe.readEnd, maxLineLength: 16)
        let editor = Task.detached {
            pipe.write(String(repeating: "x", count: 100) + "\n{\"id\":9}\n")
            pipe.closeWriteEnd()
        }
        #expect(await collect(lines) == [#"{"id":9}"#])
        await editor.value
    }
}

/// write(2), out of the reach of `Pipe.write`'s name.
private func unistdWrite(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(fd, bytes, count)
}
