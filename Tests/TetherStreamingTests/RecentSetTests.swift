import Testing
import TetherTestSupport
@testable import TetherStreaming

@Suite struct RecentSetTests {
    /// A member whose hash is chosen by the test: few distinct hashes make long probe chains
    /// that wrap around the table, which is where removing from open addressing goes wrong.
    struct Colliding: Hashable, Sendable {
        let id: Int
        let bucket: Int
        func hash(into hasher: inout Hasher) { hasher.combine(bucket) }
    }

    /// Any run of inserts agrees with the definition — a list of the distinct members in the
    /// order they came, the oldest dropped past capacity — in what `insert` returns and what
    /// `contains` says of every member there could be.
    @Test(arguments: [(1, 1), (2, 3), (3, 8), (4, 64), (5, 100)])
    func agreesWithAnInsertionOrderedList(seed: UInt64, capacity: Int) {
        var random = SeededRandom(seed: seed)
        let universe = capacity * 3 + 5
        // Three hashes in all: every member probes past others, and removals shift them back.
        let members = (0..<universe).map { Colliding(id: $0, bucket: $0 % 3) }
        var set = RecentSet(capacity: capacity, of: Colliding.self)
        var model: [Colliding] = []
        for step in 0..<20_000 {
            let member = members[Int(random.next() % UInt64(universe))]
            let inserted = set.insert(member)
            #expect(inserted == !model.contains(member), "step \(step)")
            if inserted {
                model.append(member)
                if model.count > capacity { model.removeFirst() }
            }
            if step % 97 == 0 {
                for candidate in members { #expect(set.contains(candidate) == model.contains(candidate), "step \(step)") }
            }
        }
    }

    @Test func stringsAndTheOldestGoing() {
        var set = RecentSet(capacity: 2)
        let inserted = [set.insert("a"), set.insert("b"), set.insert("a")]
        #expect(inserted == [true, true, false])
        let c = set.insert("c")  // a is the oldest (inserting it again did not renew it): it goes
        #expect(c && !set.contains("a") && set.contains("b") && set.contains("c"))
        let a = set.insert("a")
        #expect(a && !set.contains("b"))
    }
}
