import Hummingbird

/// The page at `GET /` (gateway.md, "The page"): plain HTML, CSS and JavaScript embedded in the
/// binary, so `tether serve` run from anywhere serves it with nothing else on disk and nothing
/// fetched from another host. These files need no auth; everything they call does.
enum PageAssets {
    struct Asset: Sendable {
        let contentType: String
        let body: String
    }

    /// By request path. Relative references inside them keep the page working under a proxy's prefix.
    static let files: [String: Asset] = [
        "/": Asset(contentType: "text/html; charset=utf-8", body: html),
        "/app.js": Asset(contentType: "text/javascript; charset=utf-8", body: javascript),
        "/app.css": Asset(contentType: "text/css; charset=utf-8", body: css),
        "/icon.svg": Asset(contentType: "image/svg+xml", body: icon),
    ]

    /// Only this origin, no inline code: an injected string can never run as script.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        + "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

    static func response(_ asset: Asset) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = asset.contentType
        // Revalidated on every load, so a new binary's page is never mixed with an old script.
        headers[.cacheControl] = "no-cache"
        headers[.contentSecurityPolicy] = contentSecurityPolicy
        headers[.xContentTypeOptions] = "nosniff"
        headers[HTTPFields.referrerPolicy] = "no-referrer"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: asset.body)))
    }
}
