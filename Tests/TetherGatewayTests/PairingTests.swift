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

    @Test(arguments: StoreKind.allCases) func aCodeWorksOnceAndOnlyForFiveMinutes(_ kind: StoreKind) async throws {
        let log = try await StorePlace.fresh(kind).open()
        let minted = Date(timeIntervalSince1970: 1_800_000_000)
        let code = try await log.mintPairingCode(now: minted)
        #expect(code.expires == minted.timeIntervalSince1970 + 300)
        #expect(try await log.redeemPairingCode(code.code, now: minted.addingTimeInterval(299)))
        #expect(try await !log.redeemPairingCode(code.code, now: minted.addingTimeInterval(299)), "a second use")

        let late = try await log.mintPairingCode(now: minted)
        #expect(try await !log.redeemPairingCode(late.code, now: minted.addingTimeInterval(300)), "at 5 minutes it has expired")
        #expect(try await !log.redeemPairingCode(late.code, now: minted), "an expired code is gone, not kept for later")
    }

    @Test(arguments: StoreKind.allCases) func codesAreRandomURLSafeAndRefusedWhenMalformed(_ kind: StoreKind) async throws {
        let log = try await StorePlace.fresh(kind).open()
        var codes: [String] = []
        for _ in 0..<50 { codes.append(try await log.mintPairingCode().code) }
        #expect(Set(codes).count == 50)
        for code in codes {
            #expect(code.count == 22 && PairingCode.isWellFormed(code), "\(code)")
            #expect(code.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }, "\(code)")
        }
        for wrong in ["", "x", codes[0] + "A", String(codes[0].dropLast()) + "=", "' OR 1=1 --aaaaaaaaaaaa"] {
            #expect(try await !log.redeemPairingCode(wrong), "\(wrong)")
        }
        #expect(try await log.redeemPairingCode(codes[0]))
    }

    /// `tether pair` mints in its own process, the gateway redeems in another: the database is
    /// the only thing they share.
    @Test(arguments: StoreKind.allCases) func aCodeMintedByOneOpenerIsRedeemedOnceByAnother(_ kind: StoreKind) async throws {
        let place = try StorePlace.fresh(kind)
        let gateway = try await place.open()
        let code = try await place.open().mintPairingCode()
        #expect(try await gateway.redeemPairingCode(code.code))
        #expect(try await !place.open().redeemPairingCode(code.code))
    }
}
