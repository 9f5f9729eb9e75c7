import Testing
@testable import TetherCore

/// Bounded per-id state: the oldest inserted entry goes first, updates keep their place.
@Suite struct RecentMapTests {
    @Test func theOldestInsertedGoesFirstAndIsCounted() {
        var map = RecentMap<Int>(capacity: 3)
        for (index, key) in ["a", "b", "c"].enumerated() { map[key] = index }
        map["a"] = 10  // an update keeps a's place (oldest)
        map["d"] = 3
        #expect(map["a"] == nil)
        #expect(map["b"] == 1 && map["c"] == 2 && map["d"] == 3)
        #expect(map.count == 3 && map.evicted == 1)
    }

    @Test func aRemovedEntryFreesItsPlaceAndAReinsertedOneIsNew() {
        var map = RecentMap<Int>(capacity: 2)
        map["a"] = 1
        map["b"] = 2
        map["a"] = nil
        map["c"] = 3
        #expect(map.evicted == 0 && map["b"] == 2 && map["c"] == 3)
        map["a"] = 4  // newest now: b goes
        #expect(map["b"] == nil && map["a"] == 4 && map["c"] == 3 && map.evicted == 1)
    }

    /// Churn (a stream opening and finishing parts forever) keeps the bookkeeping bounded.
    @Test func churnStaysBounded() {
        var map = RecentMap<Int>(capacity: 100)
        for index in 0..<200_000 {
            map["k\(index)"] = index
            if index % 2 == 0 { map.removeValue(forKey: "k\(index)") }
        }
        #expect(map.count == 100)
        #expect(map.evicted == 100_000 - 100)
        #expect(Set(map.map(\.value)) == Set((199_800..<200_000).filter { $0 % 2 == 1 }))
    }

    /// A stream of ever-new keys (parts opened and never completed): every insert evicts the
    /// oldest, and the rows eviction has passed are let go of too, not kept with their keys.
    @Test func evictionAloneKeepsTheBookkeepingBounded() {
        var map = RecentMap<Int>(capacity: 1024)
        for index in 0..<100_000 { map["part-\(index)"] = index }
        #expect(map.count == 1024 && map.evicted == 100_000 - 1024)
        #expect(map.orderRows <= 2 * 1024 + 1)
        #expect(map["part-99999"] == 99_999 && map["part-\(100_000 - 1025)"] == nil)
    }
}
