import Testing
@testable import TetherGateway

/// The page's files as embedded: the service worker keeps every one of them for offline use,
/// and each is served without auth.
@Suite struct PageAssetsTests {
    @Test func theServiceWorkerCachesEveryFileOfThePage() throws {
        let worker = String(decoding: PackageResources.sw_js, as: UTF8.self)
        let line = try #require(worker.split(separator: "\n").first { $0.hasPrefix("const FILES = [") })
        let cached = Set(line.split(separator: "\"").enumerated().filter { $0.offset % 2 == 1 }.map { String($0.element) })
        // Paths as the page names them (relative, so they work under a proxy's prefix).
        let served = Set(PageAssets.files.keys.filter { $0 != "/sw.js" }.map { $0 == "/" ? "./" : String($0.dropFirst()) })
        #expect(cached == served, "sw.js FILES \(cached.sorted()) vs the page's files \(served.sorted())")
    }

    @Test func thePageFilesAreOpenAndTheCSPAllowsOnlyThisOrigin() {
        #expect(AuthMiddleware.openPaths.isSuperset(of: PageAssets.files.keys))
        #expect(AuthMiddleware.openPaths.contains("/v1/pair") && !AuthMiddleware.openPaths.contains("/v1/openapi.json"))
        let csp = PageAssets.contentSecurityPolicy
        #expect(csp.hasPrefix("default-src 'none'") && !csp.contains("unsafe") && !csp.contains("http"))
    }
}
