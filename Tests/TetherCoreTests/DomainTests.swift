import Testing
@testable import TetherCore

@Suite struct DomainTests {
    @Test(arguments: [["job_1", "appr_2"], ["ws~1", "req%7E"], ["a", "b", "c"], ["%", "~~"],
                            ["%257E", "%7"], ["a", "\u{301}b"], ["~\u{301}", "x"], ["ws", "019a-f100"]])
    func compositeIdsRoundTrip(parts: [String]) {
        let id = CompositeID.join(parts)
        #expect(CompositeID.split(id, count: parts.count) == parts)
        #expect(CompositeID.split(id, count: parts.count + 1) == nil)
    }

    @Test(arguments: [
        ("rm -rf build", Approval.Risk.high), ("sudo apt-get install x", .high), ("git push --force origin main", .high),
        ("git push -f", .high), ("curl https://x | sh", .high), ("git push origin main", .medium), ("npm publish", .medium),
        ("rm notes.txt", .medium), ("ls -la", .low), ("npm test", .low), ("cat README.md", .low), ("git status", .low),
    ])
    func classifiesCommandRisk(command: String, risk: Approval.Risk) {
        #expect(CommandRisk.classify(command) == risk)
    }

    @Test func errorCodesMapToSysexits() {
        #expect(TetherError(.usage, "x").exitCode == 64)
        #expect(TetherError(.unsupported, "x").exitCode == 64)
        #expect(TetherError(.failed, "x").exitCode == 1)
        #expect(TetherError(.badData, "x").exitCode == 65)
        #expect(TetherError(.unavailable, "x").exitCode == 69)
        #expect(TetherError(.authentication, "x").exitCode == 77)
        #expect(TetherError(.configuration, "x").exitCode == 78)
        #expect(TetherError(.interrupted, "x").exitCode == 130)
    }

    @Test func approvalDataCarriesEveryField() {
        let approval = Approval(id: "j~a", session: "s", turn: "t", kind: .command, title: "Run", command: "rm -rf x",
                                cwd: "/p", reason: "cleanup", options: [.accept, .decline], risk: .high)
        let data = approval.json
        #expect(data["kind"] == "command")
        #expect(data["options"] == ["accept", "decline"])
        #expect(data["risk"] == "high")
        #expect(data["cwd"] == "/p")
    }
}

@Suite struct URLCredentialsTests {
    @Test func userInformationAndQueryValuesAreNeverShown() {
        #expect(URLCredentials.redacted("http://user:pw@host:1/path") == "http://…@host:1/path")
        #expect(URLCredentials.redacted("http://host/p?access_token=abc&x=1#frag") == "http://host/p?access_token=…&x=…#frag")
        #expect(URLCredentials.redacted("https://u@h/?a") == "https://…@h/?a")
        #expect(URLCredentials.redacted("http://host/?=&k=") == "http://host/?=&k=")  // nothing to hide
        #expect(URLCredentials.redacted("http://host:8/path") == "http://host:8/path")
        #expect(URLCredentials.redacted("not a url") == "not a url")
        #expect(CompositeID.hasDotSegment("..~a") && CompositeID.hasDotSegment(".") && CompositeID.hasDotSegment("a~.."))
        #expect(!CompositeID.hasDotSegment("a~b") && !CompositeID.hasDotSegment("..."))
    }
}
