import Foundation

/// The model a prompt runs on (`{providerID, modelID}` in prompts and user messages).
struct OpenCodeModel: Sendable, Equatable {
    var providerID = "anthropic"
    var modelID = "claude-sonnet-4"
}

/// A prompt as `POST /session/{id}/prompt_async` received it.
struct OpenCodePrompt: Sendable {
    var text: String
    var model = OpenCodeModel()
    var agent = "build"
}

/// Builders for OpenCode's JSON shapes (current V1 API, notes §3–§4). Written from the notes, not copied.
enum OpenCodeFixtures {
    static let fixtureSessionID = "ses_fe1d0c3a2b11Qm8xT2aLk9pQ1z"
    static let fixtureDirectory = "/home/dev/demo"
    static let fixtureProjectID = "4b0ea68d7af9a6031a7ffda7ad66e0cb83315750"
    static let contextLimit = 200_000

    /// A stable 40-hex project ID per directory (the real one is a git root commit hash).
    static func projectID(for directory: String) -> String {
        if directory == fixtureDirectory { return fixtureProjectID }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        var out = ""
        for round in 0..<3 {
            for byte in Array("\(round):\(directory)".utf8) {
                hash ^= UInt64(byte)
                hash = hash &* 0x100_0000_01b3
            }
            let hex = String(hash, radix: 16)
            out += String(repeating: "0", count: 16 - hex.count) + hex
        }
        return String(out.prefix(40))
    }

    static func slug() -> String {
        let adjectives = ["brave", "calm", "eager", "gentle", "lucky", "quiet", "swift", "witty"]
        let animals = ["otter", "falcon", "badger", "heron", "lynx", "panda", "walrus", "wombat"]
        return "\(adjectives.randomElement()!)-\(animals.randomElement()!)"
    }

    static func session(
        id: String, slug: String, directory: String, title: String, version: String,
        created: Int, updated: Int, parentID: String? = nil
    ) -> OrderedJSON {
        var session: OrderedJSON = [
            "id": .string(id),
            "slug": .string(slug),
            "projectID": .string(projectID(for: directory)),
            "directory": .string(directory),
        ]
        if let parentID { session["parentID"] = .string(parentID) }
        session["title"] = .string(title)
        session["version"] = .string(version)
        session["time"] = ["created": .int(created), "updated": .int(updated)]
        return session
    }

    static func userMessage(id: String, sessionID: String, created: Int, prompt: OpenCodePrompt) -> OrderedJSON {
        [
            "id": .string(id),
            "sessionID": .string(sessionID),
            "role": "user",
            "time": ["created": .int(created)],
            "agent": .string(prompt.agent),
            "model": ["providerID": .string(prompt.model.providerID), "modelID": .string(prompt.model.modelID)],
        ]
    }

    static func assistantMessage(
        id: String, sessionID: String, parentID: String, created: Int, prompt: OpenCodePrompt, directory: String
    ) -> OrderedJSON {
        [
            "id": .string(id),
            "sessionID": .string(sessionID),
            "role": "assistant",
            "parentID": .string(parentID),
            "providerID": .string(prompt.model.providerID),
            "modelID": .string(prompt.model.modelID),
            "mode": .string(prompt.agent),
            "agent": .string(prompt.agent),
            "path": ["cwd": .string(directory), "root": .string(directory)],
            "cost": 0,
            "tokens": tokens(),
            "time": ["created": .int(created)],
        ]
    }

    static func tokens(input: Int = 0, output: Int = 0, reasoning: Int = 0, cacheRead: Int = 0, cacheWrite: Int = 0) -> OrderedJSON {
        [
            "input": .int(input),
            "output": .int(output),
            "reasoning": .int(reasoning),
            "cache": ["read": .int(cacheRead), "write": .int(cacheWrite)],
        ]
    }

    static func part(id: String, sessionID: String, messageID: String, type: String) -> OrderedJSON {
        ["id": .string(id), "sessionID": .string(sessionID), "messageID": .string(messageID), "type": .string(type)]
    }

    static func error(_ name: String, _ message: String, extra: [(String, OrderedJSON)] = []) -> OrderedJSON {
        var data: OrderedJSON = ["message": .string(message)]
        for (key, value) in extra { data[key] = value }
        return ["name": .string(name), "data": data]
    }

    static var abortedError: OrderedJSON {
        error("MessageAbortedError", "The operation was aborted.")
    }

    static func notFound(_ message: String) -> OrderedJSON {
        error("NotFoundError", message)
    }

    static func badRequest(_ message: String) -> OrderedJSON {
        error("BadRequest", message, extra: [("kind", "Body")])
    }

    static func taggedNotFound(_ tag: String, requestID: String, message: String) -> OrderedJSON {
        ["_tag": .string(tag), "requestID": .string(requestID), "message": .string(message)]
    }

    /// `GET /config/providers`: one provider, one model with a 200k context window.
    static var providers: OrderedJSON {
        let model: OrderedJSON = [
            "id": "claude-sonnet-4",
            "providerID": "anthropic",
            "name": "Claude Sonnet 4",
            "limit": ["context": .int(contextLimit), "output": 64000],
            "cost": ["input": 3, "output": 15, "cache": ["read": 0.3, "write": 3.75]],
        ]
        let provider: OrderedJSON = [
            "id": "anthropic",
            "name": "Anthropic",
            "source": "env",
            "env": ["ANTHROPIC_API_KEY"],
            "options": [:],
            "models": .object([OrderedJSON.Member(key: "claude-sonnet-4", value: model)]),
        ]
        return ["providers": [provider], "default": ["anthropic": "claude-sonnet-4"]]
    }

    static var agents: OrderedJSON {
        [
            ["name": "build", "description": "The default agent: full tool access.", "mode": "primary"],
            ["name": "plan", "description": "Read-only planning agent.", "mode": "primary"],
            ["name": "general", "description": "General-purpose subagent.", "mode": "subagent"],
        ]
    }

    /// Splits `text` into chunks of about `wordsPerChunk` words whose concatenation is `text` exactly.
    static func chunks(_ text: String, wordsPerChunk: Int = 2) -> [String] {
        var chunks: [String] = []
        var current = ""
        var words = 0
        for character in text {
            current.append(character)
            if character == " " {
                words += 1
                if words == wordsPerChunk {
                    chunks.append(current)
                    current = ""
                    words = 0
                }
            }
        }
        if !current.isEmpty { chunks.append(current) }
        return chunks
    }
}
