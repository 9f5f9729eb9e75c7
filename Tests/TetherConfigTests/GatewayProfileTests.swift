import Foundation
import Testing
@testable import TetherConfig
import TetherCore

@Suite("backend = \"gateway\": another tether serve")
struct GatewayProfileTests {
    @Test("url, an optional token and an optional remote profile")
    func keys() throws {
        let config = try parse("""
            [profiles.office]
            backend = "gateway"
            url = "https://gateway.example:8790"
            token = { env = "GW" }
            remote_profile = "work"
            """)
        let profile = try config.profile(named: "office")
        guard case .gateway(let settings) = profile.settings else { Issue.record("not a gateway profile"); return }
        #expect(settings.url.absoluteString == "https://gateway.example:8790")
        #expect(settings.token?.reference == .environment("GW"))
        #expect(settings.remoteProfile == "work")
        #expect(profile.secrets.count == 1)
        #expect(profile.endpoint == "https://gateway.example:8790")
    }

    @Test("a missing url, another scheme, a remote profile that is no name, or another backend's key: refused with what to write")
    func refusals() throws {
        let none = try parseError("[profiles.o]\nbackend = \"gateway\"\n")
        expectComplete(none, code: .missingKey, file: "/etc/tether/test.toml", key: "profiles.o.url", fix: "url = \"http://127.0.0.1:8790\"")
        let scheme = try parseError("[profiles.o]\nbackend = \"gateway\"\nurl = \"ws://h:1\"\n")
        expectComplete(scheme, code: .invalidValue, file: "/etc/tether/test.toml", key: "profiles.o.url", fix: "http")
        let dots = try parseError("[profiles.o]\nbackend = \"gateway\"\nurl = \"http://h:1\"\nremote_profile = \"..\"\n")
        expectComplete(dots, code: .invalidValue, file: "/etc/tether/test.toml", key: "profiles.o.remote_profile", fix: "remote_profile")
        let password = try parseError("[profiles.o]\nbackend = \"gateway\"\nurl = \"http://h:1\"\npassword = \"x\"\n")
        #expect(password.description.contains("opencode"), "\(password)")
    }
}
