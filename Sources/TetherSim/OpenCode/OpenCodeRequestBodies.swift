/// Request bodies the simulated server decodes (notes §4). Unknown fields are ignored, like the
/// real server's lenient schemas.
enum OpenCodeRequestBodies {
    struct Prompt: Decodable {
        struct Part: Decodable {
            var type: String
            var text: String?
        }

        struct Model: Decodable {
            var providerID: String
            var modelID: String
        }

        var parts: [Part]
        var model: Model?
        var agent: String?
    }

    struct CreateSession: Decodable {
        var title: String?
        var parentID: String?
    }

    struct UpdateSession: Decodable {
        var title: String?
    }

    struct PermissionReply: Decodable {
        var reply: String
        var message: String?
    }

    struct LegacyPermissionResponse: Decodable {
        var response: String
    }

    struct QuestionReply: Decodable {
        var answers: [[String]]
    }
}
