/// The REST view: every emitted event is applied here before it is sent, so REST always reflects
/// what SSE said. Current and legacy shapes are both understood (legacy payloads lack `sessionID`).
extension OpenCodeState {
    func apply(_ type: String, _ properties: OrderedJSON) {
        switch type {
        case "session.created", "session.updated":
            guard let info = properties["info"], let id = info["id"]?.stringValue else { return }
            if sessions[id] == nil { sessionOrder.append(id) }
            sessions[id] = info
        case "session.deleted":
            guard let id = properties["info"]?["id"]?.stringValue ?? properties["sessionID"]?.stringValue else { return }
            sessions[id] = nil
            sessionOrder.removeAll { $0 == id }
            messages[id] = nil
            statuses[id] = nil
            todos[id] = nil
            pendingPermissions.removeAll { $0.sessionID == id }
            pendingQuestions.removeAll { $0.sessionID == id }
        case "session.status":
            guard let id = properties["sessionID"]?.stringValue, let status = properties["status"] else { return }
            statuses[id] = status["type"]?.stringValue == "idle" ? nil : status
        case "message.updated":
            guard let info = properties["info"], let sessionID = info["sessionID"]?.stringValue,
                  let id = info["id"]?.stringValue else { return }
            if let index = messages[sessionID]?.firstIndex(where: { $0.id == id }) {
                messages[sessionID]?[index].info = info
            } else {
                messages[sessionID, default: []].append(MessageRecord(info: info))
            }
        case "message.removed":
            guard let sessionID = properties["sessionID"]?.stringValue,
                  let id = properties["messageID"]?.stringValue else { return }
            messages[sessionID]?.removeAll { $0.id == id }
        case "message.part.updated":
            guard let part = properties["part"] else { return }
            upsertPart(part)
        case "message.part.delta":
            guard let partID = properties["partID"]?.stringValue,
                  let delta = properties["delta"]?.stringValue else { return }
            liveText[partID, default: ""] += delta
        case "message.part.removed":
            guard let sessionID = properties["sessionID"]?.stringValue,
                  let messageID = properties["messageID"]?.stringValue,
                  let partID = properties["partID"]?.stringValue,
                  let index = messages[sessionID]?.firstIndex(where: { $0.id == messageID }) else { return }
            messages[sessionID]?[index].parts.removeAll { $0["id"]?.stringValue == partID }
        case "permission.asked", "permission.updated":
            guard let id = properties["id"]?.stringValue, let sessionID = properties["sessionID"]?.stringValue else { return }
            pendingPermissions.removeAll { $0.id == id }
            pendingPermissions.append(PendingRequest(id: id, sessionID: sessionID, json: properties))
        case "permission.replied":
            guard let id = properties["requestID"]?.stringValue ?? properties["permissionID"]?.stringValue else { return }
            pendingPermissions.removeAll { $0.id == id }
        case "question.asked":
            guard let id = properties["id"]?.stringValue, let sessionID = properties["sessionID"]?.stringValue else { return }
            pendingQuestions.removeAll { $0.id == id }
            pendingQuestions.append(PendingRequest(id: id, sessionID: sessionID, json: properties))
        case "question.replied", "question.rejected":
            guard let id = properties["requestID"]?.stringValue else { return }
            pendingQuestions.removeAll { $0.id == id }
        case "todo.updated":
            guard let sessionID = properties["sessionID"]?.stringValue, let list = properties["todos"] else { return }
            todos[sessionID] = list
        default:
            break
        }
    }

    private func upsertPart(_ part: OrderedJSON) {
        guard let sessionID = part["sessionID"]?.stringValue,
              let messageID = part["messageID"]?.stringValue,
              let partID = part["id"]?.stringValue,
              let index = messages[sessionID]?.firstIndex(where: { $0.id == messageID }) else { return }
        if let partIndex = messages[sessionID]?[index].parts.firstIndex(where: { $0["id"]?.stringValue == partID }) {
            messages[sessionID]?[index].parts[partIndex] = part
        } else {
            messages[sessionID]?[index].parts.append(part)
        }
        if part["time"]?["end"] != nil {
            liveText[partID] = nil
        }
    }

    // MARK: Queries

    func sessionList(directory: String?) -> [OrderedJSON] {
        sessionOrder.compactMap { sessions[$0] }
            .filter { directory == nil || $0["directory"]?.stringValue == directory }
            .sorted { ($0["time"]?["updated"]?.intValue ?? 0) > ($1["time"]?["updated"]?.intValue ?? 0) }
    }

    func directory(ofSession id: String) -> String? {
        sessions[id]?["directory"]?.stringValue
    }

    func messageList(sessionID: String, limit: Int?) -> [OrderedJSON] {
        var records = messages[sessionID] ?? []
        if let limit, limit >= 0, records.count > limit {
            records = Array(records.suffix(limit))
        }
        return records.map { ["info": $0.info, "parts": .array($0.parts)] }
    }

    func message(sessionID: String, messageID: String) -> OrderedJSON? {
        guard let record = messages[sessionID]?.first(where: { $0.id == messageID }) else { return nil }
        return ["info": record.info, "parts": .array(record.parts)]
    }

    func statusMap(directory: String?) -> OrderedJSON {
        .object(sessionOrder.compactMap { id in
            guard let status = statuses[id] else { return nil }
            if let directory, self.directory(ofSession: id) != directory { return nil }
            return OrderedJSON.Member(key: id, value: status)
        })
    }

    func permissionList(directory: String?) -> [OrderedJSON] {
        pendingPermissions
            .filter { directory == nil || self.directory(ofSession: $0.sessionID) == directory }
            .map(\.json)
    }

    func questionList(directory: String?) -> [OrderedJSON] {
        pendingQuestions
            .filter { directory == nil || self.directory(ofSession: $0.sessionID) == directory }
            .map(\.json)
    }

    func todoList(sessionID: String) -> OrderedJSON {
        todos[sessionID] ?? []
    }
}
