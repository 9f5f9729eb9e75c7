/// The `-p NAME` options of `serve`, before or after it (`tether -p home serve` serves home, as
/// every other command takes `-p` before its name). `serve -p a -p b` selects several profiles,
/// but the root command's global `-p/--profile` (one value) is parsed wherever it appears and
/// takes them before `serve`'s own option sees them; so the served profiles are read from the
/// arguments.
enum ServedProfileArguments {
    /// Global options that take a value (so their value is never mistaken for the command).
    static let valued: Set<String> = ["-p", "--profile", "--config", "-o", "--output"]

    static func selected(in arguments: [String]) -> [String] {
        var names: [String] = []
        var index = 1
        // Find the `serve` that is the command, not the value of an option before it.
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "serve" { break }
            if argument == "-p" || argument == "--profile", index + 1 < arguments.count { names.append(arguments[index + 1]) }
            if argument.hasPrefix("--profile=") { names.append(String(argument.dropFirst("--profile=".count))) }
            index += valued.contains(argument) ? 2 : 1
        }
        index += 1
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" { break }
            if argument == "-p" || argument == "--profile", index + 1 < arguments.count {
                names.append(arguments[index + 1])
                index += 2
                continue
            }
            if argument.hasPrefix("--profile=") { names.append(String(argument.dropFirst("--profile=".count))) }
            index += 1
        }
        return names
    }
}
