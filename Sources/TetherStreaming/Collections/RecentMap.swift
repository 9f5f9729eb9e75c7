/// A dictionary that keeps at most `capacity` entries, letting go of the oldest inserted first:
/// the per-part, per-message and per-session state an adapter holds for things that may never
/// finish (a part whose final snapshot never comes, a session that is never seen again). An
/// update keeps an entry's place; removing frees it. `evicted` counts what the bound let go of,
/// so the stream can say so once instead of silently.
public struct RecentMap<Key: Hashable, Value>: Sequence {
    /// Each entry with the number of its row in `order`.
    private var entries: [Key: (value: Value, row: Int)] = [:]
    /// Keys in insertion order; the row of an entry removed since is nil. Row `n` is at
    /// `order[n - firstRow]`: rows keep their numbers when the rows before them are dropped, so
    /// neither removing an entry nor dropping the passed rows looks anything up.
    private var order: [Key?] = []
    private var firstRow = 0
    /// The index in `order` of the oldest row eviction has not passed.
    private var head = 0
    /// Rows at or after `head` whose entry was removed.
    private var deadRows = 0
    public let capacity: Int
    /// Entries let go of because the map was full.
    public private(set) var evicted = 0

    public init(capacity: Int) {
        self.capacity = Swift.max(1, capacity)
    }

    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }

    public subscript(key: Key) -> Value? {
        get { entries[key]?.value }
        set {
            guard let newValue else {
                removeValue(forKey: key)
                return
            }
            set(newValue, forKey: key)
        }
    }

    /// Stores `value`; returns the entry the bound let go of to make room, if any.
    @discardableResult
    public mutating func set(_ value: Value, forKey key: Key) -> (key: Key, value: Value)? {
        // One hash for a new key (what callers that take an entry out and put it back do most).
        let row = firstRow + order.count
        if let previous = entries.updateValue((value, row), forKey: key) {
            entries[key]?.row = previous.row  // an update keeps its place
            return nil
        }
        order.append(key)
        defer { compactIfSparse() }
        return evictIfFull()
    }

    /// What `insert(_:forKey:orUpdate:)` did.
    public enum Insertion {
        /// The key was new: `value` is stored as the newest, and the bound let go of this entry, if any.
        case inserted(released: (key: Key, value: Value)?)
        /// The key had an entry, changed in place by the update.
        case updated
    }

    /// Stores `value` when `key` has no entry, else changes that entry in place with `update` (and
    /// `value` is dropped): one lookup either way, where `update` then `set` would take two.
    public mutating func insert(_ value: Value, forKey key: Key, orUpdate update: (inout Value) -> Void) -> Insertion {
        // A row number no entry has: an entry that has it after the access was just stored.
        let row = firstRow + order.count
        var inserted = false
        Self.access(&entries[key, default: (value, row)]) { entry in
            if entry.row == row { inserted = true } else { update(&entry.value) }
        }
        guard inserted else { return .updated }
        order.append(key)
        defer { compactIfSparse() }
        return .inserted(released: evictIfFull())
    }

    private static func access<Entry>(_ entry: inout Entry, _ body: (inout Entry) -> Void) { body(&entry) }

    /// Changes an entry in place (no copy of what it holds); nil when there is none.
    @discardableResult
    public mutating func update<Result>(_ key: Key, _ body: (inout Value) -> Result) -> Result? {
        guard let index = entries.index(forKey: key) else { return nil }
        return body(&entries.values[index].value)
    }

    @discardableResult
    public mutating func removeValue(forKey key: Key) -> Value? {
        guard let removed = entries.removeValue(forKey: key) else { return nil }
        markDead(row: removed.row)
        return removed.value
    }

    /// Where a taken entry was (`take`), for `putBack`.
    public struct Place: Sendable {
        fileprivate let row: Int
    }

    /// Takes an entry out to change it without copying what it holds: `removeValue`, with the
    /// entry's place for `putBack`.
    public mutating func take(_ key: Key) -> (value: Value, place: Place)? {
        guard let removed = entries.removeValue(forKey: key) else { return nil }
        markDead(row: removed.row)
        return (removed.value, Place(row: removed.row))
    }

    /// Stores a taken entry again, as the newest — what `set` does after `removeValue` — but in
    /// its own row when that is still the last one: a part changed on every frame of a stream
    /// leaves no row behind per frame. Returns what the bound let go of, if anything.
    @discardableResult
    public mutating func putBack(_ value: Value, forKey key: Key, at place: Place) -> (key: Key, value: Value)? {
        let index = place.row - firstRow
        // Rows are never reused: the last row, dead and at this number, is the one taken.
        guard index == order.count - 1, index >= head, order[index] == nil, entries.index(forKey: key) == nil else {
            return set(value, forKey: key)
        }
        entries[key] = (value, place.row)
        order[index] = key
        deadRows -= 1
        return evictIfFull()
    }

    public mutating func removeAll(where shouldRemove: (Key, Value) -> Bool) {
        var kept: [Key: (value: Value, row: Int)] = [:]
        for (key, entry) in entries {
            if shouldRemove(key, entry.value) { markDead(row: entry.row) } else { kept[key] = entry }
        }
        entries = kept
    }

    public var keys: [Key] { Array(entries.keys) }
    public var values: [Value] { entries.values.map(\.value) }

    public func makeIterator() -> AnyIterator<(key: Key, value: Value)> {
        var inner = entries.makeIterator()
        return AnyIterator { inner.next().map { ($0.key, $0.value.value) } }
    }

    private mutating func markDead(row: Int) {
        order[row - firstRow] = nil
        deadRows += 1
    }

    private mutating func evictIfFull() -> (key: Key, value: Value)? {
        while entries.count > capacity, head < order.count {
            let key = order[head]
            head += 1
            guard let key else {
                deadRows -= 1
                continue
            }
            guard let entry = entries.removeValue(forKey: key) else { continue }  // (a live row always has its entry)
            evicted += 1
            return (key, entry.value)
        }
        return nil
    }

    /// Rows kept, live and dead (for tests: bounded whatever the churn).
    var orderRows: Int { order.count }

    /// Rows already passed by eviction, and dead rows, are dropped once they outnumber the live
    /// ones. Both count: a stream of ever-new keys passes one row a key, a part taken out and
    /// put back on every frame leaves one dead row a frame, and a row keeps its key's string alive.
    private mutating func compactIfSparse() {
        guard order.count > 2 * Swift.max(entries.count, 16) else { return }
        // Dead rows at the front are passed rows too.
        while head < order.count, order[head] == nil {
            head += 1
            deadRows -= 1
        }
        if deadRows == 0 {
            // Only passed rows: drop them; the live rows keep their numbers.
            order.removeFirst(head)
            firstRow += head
        } else {
            // Renumber the live rows, in order, from the front.
            let live = order[head...].compactMap { $0 }
            firstRow += order.count  // past every row number in use, so none is reused
            order = live
            for (index, key) in live.enumerated() { entries[key]?.row = firstRow + index }
            deadRows = 0
        }
        head = 0
    }
}

extension RecentMap: Sendable where Key: Sendable, Value: Sendable {}
