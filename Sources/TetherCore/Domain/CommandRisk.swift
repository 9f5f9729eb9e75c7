/// How dangerous a command an agent wants to run looks. A heuristic, shown beside an approval so
/// a person glancing at a phone knows which requests deserve a careful read.
public enum CommandRisk {
    public static func classify(_ command: String) -> Approval.Risk {
        let text = " " + command.lowercased() + " "
        let words = Set(text.split(whereSeparator: { " \t\n;|&()".contains($0) }).map(String.init))
        let high = words.contains("sudo") || words.contains("su") || words.contains("mkfs") || words.contains("dd")
            || words.contains("shutdown") || words.contains("reboot") || words.contains("chown")
            || (words.contains("rm") && (text.contains(" -r") || text.contains(" -f") || text.contains(" --recursive")))
            || (words.contains("git") && (text.contains("push -f") || text.contains("--force") || text.contains("reset --hard")
                || text.contains("clean -f")))
            || text.contains("chmod -r") || text.contains("> /dev/") || text.contains("| sh") || text.contains("| bash")
        if high { return .high }
        let medium = (words.contains("git") && (words.contains("push") || words.contains("rebase") || words.contains("commit")))
            || (words.contains("npm") && words.contains("publish")) || (words.contains("cargo") && words.contains("publish"))
            || words.contains("rm") || words.contains("mv") || words.contains("curl") || words.contains("wget")
            || words.contains("docker") || words.contains("kubectl") || words.contains("ssh") || words.contains("scp")
            || (words.contains("pip") && words.contains("install")) || (words.contains("npm") && words.contains("install"))
            || words.contains("apt-get") || words.contains("apt") || words.contains("chmod")
        return medium ? .medium : .low
    }
}
