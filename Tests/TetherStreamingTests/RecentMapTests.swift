import Testing
import TetherTestSupport
@testable import TetherStreaming

/// Bounded per-id state: the oldest inserted entry goes first, updates keep their place.
@Suite struct RecentMapTests {
    @Test func theOldestInsertedGoesFirstAndIsCounted() {
        var map = RecentMap<String, Int>(capacity: 3)
        for (index, key) in ["a", "b", "c"].enumerated() { map[key] = index }
        map["a"] = 10  // an update keeps a's place (oldest)
        map["d"] = 3
        #expect(map["a"] == nil)
        #expect(map["b"] == 1 && map["c"] == 2 && map["d"] == 3)
        #expect(map.count == 3 && map.evicted == 1)
    }

    @Test func aRemovedEntryFreesItsPlaceAndAReinsertedOneIsNew() {
        var map = RecentMap<String, Int>(capacity: 2)
        map["a"] = 1
        map["b"] = 2
        map["a"] = nil
        map["c"] = 3
        #expect(map.evicted == 0 && map["b"] == 2 && map["c"] == 3)
        map["a"] = 4  // newest now: b goes
        #expect(map["b"] == nil && map["a"] == 4 && map["c"] == 3 && map.evicted == 1)
    }

    /// One lookup to open or change: a new key is stored as the newest (evicting as `set` does),
    /// an existing one is changed in place and keeps its place, and the value offered is dropped.
    @Test func insertOrUpdateStoresNewKeysAndChangesKnownOnes() {
        var map = RecentMap<String, Int>(capacity: 2)
        guard case .inserted(let none) = map.insert(1, forKey: "a", orUpdate: { $0 += 100 }) else {
            Issue.record("a new key was not inserted")
            return
        }
        #expect(none == nil && map["a"] == 1)
        guard case .updated = map.insert(7, forKey: "a", orUpdate: { $0 += 100 }) else {
            Issue.record("a known key was not updated")
            return
        }
        #expect(map["a"] == 101 && map.count == 1)
        _ = map.insert(2, forKey: "b", orUpdate: { _ in })
        _ = map.insert(0, forKey: "a", orUpdate: { $0 += 1 })  // an update keeps a's place (oldest)
        guard case .inserted(let released) = map.insert(3, forKey: "c", orUpdate: { _ in }) else {
            Issue.record("a new key was not inserted")
            return
        }
        #expect(released?.key == "a" && released?.value == 102)
        #expect(map["a"] == nil && map["b"] == 2 && map["c"] == 3 && map.evicted == 1)
        // Ever-new keys through it stay bounded, as through `set`.
        for index in 0..<50_000 { _ = map.insert(index, forKey: "k\(index)", orUpdate: { _ in }) }
        #expect(map.count == 2 && map.orderRows <= 2 * 16 + 1 && map["k49999"] == 49_999)
    }

    /// After compaction renumbered the rows (removals left dead ones among the live), a known key
    /// is still told from a new one, and the oldest still goes first.
    @Test func insertTellsKnownKeysFromNewOnesAfterRowsAreRenumbered() {
        var map = RecentMap<String, Int>(capacity: 64)
        for index in 0..<64 { _ = map.insert(index, forKey: "k\(index)", orUpdate: { _ in }) }
        for index in 0..<64 where index % 4 != 3 { map.removeValue(forKey: "k\(index)") }
        let rowsBefore = map.orderRows
        for index in 64..<96 { _ = map.insert(index, forKey: "k\(index)", orUpdate: { _ in }) }
        #expect(map.orderRows < rowsBefore, "the dead rows were dropped, the live ones renumbered")
        let known = (0..<64).filter { $0 % 4 == 3 } + Array(64..<96)
        for index in known {
            guard case .updated = map.insert(-1, forKey: "k\(index)", orUpdate: { $0 += 1000 }) else {
                Issue.record("k\(index) is known")
                return
            }
        }
        #expect(map["k3"] == 1003 && map["k95"] == 1095 && map.count == 48)
        for index in 96..<112 { _ = map.insert(index, forKey: "k\(index)", orUpdate: { _ in }) }
        guard case .inserted(let released) = map.insert(112, forKey: "k112", orUpdate: { _ in }) else {
            Issue.record("k112 is new")
            return
        }
        #expect(released?.key == "k3" && map["k112"] == 112 && map.count == 64)
    }

