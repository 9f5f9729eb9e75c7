/// A dictionary that keeps at most `capacity` entries, letting go of the oldest inserted first:
/// the per-part, per-message and per-session state an adapter holds for things that may never
/// finish (a part whose final snapshot never comes, a session that is never seen again). An
/// update keeps an entry's place; removing frees it. `evicted` counts what the bound let go of,
/// so the stream can say so once instead of silently.
public struct RecentMap<Value>: Sequence {
    private var entries: [String: (value: Value, stamp: UInt64)] = [:]
    /// Keys in insertion order with the stamp they were inserted under; entries removed or
    /// re-inserted since leave stale rows, skipped when the head is reached.
    private var order: [(key: String, stamp: UInt64)] = []
    private var head = 0
    private var nextStamp: UInt64 = 0
    public let capacity: Int
    /// Entries let go of because the map was full.
    public private(set) var evicted = 0

    public init(capacity: Int) {
        self.capacity = Swift.max(1, capacity)
    }

    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }

    public subscript(key: String) -> Value? {
        get { entries[key]?.value }
        set {
            guard let newValue else {
                entries[key] = nil
                return
            }
            set(newValue, forKey: key)
        }
    }

    /// Stores `value`; returns the entry the bound let go of to make room, if any.
    @discardableResult
    public mutating func set(_ value: Value, forKey key: String) -> (key: String, value: Value)? {
        // One hash for a new key (what callers that take an entry out and put it back do most).
        nextStamp &+= 1
        if let previous = entries.updateValue((value, nextStamp), forKey: key) {
            entries[key]?.stamp = previous.stamp  // an update keeps its place
            return nil
        }
        order.append((key, nextStamp))
        defer { compactIfSparse() }
        return evictIfFull()
    }

    /// Changes an entry in place (no copy of what it holds); nil when there is none.
    @discardableResult
    public mutating func update<Result>(_ key: String, _ body: (inout Value) -> Result) -> Result? {
        guard let index = entries.index(forKey: key) else { return nil }
        return body(&entries.values[index].value)
    }

    @discardableResult
    public mutating func removeValue(forKey key: String) -> Value? {
        entries.removeValue(forKey: key)?.value
    }

    public mutating func removeAll(where shouldRemove: (String, Value) -> Bool) {
        entries = entries.filter { !shouldRemove($0.key, $0.value.value) }
    }

    public var keys: [String] { Array(entries.keys) }
    public var values: [Value] { entries.values.map(\.value) }

    public func makeIterator() -> AnyIterator<(key: String, value: Value)> {
        var inner = entries.makeIterator()
        return AnyIterator { inner.next().map { ($0.key, $0.value.value) } }
    }

    private mutating func evictIfFull() -> (key: String, value: Value)? {
        while entries.count > capacity, head < order.count {
            let (key, stamp) = order[head]
            head += 1
            if let index = entries.index(forKey: key), entries.values[index].stamp == stamp {
                let entry = entries.remove(at: index)
                evicted += 1
                return (key, entry.value.value)
            }
        }
        return nil
    }

    /// Rows of insertion order kept, live and stale (for tests: bounded whatever the churn).
    var orderRows: Int { order.count }

    /// Rows already passed by eviction, and stale rows (removed or replaced entries), are
    /// dropped once they outnumber the live ones. Both count: a stream of ever-new keys passes
    /// one row a key, and a row keeps its key's string alive.
    private mutating func compactIfSparse() {
        guard order.count > 2 * Swift.max(entries.count, 16) else { return }
        if order.count - head == entries.count {
            // Only passed rows (nothing removed or replaced since): drop them, no lookups.
            order.removeFirst(head)
        } else {
            order = order[head...].filter { entries[$0.key]?.stamp == $0.stamp }
        }
        head = 0
    }
}

extension RecentMap: Sendable where Value: Sendable {}
