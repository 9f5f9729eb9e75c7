import Testing
import TetherCore
import TetherAdapterSupport

@Suite struct PathSegmentTests {
    @Test func everythingButUnreservedBytesIsEncoded() throws {
        #expect(try PathSegment("ses_AbC-1.2~x").encoded == "ses_AbC-1.2~x")
        #expect(try PathSegment("a/b").encoded == "a%2Fb")
        #expect(try PathSegment("%2e%2e%2f").encoded == "%252e%252e%252f")
        #expect(try PathSegment("a?b#c d").encoded == "a%3Fb%23c%20d")
        #expect(try PathSegment("é").encoded == "%C3%A9")
        #expect(try PathSegment("...").encoded == "...")
        #expect("/v1/threads/\(try PathSegment("x/y"))/turns" == "/v1/threads/x%2Fy/turns")
    }

    @Test func dotSegmentsAndEmptyIdsAreUsageErrors() {
        for id in ["", ".", ".."] {
            #expect(throws: TetherError.self, "\(id)") { try PathSegment(id) }
            do {
                _ = try PathSegment(id, what: "session id")
            } catch {
                #expect(error.code == .usage && error.message.contains("session id"))
            }
        }
    }
}
