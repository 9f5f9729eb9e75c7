#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Keeps OpenSSL from tearing itself down in an `atexit` handler.
///
/// libcurl (and libssh2) initialise OpenSSL, which then registers `OPENSSL_cleanup` to run at
/// `exit()`. Our transfers run on threads of their own, and such a thread may still be ending
/// when the command returns: its continuation is resumed before it has run its thread-specific
/// destructors, one of which is OpenSSL's (it frees the thread's handler list). When `exit()`
/// reaches `OPENSSL_cleanup` at that moment, both free the same memory — "double free or
/// corruption", SIGABRT, or a SIGSEGV in `OPENSSL_sk_delete` (OpenSSL 3.0's
/// `init_thread_deregister(NULL, 1)` frees every thread's list without taking the lock the
/// exiting thread holds). `OPENSSL_INIT_NO_ATEXIT` keeps the handler from being registered; the
/// kernel reclaims that memory at exit as it does the rest.
///
/// Must run before anything initialises OpenSSL (`curl_global_init`, `libssh2_init`): the first
/// initialisation decides. Looked up at run time, so nothing is linked against libcrypto and a
/// libcurl built on another TLS library makes this a no-op.
public enum OpenSSLExitCleanup {
    /// `OPENSSL_INIT_NO_ATEXIT` in openssl/crypto.h (OpenSSL 1.1.1b and later).
    private static let noAtExit: UInt64 = 0x0008_0000

    /// Idempotent and thread-safe.
    public static func disable() { _ = once }

    private static let once: Void = {
        #if os(Linux)
        guard let process = dlopen(nil, RTLD_NOW) else { return }
        defer { dlclose(process) }
        guard let symbol = dlsym(process, "OPENSSL_init_crypto") else { return }
        typealias InitCrypto = @convention(c) (UInt64, OpaquePointer?) -> Int32
        _ = unsafeBitCast(symbol, to: InitCrypto.self)(noAtExit, nil)
        #endif
    }()
}
