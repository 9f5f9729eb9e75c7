extension ConfigFile {
    /// The profile to use: `name` if given (`-p NAME`), else `default_profile`, else the only profile.
    /// - Throws: `ConfigError` (`.profileNotFound`, `.noProfileChosen`).
    public func profile(named name: String?) throws -> Profile {
        let names = profileNames
        if let name {
            if let profile = profiles[name] { return profile }
            throw ConfigError(
                .profileNotFound, file: path, key: "profiles.\(TOMLText.key(name))",
                problem: "profile \"\(name)\" not found (\(Self.listing(names)))" + KeySuggestion.hint(for: name, among: names),
                fix: names.isEmpty ? "add a [profiles.\(TOMLText.key(name))] table to \(path)"
                    : "pass -p with one of: \(names.joined(separator: ", ")); or add [profiles.\(TOMLText.key(name))] to \(path)")
        }
        if let defaultProfile, let profile = profiles[defaultProfile] { return profile }
        if names.count == 1, let only = profiles[names[0]] { return only }
        if names.isEmpty {
            throw ConfigError(
                .noProfileChosen, file: path, key: "profiles", problem: "the config file defines no profiles",
                fix: "add a [profiles.NAME] table with a backend (see \(ConfigPaths.examplePath))")
        }
        throw ConfigError(
            .noProfileChosen, file: path, key: "default_profile",
            problem: "no profile chosen and no default_profile (\(Self.listing(names)))",
            fix: "pass -p NAME, or add default_profile = \"\(names[0])\" at the top of \(path)")
    }
}