    /// Churn (a stream opening and finishing parts forever) keeps the bookkeeping bounded.
    @Test func churnStaysBounded() {
        var map = RecentMap<String, Int>(capacity: 100)
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
        var map = RecentMap<String, Int>(capacity: 1024)
        for index in 0..<100_000 { map["part-\(index)"] = index }
        #expect(map.count == 1024 && map.evicted == 100_000 - 1024)
        #expect(map.orderRows <= 2 * 1024 + 1)
        #expect(map["part-99999"] == 99_999 && map["part-\(100_000 - 1025)"] == nil)
    }

    /// What a stream does with a long part on every frame: take it out, change it, put it back
    /// (as the newest, like a removal and an insert). Doing it over and over leaves no rows behind.
    @Test func takingAnEntryOutAndPuttingItBackStaysBounded() {
        var map = RecentMap<String, Int>(capacity: 3)
        map["a"] = 0
        map["b"] = 0
        let first = map.take("a")!
        map.putBack(first.value, forKey: "a", at: first.place)  // b is now the oldest
        for round in 1...100_000 {
            let taken = map.take("a")!
            map.putBack(taken.value + 1, forKey: "a", at: taken.place)
            #expect(map.orderRows <= 2 * 16 + 1, "round \(round)")
        }
        map["c"] = 0
        map["d"] = 0  // b is the oldest: it goes
        #expect(map["b"] == nil && map["a"] == 100_000 && map["c"] == 0 && map["d"] == 0 && map.evicted == 1)
    }

    /// Any mix of inserts, updates and removals agrees with a plain list in insertion order
    /// (the definition), and the bookkeeping stays within twice the live entries.
    @Test(arguments: [1, 2, 3, 4])
    func agreesWithAnInsertionOrderedList(seed: UInt64) {
        var random = SeededRandom(seed: seed)
        let capacity = 8
        var map = RecentMap<String, Int>(capacity: capacity)
        var model: [(key: String, value: Int)] = []
        var modelEvicted = 0
        for step in 0..<20_000 {
            let key = "k\(random.next() % 24)"
            switch random.next() % 10 {
            case 0..<6:
                let released = map.set(step, forKey: key)
                if let index = model.firstIndex(where: { $0.key == key }) {
                    model[index].value = step
                    #expect(released == nil)
                } else {
                    model.append((key, step))
                    if model.count > capacity {
                        let oldest = model.removeFirst()
                        modelEvicted += 1
                        #expect(released?.key == oldest.key && released?.value == oldest.value)
                    } else {
                        #expect(released == nil)
                    }
                }
            case 6:
                // Taken out and put back (maybe after other changes): the same as removed and set again.
                guard let taken = map.take(key) else {
                    #expect(!model.contains { $0.key == key })
                    continue
                }
                let index = model.firstIndex(where: { $0.key == key })!
                #expect(taken.value == model[index].value)
                model.remove(at: index)
                if random.next() % 2 == 0, let other = model.first?.key {
                    map.removeValue(forKey: other)
                    model.removeFirst()
                }
                let released = map.putBack(step, forKey: key, at: taken.place)
                model.append((key, step))
                #expect(released == nil)
            case 7..<9:
                let removed = map.removeValue(forKey: key)
                let index = model.firstIndex(where: { $0.key == key })
                #expect(removed == index.map { model[$0].value })
                if let index { model.remove(at: index) }
            default:
                map.removeAll { _, value in value % 3 == 0 }
                model.removeAll { $0.value % 3 == 0 }
            }
            #expect(map.count == model.count && map.evicted == modelEvicted)
            #expect(map.orderRows <= 2 * 16 + 1)
        }
        #expect(Dictionary(uniqueKeysWithValues: map.map { ($0.key, $0.value) })
            == Dictionary(uniqueKeysWithValues: model.map { ($0.key, $0.value) }))
    }
}

