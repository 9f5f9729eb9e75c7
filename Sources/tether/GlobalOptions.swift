import ArgumentParser

/// The options every command takes (the design's `tether [-p NAME] [--config PATH] [-o …] [--raw] [-v]`).
struct GlobalOptions: ParsableArguments {
    @Option(name: [.short, .long], help: "The profile to use (default: the config's default_profile).")
    var profile: String?

    @Option(name: .long, help: ArgumentHelp("The config file (default: $TETHER_CONFIG, else $XDG_CONFIG_HOME/tether/config.toml, else ~/.config/tether/config.toml).", valueName: "path"))
    var config: String?

    /// `-o`, `--raw` and `-v`, declared once (`ViewOptions`).
    @OptionGroup var view: ViewOptions

    var output: OutputFormat? { view.output }
    var raw: Bool { view.raw }
    var verbose: Int { view.verbose }
}

/// The options of a command that reads no profile and prints no events (`simulate`): only -v.
/// Listing -p, --config, -o and --raw there promised what they do not do.
struct LoggingOptions: ParsableArguments {
    @Flag(name: .short, help: "More logging on stderr (-v info, -vv debug, -vvv trace).")
    var verbose: Int
}

/// The options of a command that prints events but makes its own profiles (`demo`).
struct ViewOptions: ParsableArguments {
    @Option(name: [.short, .long], help: "Output: jsonl (one JSON object a line) or text (readable). Default: jsonl when stdout is not a terminal.")
    var output: OutputFormat?

    @Flag(name: .long, help: "Include each event's original wire message as \"raw\".")
    var raw = false

    @OptionGroup var logging: LoggingOptions

    var verbose: Int { logging.verbose }

    /// The same choices as the global options (no profile, no config file).
    func global() throws -> GlobalOptions {
        try GlobalOptions.parse((output.map { ["-o", $0.rawValue] } ?? []) + (raw ? ["--raw"] : [])
                                + Array(repeating: "-v", count: verbose))
    }
}
