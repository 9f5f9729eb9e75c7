import Foundation
import TetherCore
import TetherStreaming

/// The JSON fixtures under Fixtures/, written from protocols/notification.md: relay frames,
/// and each method's result in the client contract's shape and in the real desktop's.
enum Fixture {
    static func file(_ name: String) throws -> JSONValue {
        guard let url = Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures") else {
            throw Missing(name: name)
        }
        return try JSONParser.parse([UInt8](try Data(contentsOf: url)))
    }

    static func entry(_ file: String, _ key: String) throws -> JSONValue {
        guard let value = try Fixture.file(file)[key] else { throw Missing(name: "\(file).json: \(key)") }
        return value
    }

    /// A relay frame as text, as it comes off the WebSocket.
    static func frame(_ key: String) throws -> String { try entry("relay-frames", key).serialized }
    static func contract(_ key: String) throws -> JSONValue { try entry("results-contract", key) }
    static func desktop(_ key: String) throws -> JSONValue { try entry("results-desktop", key) }

    struct Missing: Error { let name: String }
}
