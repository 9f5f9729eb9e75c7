import CCurl
import Foundation
import Synchronization

/// One libcurl easy transfer, run to completion on a thread of its own. The handle is created,
/// used and cleaned up on that thread only; other threads talk to it through `Control` (a
/// cancel flag and, for streams, the consumer's demand), read from libcurl's callbacks.
final class CurlTransfer: @unchecked Sendable {
    enum Mode {
        /// Collect the whole body, up to a limit.
        case collect(maxBytes: Int)
        /// Hand each chunk to `sink` as it arrives; `liveness` aborts after that long without bytes.
        case stream(requireEventStream: Bool, liveness: Duration?, sink: any StreamSink)
    }

    /// What the owner of a stream receives.
    protocol StreamSink: AnyObject, Sendable {
        /// Headers of the final response are in and it is a success: the stream begins.
        func opened(status: Int, headers: [String: String])
        /// A chunk of body. Blocks (on the transfer's thread) while the consumer is behind.
        func received(_ chunk: UnsafeRawBufferPointer)
        func finished(_ error: NetError?)
    }

    /// Shared between the transfer's thread and everyone else.
    final class Control: Sendable {
        let cancelled = Atomic<Bool>(false)
        func cancel() { cancelled.store(true, ordering: .relaxed) }
    }

    let request: HTTPRequest
    let mode: Mode
    let control = Control()

    // State below is touched only on the transfer's thread (from perform and its callbacks).
    private var status = 0
    private var headers: [String: String] = [:]
    private var headersDone = false
    private var opened = false
    private var failedStatus: Int?
    private var body: [UInt8] = []
    private var tooLarge = false
    private var stalled = false
    private var lastByte = ContinuousClock.now
    private var notEventStream: String??

    private static let errorBodyLimit = 64 * 1024

    init(request: HTTPRequest, mode: Mode) {
        self.request = request
        self.mode = mode
    }

    /// Runs the transfer on a new thread; `completion` is called there, once.
    func start(completion: @escaping @Sendable (Result<HTTPResponse, NetError>) -> Void) {
        let thread = Thread { [self] in completion(perform()) }
        thread.name = "tether.curl"
        thread.start()
    }

    // MARK: - The transfer's thread

    private func perform() -> Result<HTTPResponse, NetError> {
        CurlGlobal.initialize()
        guard let handle = curl_easy_init() else {
            return .failure(NetError(.other, url: request.url, detail: "libcurl could not create a handle"))
        }
        defer { curl_easy_cleanup(handle) }
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        var headerList: UnsafeMutablePointer<curl_slist>?
        defer { curl_slist_free_all(headerList) }

        let context = Unmanaged.passUnretained(self).toOpaque()
        let code: CURLcode = errorBuffer.withUnsafeMutableBufferPointer { errorPointer in
            tether_curl_setopt_string(handle, CURLOPT_URL, request.url)
            tether_curl_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorPointer.baseAddress)
            tether_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
            tether_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 1)
            tether_curl_setopt_long(handle, CURLOPT_MAXREDIRS, 10)
            tether_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")
            tether_curl_setopt_string(handle, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
            tether_curl_setopt_long(handle, CURLOPT_SSL_VERIFYPEER, 1)
            tether_curl_setopt_long(handle, CURLOPT_SSL_VERIFYHOST, 2)
            tether_curl_setopt_long(handle, CURLOPT_TCP_NODELAY, 1)
            // Through a proxy (HTTPS_PROXY), an https:// URL is tunnelled with CONNECT: its
            // "200 Connection established" is the proxy's, not the server's answer.
            tether_curl_setopt_long(handle, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1)
            tether_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, Int(request.connectTimeout.milliseconds))
            tether_curl_setopt_string(handle, CURLOPT_USERAGENT, "tether/\(TetherVersion.string)")

