/// "Did you mean …?" for unknown keys and names.
public enum KeySuggestion {
    /// The candidate closest to `word`, if one is close enough to be a plausible typo:
    /// the same apart from case and `-`/`_`, a prefix either way, or within a small edit distance.
    public static func closest(to word: String, among candidates: [String]) -> String? {
        let normalizedWord = normalize(word)
        if let match = candidates.first(where: { normalize($0) == normalizedWord }) { return match }
        // Two letters or fewer: any other short word is one edit away, so only exact matches count.
        let limit = word.count <= 2 ? 0 : max(1, min(3, word.count / 3))
        var best: (candidate: String, distance: Int)?
        for candidate in candidates {
            let distance = editDistance(normalizedWord, normalize(candidate))
            if distance <= limit, distance < (best?.distance ?? .max) { best = (candidate, distance) }
        }
        if let best { return best.candidate }
        if normalizedWord.count >= 3 {
            return candidates.first {
                let candidate = normalize($0)
                return candidate.count >= 3 && (candidate.starts(with: normalizedWord) || normalizedWord.starts(with: candidate))
            }
        }
        return nil
    }

    /// `did you mean "x"?` or nothing.
    public static func hint(for word: String, among candidates: [String]) -> String {
        closest(to: word, among: candidates).map { "; did you mean \"\($0)\"?" } ?? ""
    }

    private static func normalize(_ word: String) -> [Character] {
        Array(word.lowercased().filter { $0 != "_" && $0 != "-" })
    }

    /// Edit distance counting a swap of adjacent characters as one edit (optimal string alignment),
    /// since transposed letters are the commonest typo.
    private static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
                }
            }
        }
        return d[a.count][b.count]
    }
}
