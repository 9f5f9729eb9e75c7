import Hummingbird

extension GatewayAPI {
    /// Every route of the contract's table, behind the problem and auth middleware.
    func router() -> Router<GatewayRequestContext> {
        let router = Router(context: GatewayRequestContext.self)
        router.add(middleware: RequestHygieneMiddleware())
        router.add(middleware: ProblemMiddleware(logger: logger))
        router.add(middleware: AuthMiddleware(auth: auth, logins: logins, openGuard: openGuard, failures: authFailures, logger: logger))

        for (path, asset) in PageAssets.files {
            router.get(RouterPath(path)) { _, _ in PageAssets.response(asset) }
        }
        router.get("/v1/health") { _, _ in health() }
        router.post("/v1/login") { request, context in try await login(request, context: context) }
        router.post("/v1/logout") { request, context in try await logout(request, context: context) }
        router.post("/v1/pair") { request, context in try await pair(request, context: context) }
        router.get("/v1/openapi.json") { _, _ in JSONResponse.bytes(PageAssets.openAPI) }

        router.get("/v1/profiles") { _, _ in listProfiles() }
        router.get("/v1/events") { request, context in try await events(request, context: context) }
        router.get("/v1/approvals") { request, _ in try await pendingApprovals(request) }

        router.get("/v1/profiles/{profile}/models") { _, context in try await listModels(context) }
        router.get("/v1/profiles/{profile}/sessions") { _, context in try await listSessions(context) }
        router.post("/v1/profiles/{profile}/sessions") { request, context in try await createSession(request, context: context) }
        router.get("/v1/profiles/{profile}/sessions/{session}") { _, context in try await showSession(context) }
        router.get("/v1/profiles/{profile}/sessions/{session}/history") { request, context in try await history(request, context: context) }
        router.post("/v1/profiles/{profile}/sessions/{session}/turns") { request, context in try await startTurn(request, context: context) }
        router.post("/v1/profiles/{profile}/sessions/{session}/abort") { _, context in try await abort(context) }
        router.post("/v1/profiles/{profile}/approvals/{approval}") { request, context in try await answer(request, context: context) }

        router.get("/v1/profiles/{profile}/notifications") { request, context in try await listNotifications(request, context: context) }
        router.post("/v1/profiles/{profile}/notifications/read-all") { _, context in try await readAllNotifications(context) }
        router.post("/v1/profiles/{profile}/notifications/{notification}/read") { _, context in try await readNotification(context) }
        return router
    }
}
