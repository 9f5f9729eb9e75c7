import Foundation
import Testing
@testable import TetherConfig

/// A fresh directory under the system temp dir that stands in for `$HOME`; removed by `cleanup()`.
struct Sandbox {
    let root: String

    init() throws {
        root = NSTemporaryDirectory() + "tether-config-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    }

    /// A home directory inside the sandbox and the given variables: never the real home or environment.
    func environment(_ variables: [String: String] = [:]) -> ConfigEnvironment {
        ConfigEnvironment(variables: variables, homeDirectory: root + "/home")
    }

    func path(_ relative: String) -> String { root + "/" + relative }

    /// Writes `text` at `relative` (creating parents) with permission bits `mode`; returns the path.
    @discardableResult
    func write(_ relative: String, _ text: String, mode: Int = 0o600) throws -> String {
        let file = path(relative)
        try FileManager.default.createDirectory(
            atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: file)
        return file
    }

    func mode(of relative: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path(relative))
        return (attributes[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    func cleanup() {
        try? FileManager.default.removeItem(atPath: root)
    }
}

/// Parses config text as if read from `path` with mode 0600 (so only the permission tests see 0644).
func parse(_ text: String, path: String = "/etc/tether/test.toml", mode: UInt32? = 0o600,
           environment: ConfigEnvironment = ConfigEnvironment(homeDirectory: "/home/me")) throws -> ConfigFile {
    try ConfigFile.parse(text, path: path, fileMode: mode, environment: environment)
}

/// The `ConfigError` that parsing `text` throws.
func parseError(_ text: String, path: String = "/etc/tether/test.toml", mode: UInt32? = 0o600,
                sourceLocation: SourceLocation = #_sourceLocation) throws -> ConfigError {
    try #require(throws: ConfigError.self, sourceLocation: sourceLocation) {
        try parse(text, path: path, mode: mode)
    }
}

/// Every message names the file, the key and the fix.
func expectComplete(
    _ error: ConfigError, code: ConfigError.Code, file: String?, key: String?, fix: String,
    problem: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
) {
    let message = error.description
    #expect(error.code == code, "code \(error.code), expected \(code): \(message)", sourceLocation: sourceLocation)
    if let file {
        #expect(error.file == file, sourceLocation: sourceLocation)
        #expect(message.contains(file), "file missing from: \(message)", sourceLocation: sourceLocation)
    }
    if let key {
        #expect(error.key == key, sourceLocation: sourceLocation)
        #expect(message.contains(key), "key missing from: \(message)", sourceLocation: sourceLocation)
    }
    #expect(message.contains("fix: "), sourceLocation: sourceLocation)
    #expect(error.fix.contains(fix), "fix \"\(error.fix)\" lacks \"\(fix)\"", sourceLocation: sourceLocation)
    if let problem {
        #expect(error.problem.contains(problem), "problem \"\(error.problem)\" lacks \"\(problem)\"",
                sourceLocation: sourceLocation)
    }
}

/// A minimal valid profile table body for each backend.
let minimalOpenCode = """
[profiles.home]
backend = "opencode"
url = "http://127.0.0.1:4096"
"""
