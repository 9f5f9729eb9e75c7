import Testing
import TetherCore
@testable import TetherNotification

struct NotificationSettingsChangeTests {
    @Test func readsNamesInEitherCaseAndNormalizes() throws {
        let change = try NotificationSettingsChange(["quietHoursStart": "7:05", "sound-enabled": "off", "enabled": "YES",
                                                     "quiet_hours_end": "23:59"])
        #expect(change.values == ["enabled": true, "sound_enabled": false, "quiet_hours_start": "07:05", "quiet_hours_end": "23:59"])
    }

    /// The contract's flat keys, plus the nested `quietHours` the desktop actually reads.
    @Test func paramsCarryBothShapes() throws {
        let change = try NotificationSettingsChange(["quiet_hours_enabled": "true", "quiet_hours_start": "22:30", "sound_enabled": "1"])
        #expect(change.params == [
            "soundEnabled": true, "quietHoursEnabled": true, "quietHoursStart": "22:30",
            "quietHours": ["enabled": true, "start": "22:30"],
        ])
        #expect(try NotificationSettingsChange(["enabled": "false"]).params == ["enabled": false])
    }

    @Test(arguments: [
        ["volume": "3"], ["enabled": "maybe"], ["quiet_hours_start": "25:00"], ["quiet_hours_end": "7pm"],
        ["quiet_hours_end": "07:5"], ["show_preview": "true"],
    ])
    func refusals(assignment: [String: String]) {
        #expect(throws: TetherError.self) { _ = try NotificationSettingsChange(assignment) }
        do {
            _ = try NotificationSettingsChange(assignment)
        } catch {
            #expect(error.code == .usage)
        }
    }
}
