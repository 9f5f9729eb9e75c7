import Foundation
import TetherCore

/// One TOML table being validated: typed accessors that throw `ConfigError`s naming the file,
/// the dotted key and an example of a correct value.
struct ConfigTable {
    let entries: [String: ConfigValue]
    /// Key path of this table, e.g. `["profiles", "home"]`.
    let path: [String]
    let file: String
    let environment: ConfigEnvironment

    /// `[profiles.home]`, or "the top level".
    var header: String { path.isEmpty ? "the top level" : "[\(TOMLText.path(path))]" }

    func keyPath(_ key: String) -> String { TOMLText.path(path + [key]) }

    func error(_ code: ConfigError.Code, _ key: String?, problem: String, fix: String) -> ConfigError {
        ConfigError(code, file: file, key: key.map(keyPath) ?? (path.isEmpty ? nil : TOMLText.path(path)),
                    problem: problem, fix: fix)
    }

    /// Rejects the first key (in sorted order) that is not in `allowed`, suggesting the closest
    /// valid one. `owner` says where a misplaced key does belong ("a key of codex-worker profiles").
    func rejectUnknownKeys(_ allowed: [String], in what: String, owner: (String) -> String? = { _ in nil }) throws {
        for key in entries.keys.sorted() where !allowed.contains(key) {
            let belongs = owner(key).map { " (\"\(key)\" is \($0))" } ?? ""
            let suggestion = KeySuggestion.closest(to: key, among: allowed)
            let hint = suggestion.map { "; did you mean \"\($0)\"?" } ?? ""
            let fix = (suggestion.map { "rename it to \($0), or remove it" } ?? "remove it")
                + "; the keys \(what) takes are: \(allowed.joined(separator: ", "))"
            throw error(.unknownKey, key, problem: "unknown key \"\(key)\" in \(what)\(belongs)\(hint)", fix: fix)
        }
    }

    private func wrongType(_ key: String, _ value: ConfigValue, expected: String, example: String) -> ConfigError {
        error(.wrongType, key, problem: "must be \(expected), not \(value.typeName)",
              fix: "write it as \(TOMLText.key(key)) = \(example) in \(header)")
    }

    func missing(_ key: String, example: String, why: String) -> ConfigError {
        error(.missingKey, key, problem: "missing: \(why)", fix: "add \(TOMLText.key(key)) = \(example) to \(header)")
    }

    func invalid(_ key: String, _ problem: String, example: String) -> ConfigError {
        error(.invalidValue, key, problem: problem, fix: "write it like \(TOMLText.key(key)) = \(example) in \(header)")
    }

    /// A non-empty string.
    func string(_ key: String, example: String) throws -> String? {
        guard let value = entries[key] else { return nil }
        guard case .string(let string) = value else {
            throw wrongType(key, value, expected: "a string", example: example)
        }
        guard !string.trimmingCharacters(in: .whitespaces).isEmpty else {
            throw invalid(key, "must not be empty", example: example)
        }
        return string
    }

    func requiredString(_ key: String, example: String, why: String) throws -> String {
        guard let value = try string(key, example: example) else { throw missing(key, example: example, why: why) }
        return value
    }

    func integer(_ key: String, in range: ClosedRange<Int>, example: String) throws -> Int? {
        guard let value = entries[key] else { return nil }
        guard case .integer(let number) = value else {
            throw wrongType(key, value, expected: "an integer", example: example)
        }
        guard range.contains(number) else {
            throw invalid(key, "\(number) is out of range (\(range.lowerBound)–\(range.upperBound))", example: example)
        }
        return number
    }

    /// A duration in seconds, written as an integer or a float (`10`, `0.25`).
    func seconds(_ key: String, in range: ClosedRange<Double>, example: String) throws -> Duration? {
        guard let value = entries[key] else { return nil }
        let seconds: Double
        switch value {
        case .integer(let number): seconds = Double(number)
        case .float(let number): seconds = number
        default: throw wrongType(key, value, expected: "a number of seconds", example: example)
        }
        guard range.contains(seconds) else {
            throw invalid(key, "\(seconds) s is out of range (\(range.lowerBound)–\(range.upperBound) s)", example: example)
        }
        return .milliseconds(Int64((seconds * 1000).rounded()))
    }

