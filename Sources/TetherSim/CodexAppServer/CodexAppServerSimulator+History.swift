import Foundation

/// The read side: `thread/list`, `thread/loaded/list`, `thread/read`, and the paginated history
/// `thread/turns/list` / `thread/items/list`, which show only persisted (completed) items
/// (note §3).
extension CodexAppServerSimulator {
    /// A page of `all` from `cursor` (an offset, as this simulator spells its cursors).
    static func page<T>(_ all: [T], params: JSON) -> (items: [T], next: JSON) {
        let start = min(all.count, max(0, Int(params.optionalString("cursor") ?? "") ?? 0))
        var end = all.count
        if let limit = params["limit"]?.intValue, limit > 0 { end = min(all.count, start + limit) }
        return (Array(all[start..<end]), end < all.count ? .string(String(end)) : .null)
    }

    func threadList(id: JSON, params: JSON, from connection: Int) {
        let archived = params.flag("archived")
        var cwds: Set<String>?
        if let cwd = params["cwd"]?.stringValue { cwds = [cwd] }
        if let list = params["cwd"]?.arrayValue { cwds = Set(list.compactMap(\.stringValue)) }
        let search = params.optionalString("searchTerm")?.lowercased()
        state.withLock { state in
            // A thread with no turn has no rollout yet, so it is not listed (note §10).
            let matching = state.threadOrder.compactMap { state.threads[$0] }.filter { record in
                record.hasRollout && record.archived == archived && (cwds?.contains(record.cwd) ?? true)
                    && (search.map { record.preview.lowercased().contains($0) } ?? true)
            }.enumerated().sorted { ($0.element.updatedAt, $0.offset) > ($1.element.updatedAt, $1.offset) }.map(\.element)
            let (page, next) = Self.page(matching, params: params)
            var readStates: [JSON.Member] = []
            for record in page {
                if let revision = record.readStateRevision, let first = record.turns.first {
                    readStates.append(.init(key: record.id, value: Shapes.readState(firstUnreadTurn: first.id, revision: revision)))
                }
            }
            var backwards: JSON = .null
            if let first = page.first {
                let formatter = ISO8601DateFormatter()
                formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                backwards = .string(formatter.string(from: Date(timeIntervalSince1970: TimeInterval(first.updatedAt))))
            }
            state.send(Wire.result(id: id, [
                "data": .array(page.map { threadJSON($0, state, listed: true) }), "readStates": .object(readStates),
                "nextCursor": next, "backwardsCursor": backwards,
            ]), to: connection)
        }
    }

    func threadLoadedList(id: JSON, from connection: Int) {
        state.withLock { state in
            let loaded = state.threadOrder.filter { state.threads[$0]?.loaded == true && state.threads[$0]?.archived == false }
            state.send(Wire.result(id: id, ["data": .array(loaded.map(JSON.string)), "nextCursor": .null]), to: connection)
        }
    }

    /// A thread of this process, loaded or not; `thread not loaded` for any other id.
    private static func known(_ threadID: String, in state: State) throws -> ThreadRecord {
        guard let record = state.threads[threadID] else { throw CodexAppServerRPCError.threadNotLoaded(threadID) }
        return record
    }

    func threadRead(id: JSON, params: JSON, from connection: Int) throws {
        let threadID = try Self.threadID(params)
        let includeTurns = params.flag("includeTurns")
        try state.withLock { state in
            let record = try Self.known(threadID, in: state)
            if includeTurns {
                state.send(Wire.notification("deprecationNotice", [
                    "summary": "Full-history hydration is deprecated for paginated threads; omit `includeTurns` or set it to `false`, then page with `thread/turns/list` and `thread/items/list`.",
                    "details": .null,
                ]), to: connection)
            }
            let turns = includeTurns ? record.turns.map { Shapes.historyTurn($0, itemsView: "full") } : []
            var readState: JSON = .null
            if let revision = record.readStateRevision, let first = record.turns.first {
                readState = Shapes.readState(firstUnreadTurn: first.id, revision: revision)
            }
            state.send(Wire.result(id: id, ["thread": threadJSON(record, state, turns: turns), "readState": readState]), to: connection)
        }
    }

    /// Turns newest first unless `sortDirection: "asc"`; items per `itemsView` (default `summary`).
    func turnsPage(_ record: ThreadRecord, params: JSON) -> (page: JSON, data: [JSON], next: JSON) {
        let itemsView = params.optionalString("itemsView") ?? "summary"
        var turns = record.turns
        if params.optionalString("sortDirection") != "asc" { turns.reverse() }
        let (page, next) = Self.page(turns, params: params)
        let data = page.map { Shapes.historyTurn($0, itemsView: itemsView) }
        return (["data": .array(data), "nextCursor": next,
                 "backwardsCursor": Shapes.backwardsCursor(threadID: record.id, ordinal: 1, scope: "turns")], data, next)
    }

    func threadTurnsList(id: JSON, params: JSON, from connection: Int) throws {
        let threadID = try Self.threadID(params)
        try state.withLock { state in
            let record = try Self.known(threadID, in: state)
            state.send(Wire.result(id: id, turnsPage(record, params: params).page), to: connection)
        }
    }

    /// Every persisted item, oldest first unless `sortDirection: "desc"`, optionally of one turn.
    func threadItemsList(id: JSON, params: JSON, from connection: Int) throws {
        let threadID = try Self.threadID(params)
        let turnFilter = params.optionalString("turnId")
        try state.withLock { state in
            let record = try Self.known(threadID, in: state)
            var entries: [JSON] = []
            for turn in record.turns where turnFilter == nil || turn.id == turnFilter {
                for item in turn.items where item.persisted {
                    entries.append([
                        "turnId": .string(turn.id), "item": item.item, "startedAtMs": .int(item.startedAtMs),
                        "completedAtMs": item.completedAtMs.map(JSON.int) ?? .null,
                    ])
                }
            }
            if params.optionalString("sortDirection") == "desc" { entries.reverse() }
            let (page, next) = Self.page(entries, params: params)
            let ordinal = record.turns.reduce(0) { $0 + $1.items.count + 2 }
            state.send(Wire.result(id: id, [
                "data": .array(page), "nextCursor": next,
                "backwardsCursor": Shapes.backwardsCursor(threadID: threadID, ordinal: ordinal, scope: "itemsByCreatedAtOrdinal"),
            ]), to: connection)
        }
    }
}
