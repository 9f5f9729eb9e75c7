/// URLs as they may be shown: in messages, status lines and logs a URL's user information
/// (`user:password@`, a token) never appears.
public enum URLCredentials {
    /// `text` with the user information of its authority replaced by `…@`.
    public static func redacted(_ text: String) -> String {
        guard let start = text.range(of: "://")?.upperBound else { return text }
        let authorityEnd = text[start...].firstIndex { "/?#".contains($0) } ?? text.endIndex
        guard let at = text[start..<authorityEnd].lastIndex(of: "@") else { return text }
        return String(text[..<start]) + "…" + String(text[at...])
    }
}
