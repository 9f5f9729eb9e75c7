import CQREncode

/// A QR code drawn with text, for a terminal: libqrencode (a maintained encoder, Debian's
/// libqrencode-dev) makes the modules; each line of text holds two rows of them as Unicode half
/// blocks, inside the 4-module quiet zone scanners need.
enum QRCodeText {
    struct EncodingError: Error, CustomStringConvertible {
        let text: String
        var description: String { "cannot encode a QR code of \(text.utf8.count) bytes" }
    }

    /// The modules, row by row (true: dark), of `text` at error correction level M.
    static func modules(_ text: String) throws -> [[Bool]] {
        guard let code = QRcode_encodeString8bit(text, 0, QR_ECLEVEL_M) else { throw EncodingError(text: text) }
        defer { QRcode_free(code) }
        let width = Int(code.pointee.width)
        return (0..<width).map { y in (0..<width).map { x in code.pointee.data[y * width + x] & 1 == 1 } }
    }

    /// The code as lines of text. `ansi`: dark modules drawn black on a white background
    /// whatever the terminal's colours (a QR code must be dark on light to scan everywhere);
    /// without it, dark modules are the glyphs' ink.
    static func render(_ text: String, ansi: Bool) throws -> String {
        let quiet = 4
        let rows = try modules(text)
        let width = rows.count + 2 * quiet
        let padded: [[Bool]] = Array(repeating: Array(repeating: false, count: width), count: quiet)
            + rows.map { Array(repeating: false, count: quiet) + $0 + Array(repeating: false, count: quiet) }
            + Array(repeating: Array(repeating: false, count: width), count: quiet)
        var lines: [String] = []
        var y = 0
        while y < padded.count {
            let top = padded[y]
            let bottom = y + 1 < padded.count ? padded[y + 1] : Array(repeating: false, count: width)
            var line = ""
            for x in 0..<width {
                // With colours set, the glyph's ink is black (dark) and its background white.
                switch (top[x], bottom[x]) {
                case (true, true): line += "█"
                case (true, false): line += "▀"
                case (false, true): line += "▄"
                case (false, false): line += " "
                }
            }
            lines.append(ansi ? "\u{1B}[30;107m" + line + "\u{1B}[0m" : line)
            y += 2
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
