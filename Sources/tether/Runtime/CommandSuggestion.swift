import ArgumentParser
import TetherConfig

/// "Did you mean" for a mistyped command. ArgumentParser only says `Unexpected argument 'lst'`,
/// and for `tether sessions lst` shows the usage of `sessions list` (the default subcommand),
/// which reads as if `lst` were a stray argument of it.
enum CommandSuggestion {
    /// The global (and ArgumentParser's own) options that take a value: the word after one is not a command.
    private static let valued: Set<String> = ["-p", "--profile", "--config", "-o", "--output", "--generate-completion-script"]

    /// The message for `arguments` (without the program name) when a command word in them is
    /// unknown; nil when they name known commands (ArgumentParser judges the rest).
    static func problem(in arguments: [String], root: any ParsableCommand.Type = Tether.self) -> String? {
        var command: any ParsableCommand.Type = root
        var path = ["tether"]
        var index = 0
        while index < arguments.count {
            let word = arguments[index]
            if word == "--" { return nil }
            if valued.contains(word) { index += 2; continue }
            if word.hasPrefix("-") { index += 1; continue }
            let subcommands = command.configuration.subcommands
            guard !subcommands.isEmpty else { return nil }  // a leaf: the rest are its arguments
            let names = subcommands.compactMap { $0.configuration.commandName ?? defaultName(of: $0) }
            if let next = subcommands.first(where: { ($0.configuration.commandName ?? defaultName(of: $0)) == word }) {
                command = next
                path.append(word)
                index += 1
                continue
            }
            if word == "help" { return nil }
            let group = path.joined(separator: " ")
            return "unknown command \"\(word)\" for `\(group)`" + KeySuggestion.hint(for: word, among: names)
                + "\n  → commands: \(names.joined(separator: ", ")); `\(group) --help` says what each does"
        }
        return nil
    }

    /// ArgumentParser's name for a command without `commandName`: its type's name, lowercased
    /// and dashed (`ReadAll` → `read-all`).
    private static func defaultName(of command: any ParsableCommand.Type) -> String {
        var name = ""
        for character in String(describing: command) {
            if character.isUppercase, !name.isEmpty { name += "-" }
            name += character.lowercased()
        }
        return name
    }
}