    func boolean(_ key: String, example: String) throws -> Bool? {
        guard let value = entries[key] else { return nil }
        guard case .boolean(let flag) = value else {
            throw wrongType(key, value, expected: "a boolean (true or false, unquoted)", example: example)
        }
        return flag
    }

    /// A nested table, e.g. `[profiles]` or `[profiles.home]`.
    func table(_ key: String, example: String) throws -> ConfigTable? {
        guard let value = entries[key] else { return nil }
        guard case .table(let nested) = value else {
            throw error(.wrongType, key, problem: "must be a table, not \(value.typeName)",
                        fix: "write it as a table section, e.g. \(example)")
        }
        return ConfigTable(entries: nested, path: path + [key], file: file, environment: environment)
    }

    /// A literal, `{ env = "NAME" }` or `{ file = "PATH" }`. A relative file path is anchored at
    /// the config file's directory (not the working directory, which changes between runs).
    func secret(_ key: String) throws -> ConfiguredSecret? {
        guard let value = entries[key] else { return nil }
        let example = "{ env = \"NAME\" }"
        let reference: SecretReference
        switch value {
        case .string(let literal):
            guard !literal.isEmpty else {
                throw invalid(key, "must not be empty (omit the key if there is no secret)", example: example)
            }
            reference = .literal(literal)
        case .table(let fields):
            let inner = ConfigTable(entries: fields, path: path + [key], file: file, environment: environment)
            try inner.rejectUnknownKeys(["env", "file"], in: "a secret reference")
            switch (try inner.string("env", example: "\"NAME\""), try inner.string("file", example: "\"~/PATH\"")) {
            case (let variable?, nil): reference = .environment(variable)
            case (nil, let path?): reference = .file(anchored(path))
            case (_?, _?):
                throw invalid(key, "has both env and file; a secret comes from one place", example: example)
            case (nil, nil):
                throw invalid(key, "is an empty table; say where the secret comes from", example: example)
            }
        default:
            throw wrongType(key, value, expected: "a string or { env = \"NAME\" } or { file = \"PATH\" }", example: example)
        }
        return ConfiguredSecret(reference: reference, key: keyPath(key), file: file)
    }

    /// A local path with `~` expanded and a relative path anchored at the config file's directory.
    func localPath(_ key: String, example: String) throws -> String? {
        try string(key, example: example).map { environment.expandingTilde(in: anchored($0)) }
    }

    /// An absolute URL with one of `schemes`, a host, and no embedded credentials.
    func url(_ key: String, schemes: [String], example: String) throws -> URL? {
        guard let text = try string(key, example: example) else { return nil }
        let allowed = schemes.map { "\($0)://" }.joined(separator: " or ")
        // Quoted in errors without what may be a password (refused below, or in a URL too
        // broken to read).
        let shown = URLCredentials.redacted(text)
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(),
              let host = url.host, !host.isEmpty
        else {
            throw invalid(key, "\"\(shown)\" is not a valid \(allowed) URL", example: example)
        }
        guard schemes.contains(scheme) else {
            throw invalid(key, "\"\(shown)\" has scheme \(scheme)://, but this key takes \(allowed)", example: example)
        }
        if let port = url.port, !(1...65535).contains(port) {
            throw invalid(key, "\"\(shown)\" has port \(port), outside 1–65535", example: example)
        }
        guard url.user == nil, url.password == nil else {
            // Credentials in a URL would bypass the permission check and redaction.
            throw error(.invalidValue, key, problem: "must not contain credentials (user:password@)",
                        fix: "remove them from the URL and use the profile's token / username + password keys")
        }
        return url
    }

    /// Anchors a relative path at the config file's directory; `~…` and absolute paths are kept.
    func anchored(_ path: String) -> String {
        if path.hasPrefix("/") || path.hasPrefix("~") { return path }
        let directory = (file as NSString).deletingLastPathComponent
        return ConfigPaths.join(directory.isEmpty ? "." : directory, path)
    }
}
