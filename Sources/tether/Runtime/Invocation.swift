import Foundation
import Synchronization
import TetherConfig
import TetherCore

/// What a command printed for the user to run must repeat of this one so that it reaches the
/// same profile through the same config file: `-p NAME` when the profile is not the one a bare
/// `tether` would pick, `--config PATH` when the file is not the one it would read. A hint run
/// as printed must act where this command acted; without them it went to the default profile.
struct Invocation: Sendable, Equatable {
    /// The global arguments to repeat, e.g. `["-p", "worker", "--config", "/tmp/t.toml"]`.
    let globalArguments: [String]

    static let plain = Invocation(globalArguments: [])

    init(globalArguments: [String]) { self.globalArguments = globalArguments }

    /// From what the user passed and what the defaults would have chosen instead.
    init(options: GlobalOptions, config: ConfigFile, profile: String, environment: ConfigEnvironment) {
        var arguments: [String] = []
        if options.profile != nil, (try? config.profile(named: nil))?.name != profile {
            arguments += ["-p", profile]
        }
        if options.config != nil {
            let bare = try? ConfigPaths.locate(override: nil, environment: environment)
            if bare?.path != config.path {
                // Absolute: a command run later from elsewhere (another terminal, an editor) still finds it.
                let path = config.path.hasPrefix("/") ? config.path : FileManager.default.currentDirectoryPath + "/" + config.path
                arguments += ["--config", path]
            }
        }
        globalArguments = arguments
    }

    /// `tether` and the global arguments, shell-quoted: the start of every printed command.
    var tether: String {
        (["tether"] + globalArguments.map(shellQuote)).joined(separator: " ")
    }

    /// A full command line: `command("approve X")` is `tether -p worker approve X`.
    func command(_ rest: String) -> String { tether + " " + rest }

    /// `text` with every `tether SUBCOMMAND` in it (a hint an adapter wrote, which knows no
    /// profile or config path) made to carry the global arguments.
    func rewritingCommands(in text: String) -> String {
        guard !globalArguments.isEmpty else { return text }
        var result = ""
        var rest = Substring(text)
        while let found = rest.range(of: "tether ") {
            let before = rest[..<found.lowerBound]
            let boundary = before.last.map { " `('\":\n".contains($0) } ?? true
            let word = rest[found.upperBound...].prefix { $0.isLetter || $0 == "-" }
            result += before
            result += "tether "
            if boundary, Self.subcommands.contains(String(word)) {
                result += globalArguments.map(shellQuote).joined(separator: " ") + " "
            }
            rest = rest[found.upperBound...]
        }
        return result + rest
    }

    /// The words that start a `tether` command: a sentence that merely says "tether" is left alone.
    static let subcommands: Set<String> = Set(Tether.configuration.subcommands.compactMap { $0.configuration.commandName })

    /// The invocation of this process's command, once its profile is chosen (one command a process).
    static var current: Invocation {
        get { recorded.withLock { $0 } }
        set { recorded.withLock { $0 = newValue } }
    }
    private static let recorded = Mutex(Invocation.plain)
}

extension TetherError {
    /// The same error with its hint's commands made runnable as printed (`Invocation`).
    func hintRewritten(for invocation: Invocation) -> TetherError {
        guard let hint else { return self }
        return TetherError(code, message, hint: invocation.rewritingCommands(in: hint), retryable: retryable)
    }
}
