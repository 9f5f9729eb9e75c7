import Testing
@testable import TetherGateway

@Suite struct GatewayAuthTests {
    @Test func tokensAreComparedWhole() {
        let auth = GatewayAuth(tokens: ["s3cret", "other-token"])
        #expect(auth.accepts(token: "s3cret") && auth.accepts(token: "other-token"))
        #expect(!auth.accepts(token: "s3cre") && !auth.accepts(token: "s3crett") && !auth.accepts(token: ""))
        #expect(!GatewayAuth(tokens: []).accepts(token: ""))
        #expect(GatewayAuth.constantTimeEqual(Array("abc".utf8), Array("abc".utf8)))
        #expect(!GatewayAuth.constantTimeEqual(Array("abc".utf8), Array("abd".utf8)))
    }

    @Test func sessionsAreRevokedOnLogout() {
        let auth = GatewayAuth(tokens: ["t"])
        let cookie = auth.openSession()
        #expect(cookie.count == 64 && auth.acceptsSession(cookie))
        auth.revokeSession(cookie)
        #expect(!auth.acceptsSession(cookie))
    }

    @Test func onlyLoopbackMayGoWithoutATokenAndListenParses() {
        #expect(ListenAddress("127.0.0.1:7420") == ListenAddress(host: "127.0.0.1", port: 7420))
        #expect(ListenAddress("[::1]:0")?.isLoopback == true)
        #expect(ListenAddress("localhost:80")?.isLoopback == true)
        #expect(ListenAddress("0.0.0.0:7420")?.isLoopback == false)
        #expect(ListenAddress("7420") == nil && ListenAddress("host:99999") == nil && ListenAddress("::1:80") == nil)
        #expect(ListenAddress(":7420") == ListenAddress(host: "127.0.0.1", port: 7420))
        #expect(ListenAddress("host:+80") == nil && ListenAddress("ho st:80") == nil)
        let open = GatewayConfiguration(listen: ListenAddress("0.0.0.0:7420")!, databasePath: "x", retainDays: 7, tokens: [])
        #expect(open.exposureProblem?.contains("tokens") == true)
        let tokened = GatewayConfiguration(listen: ListenAddress("0.0.0.0:7420")!, databasePath: "x", retainDays: 7, tokens: ["t"])
        #expect(tokened.exposureProblem == nil)
    }

    /// Without tokens, a browser may call only from the gateway's own page, by a name DNS
    /// rebinding cannot take over; clients that are not browsers send no Origin.
    @Test func anOpenGatewayRefusesOtherSitesAndForeignNames() {
        let guarded = OpenGatewayGuard(publicURL: "https://Phone-Gateway.example/app")
        // Not a browser, or the gateway's own page.
        for (host, origin) in [("127.0.0.1:7420", nil), ("localhost:7420", "http://localhost:7420"), ("[::1]:7420", "http://[::1]:7420"),
                               ("127.0.0.1:7420", "http://127.0.0.1:7420"), ("phone-gateway.example", "https://phone-gateway.example"),
                               ("192.168.1.5:7420", nil)] as [(String, String?)] {
            #expect(guarded.problem(host: host, origin: origin) == nil, "\(host) \(origin ?? "-")")
        }
        // Another site's page, a sandboxed one, a rebound name, another port.
        for (host, origin) in [("127.0.0.1:7420", "https://evil.example"), ("127.0.0.1:7420", "null"),
                               ("evil.example:7420", "http://evil.example:7420"), ("evil.example:7420", nil),
                               ("127.0.0.1:7420", "http://127.0.0.1:8080"), ("phone-gateway.example:8443", "https://phone-gateway.example")]
                as [(String, String?)] {
            #expect(guarded.problem(host: host, origin: origin)?.kind.code == "forbidden", "\(host) \(origin ?? "-")")
        }
        #expect(OpenGatewayGuard(publicURL: nil).problem(host: "phone-gateway.example", origin: nil) != nil)
        // The Host header read by the one reader of host:port: case and brackets do not matter,
        // a Host that cannot be read is refused, an origin with no default port is no match.
        #expect(guarded.problem(host: "LOCALHOST:7420", origin: "http://localhost:7420") == nil)
        #expect(guarded.problem(host: "[::1]", origin: "http://[::1]") == nil)
        #expect(guarded.problem(host: "localhost:", origin: nil) == nil)  // an empty port
        #expect(guarded.problem(host: "", origin: nil) == nil)            // no authority at all
        for host in ["evil.example:x", "::1:7420", "a b"] {
            #expect(guarded.problem(host: host, origin: nil)?.kind.code == "forbidden", "\(host)")
        }
        #expect(guarded.problem(host: "localhost", origin: "chrome-extension://localhost")?.kind.code == "forbidden")
    }

    @Test func cookieAndBearerParsing() {
        #expect(AuthMiddleware.bearer("Bearer abc") == "abc")
        #expect(AuthMiddleware.bearer("bearer  abc ") == "abc")
        #expect(AuthMiddleware.bearer("Basic abc") == nil)
        #expect(AuthMiddleware.isJSON("application/json; charset=utf-8"))
        #expect(!AuthMiddleware.isJSON("text/plain") && !AuthMiddleware.isJSON(nil))
    }
}
