import Foundation
import Testing
@testable import TetherTestSupport

/// The CLI on a terminal (a pty from util-linux's `script`), where the "connecting…" status line
/// is drawn on stderr without a newline.
@Suite(.serialized) struct TerminalCLITests {
    /// Runs the real binary on a pty; returns everything it wrote to the terminal.
    func onTerminal(_ arguments: [String]) throws -> String {
        let command = ([TetherProcess.binary.path] + arguments).map { "'\($0)'" }.joined(separator: " ")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        process.arguments = ["-qec", command, "/dev/null"]
        let output = Pipe()
        process.standardOutput = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// `tether sessions list -o text` on a terminal, for a profile `oc` whose server refuses
    /// connections; what it showed, and the port.
    func sessionsListOfAnUnreachableProfile(_ flags: [String]) throws -> (shown: String, port: Int) {
        let refusing = try TestSockets.refusingPort()
        defer { close(refusing.holder) }
        let config = try TemporaryConfig("""
            [profiles.oc]
            backend = "opencode"
            url = "http://127.0.0.1:\(refusing.port)"
            """)
        return (try onTerminal(["--config", config.path] + flags + ["sessions", "list", "-o", "text"]), refusing.port)
    }

    /// A failure after the status line was drawn: the line is erased first, so the error starts
    /// a line of its own; it was glued onto "connecting to …)…".
    @Test func anErrorIsNotGluedOntoTheStatusLine() throws {
        let (shown, _) = try sessionsListOfAnUnreachableProfile([])
        #expect(shown.contains("connecting to oc"), "\(shown.debugDescription)")
        #expect(shown.contains("\r\u{1B}[2Ktether: "), "\(shown.debugDescription)")
        #expect(!shown.contains("…tether:") && !shown.contains("\u{1B}[0mtether:"), "\(shown.debugDescription)")
    }

    /// With -vv, log lines (swift-log on stderr: the HTTP request) erase the status line too.
    @Test func aLogLineIsNotGluedOntoTheStatusLine() throws {
        let (shown, port) = try sessionsListOfAnUnreachableProfile(["-vv"])
        let status = try #require(shown.range(of: "connecting to oc (opencode at http://127.0.0.1:\(port))…\u{1B}[0m"),
                                  "\(shown.debugDescription)")
        #expect(shown[status.upperBound...].hasPrefix("\r\u{1B}[2K"), "\(shown.debugDescription)")
        #expect(shown.contains("HTTP request"), "\(shown.debugDescription)")
    }

    /// `tether sse` with credentials in its URL: neither the status line nor the error shows them.
    @Test func sseNeverShowsTheURLsPassword() throws {
        let refusing = try TestSockets.refusingPort()
        defer { close(refusing.holder) }
        let shown = try onTerminal(["sse", "http://me:s3cret@127.0.0.1:\(refusing.port)/events", "--no-reconnect"])
        #expect(shown.contains("127.0.0.1:\(refusing.port)"), "\(shown.debugDescription)")
        #expect(!shown.contains("s3cret"), "\(shown.debugDescription)")
    }
}
