/// What a URL may carry that is a secret, taken out before the URL is shown: the user
/// information of its authority (`user:password@`) and the values of its query (a token in
/// `?access_token=…` is as secret as a password, and Tether cannot tell which parameter is one).
public enum URLCredentials {
    /// `text` with its user information replaced by `…@` and each query value by `…`.
    public static func redacted(_ text: String) -> String {
        guard let start = text.range(of: "://")?.upperBound else { return text }
        let authorityEnd = text[start...].firstIndex { "/?#".contains($0) } ?? text.endIndex
        var shown = String(text[..<start])
        if let at = text[start..<authorityEnd].lastIndex(of: "@") {
            shown += "…" + String(text[at..<authorityEnd])
        } else {
            shown += String(text[start..<authorityEnd])
        }
        let rest = text[authorityEnd...]
        guard let question = rest.firstIndex(of: "?") else { return shown + rest }
        let fragment = rest[question...].firstIndex(of: "#") ?? rest.endIndex
        let query = rest[rest.index(after: question)..<fragment].split(separator: "&", omittingEmptySubsequences: false).map { pair in
            guard let equals = pair.firstIndex(of: "="), pair.index(after: equals) < pair.endIndex else { return String(pair) }
            return String(pair[...equals]) + "…"
        }
        return shown + rest[..<question] + "?" + query.joined(separator: "&") + rest[fragment...]
    }
}
