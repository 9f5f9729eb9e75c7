import Hummingbird

/// The page at `GET /` (gateway.md, "The page") and the OpenAPI document: real files under
/// `Sources/TetherGateway/Page/`, edited as such, embedded into the binary at build time by
/// SwiftPM (`resources: [.embedInCode(…)]` generates `PackageResources`), so `tether serve` run
/// from anywhere serves them with nothing else on disk and nothing fetched from another host.
/// The page's files need no auth; everything they call does.
enum PageAssets {
    struct Asset: Sendable {
        let contentType: String
        let body: [UInt8]
    }

    /// The page's files by request path. Relative references inside them keep the page working
    /// under a proxy's prefix.
    static let files: [String: Asset] = [
        "/": Asset(contentType: "text/html; charset=utf-8", body: PackageResources.index_html),
        "/app.js": Asset(contentType: "text/javascript; charset=utf-8", body: PackageResources.app_js),
        "/app.css": Asset(contentType: "text/css; charset=utf-8", body: PackageResources.app_css),
        "/icon.svg": Asset(contentType: "image/svg+xml", body: PackageResources.icon_svg),
        "/icon-192.png": Asset(contentType: "image/png", body: PackageResources.icon_192_png),
        "/icon-512.png": Asset(contentType: "image/png", body: PackageResources.icon_512_png),
        "/manifest.webmanifest": Asset(contentType: "application/manifest+json", body: PackageResources.manifest_webmanifest),
        // At the page's own level, so its scope is the page (also under a proxy's prefix).
        "/sw.js": Asset(contentType: "text/javascript; charset=utf-8", body: PackageResources.sw_js),
    ]

    /// The OpenAPI 3.1 document of the v1 API, served as is at `GET /v1/openapi.json` (with auth).
    /// Tests/Gateway/api-check.sh validates it and runs schemathesis against a live gateway with it.
    static let openAPI = PackageResources.openapi_json

    /// Only this origin, no inline code: an injected string can never run as script.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
        + "manifest-src 'self'; worker-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

    static func response(_ asset: Asset) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = asset.contentType
        // Revalidated on every load, so a new binary's page is never mixed with an old script.
        headers[.cacheControl] = "no-cache"
        headers[.contentSecurityPolicy] = contentSecurityPolicy
        headers[.xContentTypeOptions] = "nosniff"
        headers[HTTPFields.referrerPolicy] = "no-referrer"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: asset.body)))
    }
}
