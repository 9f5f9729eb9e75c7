import Foundation
import GRDB

/// One-time pairing codes (gateway.md, "Pairing"): `tether pair` or `tether serve --pair` mints
/// one in the gateway's database (so a running gateway honours it: no API call, no token needed
/// by the command), the page trades it once for a login cookie (`POST /v1/pair`). A code is
/// random (128 bits), works once, and ends `PairingCode.lifetime` after it was minted; it is
/// never a token, and the database is private to its user (PrivateFile).
public struct PairingCode: Sendable, Equatable {
    public static let lifetime: TimeInterval = 300

    public let code: String
    /// When it stops working (seconds since 1970, wall clock: the minting process may be another).
    public let expires: TimeInterval

    /// 16 random bytes as base64url without padding: 22 characters, safe in a URL fragment.
    static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// What a code looks like; anything else is refused before the database is asked.
    static func isWellFormed(_ text: String) -> Bool {
        text.utf8.count == 22 && text.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2D || byte == 0x5F
        }
    }
}

extension EventLog {
    static func registerPairingMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v3 pairing codes") { db in
            try db.execute(sql: "CREATE TABLE pairing_code (code TEXT PRIMARY KEY, expires REAL NOT NULL)")
        }
    }

    /// A new code, valid for `lifetime` seconds from `now`. Expired codes are removed on the way.
    public func mintPairingCode(now: Date = Date(), lifetime: TimeInterval = PairingCode.lifetime) throws -> PairingCode {
        let code = PairingCode(code: PairingCode.random(), expires: now.timeIntervalSince1970 + lifetime)
        try pool.write { db in
            try db.execute(sql: "DELETE FROM pairing_code WHERE expires <= ?", arguments: [now.timeIntervalSince1970])
            try db.execute(sql: "INSERT INTO pairing_code (code, expires) VALUES (?, ?)", arguments: [code.code, code.expires])
        }
        return code
    }

    /// Whether `code` was a live code. It is used up by this call either way: a second redeem of
    /// the same code (in this process or another) is false.
    public func redeemPairingCode(_ code: String, now: Date = Date()) throws -> Bool {
        guard PairingCode.isWellFormed(code) else { return false }
        return try pool.write { db in
            try db.execute(sql: "DELETE FROM pairing_code WHERE code = ? AND expires > ?", arguments: [code, now.timeIntervalSince1970])
            let redeemed = db.changesCount == 1
            try db.execute(sql: "DELETE FROM pairing_code WHERE code = ? OR expires <= ?", arguments: [code, now.timeIntervalSince1970])
            return redeemed
        }
    }
}
