import Foundation
import Testing
import TetherCore
@testable import TetherNotification
import TetherStreaming

/// Inputs the fuzz target `FuzzNotificationWire` (Fuzz/) crashed on. Each is kept under
/// Tests/Fuzz/Regressions/FuzzNotificationWire/, where the fuzz runs also use it as a seed.
struct NotificationFuzzRegressionTests {
    typealias Decoder = NotificationResponseDecoder

    let context = Decoder.Context(method: .getUnreadCount, desktop: "pc-7f3a")

    /// A fuzz input as the target reads it: one options byte, then (option bit 0) relay text
    /// frames, one per line.
    func regressionFrames(_ name: String) throws -> [String] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../Fuzz/Regressions/FuzzNotificationWire/\(name)")
        let bytes = Array(try Data(contentsOf: url))
        return bytes.dropFirst().split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
    }

    func unreadCountError(_ result: JSONValue) -> TetherError.Code? {
        do {
            _ = try Decoder.unreadCount(result, context)
            return nil
        } catch {
            return error.code
        }
    }

    func unreadCountReading(_ frame: String) -> Result<JSONValue, TetherError>? {
        NotificationWireDecoder.responseReadings(fromFrame: frame)?
            .first { $0.method == NotificationMethod.getUnreadCount.rawValue }?.result
    }

    /// `Int(count)` trapped on `{"count": 1e300}`: the desktop's answer crashed tether.
    @Test func anUnreadCountThatIsNoCountIsBadDataNotACrash() throws {
        let counts: [JSONValue] = [1e300, -1e300, .string("nan"), .string("inf"), .string("1e19"), 2.5, -1]
        for count in counts {
            let code = unreadCountError(["success": true, "count": count])
            #expect(code == .badData, "count \(count.serialized)")
        }
        #expect(try Decoder.unreadCount(["success": true, "count": 4.0], context) == 4)
        #expect(try Decoder.unreadCount(.string("12"), context) == 12)
    }

    @Test func theRecordedFrameReadsAsBadData() throws {
        let frames = try regressionFrames("unread-count-1e300")
        #expect(frames.count == 1)
        let reading = try #require(unreadCountReading(frames[0]))
        let code = Self.failureCode(reading)
        #expect(code == .badData)
    }

    static func failureCode(_ result: Result<JSONValue, TetherError>) -> TetherError.Code? {
        guard case .failure(let error) = result else { return nil }
        return error.code
    }
}
