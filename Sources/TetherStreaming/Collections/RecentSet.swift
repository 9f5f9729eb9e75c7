/// The last `capacity` distinct members inserted: what a stream uses to drop what it sees again
/// (an envelope replayed after a reconnect, a part already completed) in bounded memory — the
/// oldest member goes once past capacity.
///
/// The members sit in a ring, in the order they came; an open-addressing table (linear probing)
/// finds them by hash. Each member's hash is kept beside it, so an insert hashes once: the member
/// it evicts is found again by its kept hash, and the table grows without hashing anything again.
/// (A `Set` beside an array hashed every member twice, in and out: on a Codex Worker flood that
/// was a tenth of the run.)
public struct RecentSet<Member: Hashable & Sendable>: Sendable {
    public let capacity: Int
    /// Members by age; once full, `next` is the oldest, overwritten by the next insert.
    private var ring: [Member] = []
    private var hashes: [Int] = []
    private var next = 0
    /// Ring positions by hash; `empty` where none. A power of two, at most half full.
    private var slots: [Int32] = []
    private static var empty: Int32 { -1 }

    public init(capacity: Int, of: Member.Type) {
        precondition(capacity > 0 && capacity < Int(Int32.max), "RecentSet capacity out of range")
        self.capacity = capacity
    }

    public func contains(_ member: Member) -> Bool {
        find(member, hash: member.hashValue).found
    }

    /// Adds `member`; returns whether it was new. The oldest member goes once past capacity.
    @discardableResult
    public mutating func insert(_ member: Member) -> Bool {
        let hash = member.hashValue
        if find(member, hash: hash).found { return false }
        if ring.count < capacity {
            if (ring.count + 1) * 2 > slots.count { grow() }
            ring.append(member)
            hashes.append(hash)
            place(Int32(ring.count - 1), hash: hash)
        } else {
            remove(at: next)
            ring[next] = member
            hashes[next] = hash
            place(Int32(next), hash: hash)
            next = next + 1 == capacity ? 0 : next + 1
        }
        return true
    }

    // MARK: The table

    private var mask: Int { slots.count - 1 }

    /// Where probing for a hash starts (`hashValue` comes out of `Hasher`: its low bits are as
    /// good as any).
    private func home(_ hash: Int) -> Int { hash & mask }

    /// The slot holding `member`, or the empty slot where probing for it stopped.
    private func find(_ member: Member, hash: Int) -> (found: Bool, slot: Int) {
        guard !slots.isEmpty else { return (false, 0) }
        var slot = home(hash)
        while true {
            let position = slots[slot]
            if position == Self.empty { return (false, slot) }
            if hashes[Int(position)] == hash, ring[Int(position)] == member { return (true, slot) }
            slot = (slot + 1) & mask
        }
    }

    private mutating func place(_ position: Int32, hash: Int) {
        var slot = home(hash)
        while slots[slot] != Self.empty { slot = (slot + 1) & mask }
        slots[slot] = position
    }

    /// Takes the ring's member at `position` out of the table, shifting back the members probed
    /// past it so that no probe stops early at the hole.
    private mutating func remove(at position: Int) {
        var hole = home(hashes[position])
        while slots[hole] != Int32(position) { hole = (hole + 1) & mask }
        var slot = hole
        while true {
            slot = (slot + 1) & mask
            let moving = slots[slot]
            if moving == Self.empty { break }
            let wanted = home(hashes[Int(moving)])
            // Movable when its home is not cyclically within (hole, slot].
            let stays = hole <= slot ? (wanted > hole && wanted <= slot) : (wanted > hole || wanted <= slot)
            if !stays {
                slots[hole] = moving
                hole = slot
            }
        }
        slots[hole] = Self.empty
    }

    private mutating func grow() {
        var size = max(slots.count * 2, 16)
        while size < (ring.count + 1) * 2 { size *= 2 }
        slots = Array(repeating: Self.empty, count: size)
        for position in ring.indices { place(Int32(position), hash: hashes[position]) }
    }
}

extension RecentSet where Member == String {
    public init(capacity: Int) { self.init(capacity: capacity, of: String.self) }
}
