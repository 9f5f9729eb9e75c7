import Foundation
import Testing
import TetherSim

@Suite("OpenCode simulator: auth (notes §1)")
struct OpenCodeAuthTests {
    let secured = OpenCodeSimulator.Options(password: "secret")

    @Test("without credentials: 401, empty body, Basic realm header — REST and SSE alike")
    func refusesWithoutCredentials() async throws {
        try await withSimulator(secured) { _, base in
            for target in ["/global/health", "/session", "/global/event", "/event"] {
                let response = try await RawHTTP.get(base, target)
                #expect(response.status == 401, "\(target)")
                #expect(response.body.isEmpty, "\(target)")
                #expect(response.headers["www-authenticate"] == #"Basic realm="Secure Area""#, "\(target)")
            }
            let wrong = try await RawHTTP.get(base, "/global/health", headers: basicAuth("opencode", "nope"))
            #expect(wrong.status == 401)
        }
    }

    @Test("Basic header or ?auth_token= is accepted; the query wins over the header")
    func acceptsHeaderAndQueryToken() async throws {
        try await withSimulator(secured) { simulator, base in
            let header = try await RawHTTP.get(base, "/global/health", headers: basicAuth())
            #expect(header.status == 200)
            #expect(try header.object()["healthy"] as? Bool == true)

            let token = Data("opencode:secret".utf8).base64EncodedString()
            let query = try await RawHTTP.get(base, "/global/health?auth_token=\(token)")
            #expect(query.status == 200)

            let badQuery = try await RawHTTP.get(base, "/global/health?auth_token=bm9wZQ==", headers: basicAuth())
            #expect(badQuery.status == 401)
            let badHeader = try await RawHTTP.get(base, "/global/health?auth_token=\(token)", headers: basicAuth("x", "y"))
            #expect(badHeader.status == 200)

            let stream = try await RawHTTP.openStream(base, "/global/event?auth_token=\(token)")
            defer { stream.close() }
            #expect(stream.status == 200)
            #expect(try await stream.nextPayload()?.type == "server.connected")

            // Refused requests are logged too, with their headers.
            let logged = await simulator.requests()
            #expect(logged.contains { $0.header("authorization") == basicAuth()["Authorization"] })
        }
    }

    @Test("no password ⇒ no auth at all")
    func openWithoutPassword() async throws {
        try await withSimulator { _, base in
            let health = try await RawHTTP.get(base, "/global/health")
            #expect(health.status == 200)
            let sessions = try await RawHTTP.get(base, "/session", headers: basicAuth("any", "thing"))
            #expect(sessions.status == 200)
        }
    }
}
