import Foundation
import Logging
import Testing
@testable import TetherGateway

/// One-time pairing codes: random, single use, 5 minutes, shared through the database with
/// another process (`tether pair` beside a running gateway).
@Suite struct PairingTests {
    static func open(_ path: String) throws -> EventLog {
        try EventLog(path: path, logger: Logger(label: "test"))
    }

    @Test func aCodeWorksOnceAndOnlyForFiveMinutes() throws {
        let log = try Self.open(EventLogTests.temporaryPath())
        let minted = Date(timeIntervalSince1970: 1_800_000_000)
        let code = try log.mintPairingCode(now: minted)
        #expect(code.expires == minted.timeIntervalSince1970 + 300)
        #expect(try log.redeemPairingCode(code.code, now: minted.addingTimeInterval(299)))
        #expect(try !log.redeemPairingCode(code.code, now: minted.addingTimeInterval(299)), "a second use")

        let late = try log.mintPairingCode(now: minted)
        #expect(try !log.redeemPairingCode(late.code, now: minted.addingTimeInterval(300)), "at 5 minutes it has expired")
        #expect(try !log.redeemPairingCode(late.code, now: minted), "an expired code is gone, not kept for later")
    }

    @Test func codesAreRandomURLSafeAndRefusedWhenMalformed() throws {
        let log = try Self.open(EventLogTests.temporaryPath())
        let codes = try (0..<50).map { _ in try log.mintPairingCode().code }
        #expect(Set(codes).count == 50)
        for code in codes {
            #expect(code.count == 22 && PairingCode.isWellFormed(code), "\(code)")
            #expect(code.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }, "\(code)")
        }
        for wrong in ["", "x", codes[0] + "A", String(codes[0].dropLast()) + "=", "' OR 1=1 --aaaaaaaaaaaa"] {
            #expect(try !log.redeemPairingCode(wrong), "\(wrong)")
        }
        #expect(try log.redeemPairingCode(codes[0]))
    }

    /// `tether pair` mints in its own process, the gateway redeems in another: the database is
    /// the only thing they share.
    @Test func aCodeMintedByOneOpenerIsRedeemedOnceByAnother() throws {
        let path = EventLogTests.temporaryPath()
        let gateway = try Self.open(path)
        let code = try Self.open(path).mintPairingCode()
        #expect(try gateway.redeemPairingCode(code.code))
        #expect(try !Self.open(path).redeemPairingCode(code.code))
    }
}
