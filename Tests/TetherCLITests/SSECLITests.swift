import Foundation
import Testing
import TetherSim
@testable import TetherTestSupport

/// `tether sse` (the real binary) against the SSE script server on loopback.
@Suite(.serialized) struct SSECLITests {
    /// `--liveness inf` passed validation and trapped converting to milliseconds; NaN meant
    /// "never" silently.
    @Test(arguments: ["inf", "1e16", "nan", "-1"])
    func livenessMustBeAFiniteNumberOfSeconds(value: String) async throws {
        let result = try await TetherProcess.run(["sse", "http://127.0.0.1:9/", "--liveness", value])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("--liveness"), "\(result.stderr)")
    }

    func withServer(_ body: (SSEScriptServer, String) async throws -> Void) async throws {
        let server = SSEScriptServer()
        let url = try await server.start()
        do {
            try await body(server, url.absoluteString)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    /// A redirect whose `Location` is empty stops at once with 65, as one without a `Location`
    /// does — before the fix it reconnected to the same URL until killed.
    @Test(arguments: ["/redirect?to=&code=301", "/redirect?to=&code=307", "/redirect?code=302"])
    func aRedirectWithoutAUsableLocationExits65(path: String) async throws {
        try await withServer { server, base in
            let result = try await TetherProcess.run(["sse", base + path], timeout: .seconds(20))
            #expect(result.status == 65, "\(result.stderr)")
            #expect(result.stderr.contains("Location"))
            #expect(server.requests.filter { $0.path == "/redirect" }.count == 1)
        }
    }

    /// `--last-event-id ""` sends no header; a server's empty `id:` (in a later chunk than the
    /// id it resets) means the reconnect sends none either.
    @Test func anEmptyLastEventIDSendsNoHeader() async throws {
        try await withServer { server, base in
            server.setScript("reset", [
                SSEScriptChunk("id: 5\ndata: a\n\n"),
                SSEScriptChunk("id:\ndata: b\n\n", delay: .milliseconds(50)),
            ])
            let process = try TetherProcess(["sse", base + "/script/reset", "--last-event-id", ""])
            _ = try await server.waitForRequest(timeout: .seconds(20)) { _ in
                server.requests.filter { $0.path == "/script/reset" }.count >= 2
            }
            process.terminate()
            _ = try? await process.finish()
            let requests = server.requests.filter { $0.path == "/script/reset" }
            #expect(requests.count >= 2)
            for request in requests {
                #expect(request.header("last-event-id") == nil, "\(request)")
            }
        }
    }
}
