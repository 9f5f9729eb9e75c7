/// Event shapes per era: each helper emits the current V1 shape, or the legacy one in legacy mode
/// (notes §0: no `sessionID` beside `info`, `{part, delta}`, `permission.updated`, `{permissionID, response}`).
extension OpenCodeState {
    func emitSession(_ type: String, _ info: OrderedJSON) {
        let sessionID = info["id"] ?? .null
        let directory = info["directory"]?.stringValue
        emit(type, options.legacy ? ["info": info] : ["sessionID": sessionID, "info": info], directory: directory)
    }

    func emitMessage(_ info: OrderedJSON, directory: String) {
        let sessionID = info["sessionID"] ?? .null
        emit("message.updated", options.legacy ? ["info": info] : ["sessionID": sessionID, "info": info], directory: directory)
    }

    /// A part snapshot; `delta` only travels in legacy mode (current servers send `message.part.delta`).
    func emitPart(_ part: OrderedJSON, delta: String? = nil, directory: String) {
        if options.legacy {
            var properties: OrderedJSON = ["part": part]
            if let delta { properties["delta"] = .string(delta) }
            emit("message.part.updated", properties, directory: directory)
        } else {
            emit("message.part.updated", [
                "sessionID": part["sessionID"] ?? .null,
                "part": part,
                "time": .int(epochMilliseconds()),
            ], directory: directory)
        }
    }

    func emitDelta(_ part: OrderedJSON, _ delta: String, directory: String) {
        emit("message.part.delta", [
            "sessionID": part["sessionID"] ?? .null,
            "messageID": part["messageID"] ?? .null,
            "partID": part["id"] ?? .null,
            "field": "text",
            "delta": .string(delta),
        ], directory: directory)
    }

    func emitStatus(_ sessionID: String, _ type: String, directory: String) {
        emit("session.status", ["sessionID": .string(sessionID), "status": ["type": .string(type)]], directory: directory)
    }

    func emitIdle(_ sessionID: String, directory: String) {
        emitStatus(sessionID, "idle", directory: directory)
        emit("session.idle", ["sessionID": .string(sessionID)], directory: directory)
    }

    func emitSessionError(_ sessionID: String, _ error: OrderedJSON, directory: String) {
        emit("session.error", ["sessionID": .string(sessionID), "error": error], directory: directory)
    }

    /// `permission.asked` (current) or `permission.updated` (legacy) for a bash tool call.
    func emitPermissionRequest(
        id: String, sessionID: String, messageID: String, callID: String, command: String,
        always: [String], directory: String
    ) {
        if options.legacy {
            emit("permission.updated", [
                "id": .string(id),
                "type": "bash",
                "pattern": .array(always.map { .string($0) }),
                "sessionID": .string(sessionID),
                "messageID": .string(messageID),
                "callID": .string(callID),
                "title": .string(command),
                "metadata": ["command": .string(command)],
                "time": ["created": .int(epochMilliseconds())],
            ], directory: directory)
        } else {
            emit("permission.asked", [
                "id": .string(id),
                "sessionID": .string(sessionID),
                "permission": "bash",
                "patterns": [.string(command)],
                "always": .array(always.map { .string($0) }),
                "metadata": ["command": .string(command)],
                "tool": ["messageID": .string(messageID), "callID": .string(callID)],
            ], directory: directory)
        }
    }

    func emitPermissionReplied(id: String, sessionID: String, reply: String, directory: String) {
        if options.legacy {
            emit("permission.replied", [
                "sessionID": .string(sessionID), "permissionID": .string(id), "response": .string(reply),
            ], directory: directory)
        } else {
            emit("permission.replied", [
                "sessionID": .string(sessionID), "requestID": .string(id), "reply": .string(reply),
            ], directory: directory)
        }
    }

    func emitTodos(_ sessionID: String, _ items: [(content: String, status: String, priority: String)], directory: String) {
        let list: [OrderedJSON] = items.enumerated().map { index, item in
            var todo: OrderedJSON = [:]
            if options.legacy { todo["id"] = .string(String(index + 1)) }
            todo["content"] = .string(item.content)
            todo["status"] = .string(item.status)
            todo["priority"] = .string(item.priority)
            return todo
        }
        emit("todo.updated", ["sessionID": .string(sessionID), "todos": .array(list)], directory: directory)
    }
}
