import CCurl

/// libcurl's process-wide setup, done once before the first easy handle of any kind (HTTP
/// transfers and WebSocket connections alike): SIGPIPE ignored (a peer that vanishes must not
/// kill the process), OpenSSL told not to clean up at exit (`OpenSSLExitCleanup`), then
/// `curl_global_init`.
enum CurlGlobal {
    static func initialize() { _ = once }

    private static let once: Void = {
        tether_ignore_sigpipe()
        OpenSSLExitCleanup.disable()
        curl_global_init(Int(CURL_GLOBAL_ALL))
    }()
}
