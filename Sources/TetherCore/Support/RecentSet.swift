/// A set that remembers only its most recent members, so dedup state stays bounded on an
/// endless stream. Every adapter drops duplicates with one.
/// Members are strings (ids) unless a stream keys its dedup on a composite (`init(capacity:of:)`).
public struct RecentSet<Member: Hashable & Sendable>: Sendable {
    private var members: Set<Member> = []
    private var order: [Member] = []
    private var head = 0
    public let capacity: Int

    public init(capacity: Int, of: Member.Type) { self.capacity = capacity }

    public func contains(_ member: Member) -> Bool { members.contains(member) }

    /// Adds `member`; returns whether it was new. The oldest member goes once past capacity.
    @discardableResult
    public mutating func insert(_ member: Member) -> Bool {
        guard members.insert(member).inserted else { return false }
        order.append(member)
        if members.count > capacity {
            members.remove(order[head])
            head += 1
            if head > capacity {
                order.removeFirst(head)
                head = 0
            }
        }
        return true
    }
}

extension RecentSet where Member == String {
    public init(capacity: Int) { self.init(capacity: capacity, of: String.self) }
}
