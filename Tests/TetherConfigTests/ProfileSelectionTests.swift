import Testing
@testable import TetherConfig

@Suite("Choosing a profile")
struct ProfileSelectionTests {
    static let two = """
    [profiles.home]
    backend = "opencode"
    url = "http://127.0.0.1:4096"

    [profiles.work]
    backend = "codex-worker"
    url = "http://127.0.0.1:8787"
    """
    let file = "/etc/tether/test.toml"

    @Test("a named profile wins over default_profile")
    func named() throws {
        let config = try parse("default_profile = \"home\"\n" + Self.two)
        #expect(try config.profile(named: "work").name == "work")
        #expect(try config.profile(named: nil).name == "home")
    }

    @Test("with no name and no default, the only profile is used")
    func onlyProfile() throws {
        #expect(try parse(minimalOpenCode).profile(named: nil).name == "home")
    }

    @Test("with no name, no default and several profiles, the error lists them and says how to choose")
    func noProfileChosen() throws {
        let config = try parse(Self.two)
        let error = try #require(throws: ConfigError.self) { try config.profile(named: nil) }
        expectComplete(error, code: .noProfileChosen, file: file, key: "default_profile",
                       fix: "pass -p NAME, or add default_profile = \"home\"", problem: "profiles: home, work")
        #expect(error.problem.contains("no profile chosen and no default_profile"))
    }

    @Test("an empty config has no profile to choose")
    func noProfiles() throws {
        let error = try #require(throws: ConfigError.self) { try parse("").profile(named: nil) }
        expectComplete(error, code: .noProfileChosen, file: file, key: "profiles", fix: "[profiles.NAME]")
    }

    @Test("an unknown name lists the available profiles and suggests the closest")
    func notFound() throws {
        let config = try parse(Self.two)
        let error = try #require(throws: ConfigError.self) { try config.profile(named: "hme") }
        expectComplete(error, code: .profileNotFound, file: file, key: "profiles.hme",
                       fix: "pass -p with one of: home, work", problem: "profile \"hme\" not found")
        #expect(error.problem.contains("did you mean \"home\"?"))
        let show = try #require(throws: ConfigError.self) { try config.redactedProfile(named: "nope") }
        #expect(show.code == .profileNotFound)
    }
}
