import TetherCore
import TetherAdapterSupport
import TetherStreaming

/// The OpenCode 2.x wire facts Tether relies on that protocols/opencode-v2.md could not
/// establish (its §7, and guesses where the note is silent), in one place, so that a live
/// server's `/openapi.json` can correct them here. Each says what was assumed.
enum OpenCode2Facts {
    /// A server is 2.x when `GET /api/info` answers JSON whose `version` (under `data`, or bare)
    /// has a major version of 2 or more. 1.16–1.18 servers carry experimental `/api/*` routes
    /// too; their version keeps them 1.x. Assumed: `/api/info` may be wrapped in `{data}` or not.
    static func isGeneration2(info: JSONValue?) -> Bool {
        guard let info else { return false }
        let version = OpenCode2WireDecoder.payload(info)["version"]?.string ?? ""
        let major = version.split(separator: ".").first.flatMap { Int($0.drop { !$0.isNumber }) }
        return (major ?? 0) >= 2
    }

    /// Basic-auth user name: fixed to `opencode` by the 2.x server (`OPENCODE_SERVER_USERNAME` is
    /// ignored, #45856); the profile's `password` is the server's (`OPENCODE_PASSWORD`, or
    /// `opencode service get password`).
    static let username = "opencode"

    /// Text and reasoning have no ids on the wire (§2.3): a part is its assistant message and its
    /// `ordinal`. Assumed: the ordinal is the item's index in the message's `content[]` (it is
    /// "positional"), so live `*.started {ordinal}` and history name a part alike.
    static func partID(message: String, ordinal: Int) -> String {
        "\(message)#\(ordinal)"
    }

    /// Tools that run a shell command are `command` parts (as 1.x's `bash`). Assumed names:
    /// `shell` (the 2.x tool and permission action in the note's samples) and `bash`.
    static func partKind(ofTool name: String) -> PartKind {
        name == "shell" || name == "bash" ? .command : .tool
    }

    /// An `idle` message's `outcome` as a turn outcome.
    static func outcome(ofIdle outcome: String?) -> TurnOutcome {
        switch outcome {
        case "failed": return .failed
        case "interrupted": return .cancelled
        default: return .completed
        }
    }

    /// `POST /api/session/:id/model`'s body. The note names the route (§6.6, "switch with POST
    /// …/model") but not its body; assumed to be the `model` object `session.create` takes.
    static func modelBody(provider: String, model: String) -> JSONValue {
        ["model": ["providerID": .string(provider), "id": .string(model)]]
    }

    /// One item of `GET /api/model` as `provider/model`. The note lists the route but not its
    /// items; assumed to be `{providerID, id, name?}` like the `model` objects elsewhere (a
    /// `provider` key is read too).
    static func model(from item: JSONValue) -> ModelInfo? {
        guard let id = item["id"]?.string, let provider = item["providerID"]?.string ?? item["provider"]?.string else { return nil }
        return ModelInfo(id: "\(provider)/\(id)", name: item["name"]?.string.map { "\(provider) · \($0)" } ?? "\(provider)/\(id)")
    }

    /// A session's durable seqs are consecutive (§4.3: the log's position, one per persisted
    /// event), so a frame whose seq is past the last seen + 1 says frames were missed. Assumed:
    /// where a server leaves holes, Tether reads the log once more per hole, and loses nothing.
    static func isPastAGap(seq: Int, lastSeen: Int) -> Bool {
        seq > lastSeen + 1
    }

    /// The durable log, without `follow`, is assumed to end its response after `log.synced`
    /// (the note only describes `follow=true`). Tether reads it that way to catch a session up
    /// after a reconnect, then goes on with the global stream.
    static func logPath(session: PathSegment, after seq: Int, follow: Bool) -> String {
        "/api/experimental/session/\(session)/log?after=\(seq)\(follow ? "&follow=true" : "")"
    }
}
