/// A set that remembers only its most recent members, so dedup state stays bounded on an
/// endless stream. Every adapter drops duplicates with one.
public struct RecentSet: Sendable {
    private var members: Set<String> = []
    private var order: [String] = []
    private var head = 0
    public let capacity: Int

    public init(capacity: Int) { self.capacity = capacity }

    public func contains(_ member: String) -> Bool { members.contains(member) }

    /// Adds `member`; returns whether it was new. The oldest member goes once past capacity.
    @discardableResult
    public mutating func insert(_ member: String) -> Bool {
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
