import Foundation

/// Identifiers in OpenCode's layout: a prefix (`ses_`, `msg_`, `prt_`, `per_`, `que_`, `evt_`,
/// `call_`) then 26 characters — 12 hex of a millisecond clock with a counter, 14 base62. Message,
/// part and event IDs ascend (lexically sortable); session IDs descend, as the notes describe.
final class OpenCodeIDs: Sendable {
    private let last = Locked<UInt64>(0)
    /// SplitMix64, seeded once from the system: a flood names ~100,000 events a second, and a
    /// system random draw per character made the simulator, not the client, the bottleneck.
    private let random = Locked<UInt64>(UInt64.random(in: .min ... .max))
    private static let base62 = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")

    func ascending(_ prefix: String) -> String {
        prefix + "_" + hex12(nextTick()) + randomTail()
    }

    func descending(_ prefix: String) -> String {
        prefix + "_" + hex12(0xFFFF_FFFF_FFFF - nextTick()) + randomTail()
    }

    func event() -> String { ascending("evt") }

    /// `count` ascending IDs reserved at once, for a pre-rendered flood: one tick each (the
    /// clock is moved past them) and one random tail shared by all, so naming 200,000 parts costs
    /// no more than formatting their numbers. Still valid, unique and ascending in OpenCode's layout.
    func ascendingSeries(_ prefix: String, count: Int) -> (Int) -> String {
        let first = nextTick()
        last.withLock { last in last = max(last, first + UInt64(max(0, count))) }
        let head = prefix + "_"
        let tail = randomTail()
        return { [self] index in head + hex12(first + UInt64(index)) + tail }
    }

    /// Strictly increasing within 48 bits: milliseconds since 2020-09 shifted left 8 bits (room for
    /// 256 IDs a millisecond), bumped when it repeats.
    private func nextTick() -> UInt64 {
        let millis = UInt64(max(0, Date().timeIntervalSince1970 * 1000 - 1_600_000_000_000))
        let now = (millis << 8) & 0xFFFF_FFFF_FFFF
        return last.withLock { last in
            last = max(now, last + 1)
            return last
        }
    }

    private func hex12(_ value: UInt64) -> String {
        let hex = String(value & 0xFFFF_FFFF_FFFF, radix: 16)
        return String(repeating: "0", count: max(0, 12 - hex.count)) + hex
    }

    private func randomTail() -> String {
        let draws = random.withLock { state in (Self.splitMix(&state), Self.splitMix(&state)) }
        var value = draws.0
        var tail = ""
        tail.reserveCapacity(14)
        for index in 0..<14 {
            // 7 characters from each 64-bit draw (62^7 < 2^42).
            if index == 7 { value = draws.1 }
            tail.append(Self.base62[Int(value % 62)])
            value /= 62
        }
        return tail
    }

    private static func splitMix(_ state: inout UInt64) -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Epoch milliseconds, the unit of every OpenCode timestamp.
func epochMilliseconds() -> Int {
    Int(Date().timeIntervalSince1970 * 1000)
}