            switch request.method {
            case .get: break
            case .post: tether_curl_setopt_long(handle, CURLOPT_POST, 1)
            default: tether_curl_setopt_string(handle, CURLOPT_CUSTOMREQUEST, request.method.rawValue)
            }
            if let body = request.body {
                tether_curl_setopt_long(handle, CURLOPT_POSTFIELDSIZE, body.count)
                body.withUnsafeBytes { raw in
                    // COPYPOSTFIELDS copies now, so the buffer need not outlive this call.
                    _ = tether_curl_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!))
                }
            } else if request.method == .post {
                tether_curl_setopt_long(handle, CURLOPT_POSTFIELDSIZE, 0)
                tether_curl_setopt_string(handle, CURLOPT_POSTFIELDS, "")
            }

            headerList = curl_slist_append(headerList, "Expect:")  // no 100-continue round trip
            for header in request.headers {
                headerList = curl_slist_append(headerList, "\(header.name): \(header.value)")
            }
            if let authorization = request.authorization.headerValue {
                headerList = curl_slist_append(headerList, "Authorization: \(authorization)")
            }
            tether_curl_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList)

            switch mode {
            case .collect:
                tether_curl_setopt_long(handle, CURLOPT_TIMEOUT_MS, Int(request.timeout.milliseconds))
                tether_curl_setopt_string(handle, CURLOPT_ACCEPT_ENCODING, "")
            case .stream:
                break  // no total timeout: the liveness watchdog decides
            }

            tether_curl_setopt_data_callback(handle, CURLOPT_HEADERFUNCTION) { buffer, size, count, userdata in
                let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata!).takeUnretainedValue()
                return transfer.onHeader(UnsafeRawBufferPointer(start: buffer, count: size * count))
            }
            tether_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, context)
            tether_curl_setopt_data_callback(handle, CURLOPT_WRITEFUNCTION) { buffer, size, count, userdata in
                let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata!).takeUnretainedValue()
                return transfer.onBody(UnsafeRawBufferPointer(start: buffer, count: size * count))
            }
            tether_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, context)
            tether_curl_setopt_long(handle, CURLOPT_NOPROGRESS, 0)
            tether_curl_setopt_xferinfo_callback(handle) { userdata, _, _, _, _ in
                let transfer = Unmanaged<CurlTransfer>.fromOpaque(userdata!).takeUnretainedValue()
                return transfer.onProgress()
            }
            tether_curl_setopt_pointer(handle, CURLOPT_XFERINFODATA, context)

            lastByte = .now
            return curl_easy_perform(handle)
        }
        let detail = errorBuffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let message = detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail
        return complete(code: code, message: message)
    }

    private func complete(code: CURLcode, message: String) -> Result<HTTPResponse, NetError> {
        let url = request.url
        let error: NetError?
        switch code {
        case _ where notEventStream != nil:
            // We stopped reading on purpose: the answer is not a stream.
            let type = notEventStream ?? nil
            error = NetError(.notEventStream(type), url: url, detail: type.map { "Content-Type \($0), not text/event-stream" } ?? "no Content-Type",
                             headers: headers)
        case CURLE_OK:
            if let failedStatus {
                error = failedStatus >= 300 && failedStatus < 400
                    ? NetError(.badRedirect, url: url, detail: Self.redirectDetail(failedStatus, headers), body: body, headers: headers)
                    : NetError(.status(failedStatus), url: url, detail: "HTTP \(failedStatus)", body: body, headers: headers)
            } else if (300..<400).contains(status) {
                // A 3xx libcurl did not follow is the final answer, in either mode (an opened
                // stream's status is 200, so this never cuts a stream short).
                error = NetError(.badRedirect, url: url, detail: Self.redirectDetail(status, headers), headers: headers)
            } else {
                error = nil
            }
        case CURLE_ABORTED_BY_CALLBACK, CURLE_WRITE_ERROR:
            if control.cancelled.load(ordering: .relaxed) {
                error = NetError(.cancelled, url: url, detail: "cancelled")
            } else if stalled {
                error = NetError(.stalled, url: url, detail: "no data for \(livenessDescription)")
            } else if tooLarge {
                error = NetError(.tooLarge, url: url, detail: "response larger than the limit")
            } else {
                error = NetError(.other, url: url, detail: message)
            }
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            error = NetError(.connect, url: url, detail: message)
        case CURLE_OPERATION_TIMEDOUT:
            error = NetError(.timeout, url: url, detail: message)
        case CURLE_SSL_CONNECT_ERROR:
            error = .tlsHandshake(url: url, detail: message)
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
             CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR:
            error = NetError(.tls, url: url, detail: message)
        case CURLE_TOO_MANY_REDIRECTS:
            error = NetError(.badRedirect, url: url, detail: "too many redirects")
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
            error = NetError(.other, url: url, detail: "\(message) (only http:// and https:// URLs work here)")
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_PARTIAL_FILE, CURLE_GOT_NOTHING, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            error = NetError(.interrupted, url: url, detail: message)
        default:
            error = NetError(.other, url: url, detail: message)
        }
        if case .stream(_, _, let sink) = mode {
            sink.finished(error)
        }
        if let error { return .failure(error) }
        return .success(HTTPResponse(status: status, headers: headers, body: body))
    }

    private static func redirectDetail(_ status: Int, _ headers: [String: String]) -> String {
        headers["location"] == nil ? "HTTP \(status) redirect without a Location header"
            : "HTTP \(status) redirect with an empty Location header"
    }

    private var livenessDescription: String {
        if case .stream(_, let liveness?, _) = mode { return "\(liveness)" }
        return "too long"
    }

    // MARK: Callbacks (the transfer's thread)

    private func onHeader(_ line: UnsafeRawBufferPointer) -> Int {
        lastByte = .now
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("HTTP/") {
            // A new response (the first, or after a redirect, a 1xx or a proxy's CONNECT):
            // start over — what was judged of an earlier one does not carry.
            let fields = text.split(separator: " ", maxSplits: 2)
            status = fields.count > 1 ? Int(fields[1]) ?? 0 : 0
            headers = [:]
            headersDone = false
            if !opened {
                notEventStream = nil
                failedStatus = nil
                body = []
            }
        } else if text.isEmpty {
            headersDone = true
            headersComplete()
        } else if let colon = text.firstIndex(of: ":") {
            let name = text[..<colon].lowercased()
            headers[name] = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return line.count
    }

    /// Whether libcurl follows this response: a redirect status with a non-empty `Location`.
    /// libcurl treats an empty `Location` (or one of only spaces) as no location and ends the
    /// transfer on the 3xx, so it is a redirect without a location here too: the transfer fails
    /// with `.badRedirect` instead of looking like a stream that ended before it began (which an
    /// EventSource would retry forever).
    static func isFollowedRedirect(status: Int, headers: [String: String]) -> Bool {
        guard [301, 302, 303, 307, 308].contains(status), let location = headers["location"] else { return false }
        return !location.trimmingCharacters(in: .whitespaces).isEmpty
    }

    /// Called at the end of each response's headers. A redirect with a Location is followed by
    /// libcurl; anything else is final.
    private func headersComplete() {
        if (100..<200).contains(status) { return }
        if Self.isFollowedRedirect(status: status, headers: headers) { return }
        guard case .stream(let requireEventStream, _, let sink) = mode else { return }
        guard status == 200 else {
            failedStatus = status
            return
        }
        if requireEventStream {
            let type = headers["content-type"]
            guard let type, type.lowercased().hasPrefix("text/event-stream") else {
                notEventStream = .some(type)
                return
            }
        }
        opened = true
        lastByte = .now
        sink.opened(status: status, headers: headers)
    }

    private func onBody(_ chunk: UnsafeRawBufferPointer) -> Int {
        if control.cancelled.load(ordering: .relaxed) { return 0 }
        switch mode {
        case .collect(let maxBytes):
            guard body.count + chunk.count <= maxBytes else {
                tooLarge = true
                return 0
            }
            body.append(contentsOf: chunk)
        case .stream(_, _, let sink):
            if !opened {
                // An error response or a wrong content type: keep a little for the message.
                if notEventStream != nil { return 0 }
                if body.count < Self.errorBodyLimit { body.append(contentsOf: chunk.prefix(Self.errorBodyLimit - body.count)) }
                return chunk.count
            }
            sink.received(chunk)
            // Time spent waiting for a slow consumer is not the server's silence.
            lastByte = .now
            if control.cancelled.load(ordering: .relaxed) { return 0 }
        }
        return chunk.count
    }

    private func onProgress() -> Int32 {
        if control.cancelled.load(ordering: .relaxed) { return 1 }
        if case .stream(_, let liveness?, _) = mode, ContinuousClock.now - lastByte > liveness {
            stalled = true
            return 1
        }
        return 0
    }
}

/// The version every component reports (`--version`, the User-Agent).
public enum TetherVersion {
    public static let string = "0.1.0"
}
