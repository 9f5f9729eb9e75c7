import ArgumentParser
import TetherCore
import TetherNet
import TetherAdapterSupport
import TetherStreaming

/// `tether sse URL`: any SSE endpoint, one JSON line per event. How a user looks at what a
/// backend really sends, and how the decoder is checked against other implementations.
struct SSECommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sse",
        abstract: "Debug any SSE endpoint: one JSON line per event, reconnecting as EventSource does.",
        discussion: """
            Each event prints as {"event","data","id","retry"} (retry only when the event's block set \
            one); with --comments, comment lines print as {"comment": …}. Connection changes go to \
            stderr. Reconnects send Last-Event-ID, with backoff; 401/403 stop with exit 77, 204 stops.

            Example: tether sse http://127.0.0.1:4096/global/event --header 'Authorization: Basic …' | jq .
            """)

    @OptionGroup var options: GlobalOptions
    @Argument(help: "The http:// or https:// URL of the event stream.") var url: String
    @Option(name: .customLong("header"), help: ArgumentHelp("A request header, 'Name: value' (repeatable).", valueName: "header"))
    var headers: [String] = []
    @Option(name: .customLong("last-event-id"), help: "Send this Last-Event-ID on the first connection (empty: none).") var lastEventID: String?
    @Flag(help: "Print comment lines too.") var comments = false
    @Flag(name: .customLong("no-reconnect"), help: "Stop when the stream ends instead of reconnecting.") var noReconnect = false
    @Option(help: ArgumentHelp("Reconnect after this many seconds without a byte (0: never).", valueName: "seconds"))
    var liveness: Double = 45

    func validate() throws {
        guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
            throw ValidationError("the URL must start with http:// or https://, got \"\(URLCredentials.redacted(url))\"")
        }
        for header in headers where !header.contains(":") {
            throw ValidationError("--header takes 'Name: value', got \"\(header)\"")
        }
        // A day at most: anything longer (or infinite, or not a number) is no watchdog at all.
        guard liveness.isFinite, liveness >= 0, liveness <= 86_400 else {
            throw ValidationError("--liveness takes 0 (never) to 86400 seconds, got \(liveness)")
        }
    }

    func run() async throws {
        try await reportingFailures {
            let logger = LogSetup.logger(verbosity: options.verbose)
            let parsedHeaders: [(name: String, value: String)] = headers.map { header in
                let colon = header.firstIndex(of: ":")!
                return (String(header[..<colon]).trimmingWhitespace, String(header[header.index(after: colon)...]).trimmingWhitespace)
            }
            let url = self.url
            let source = EventSource(client: HTTPClient(logger: logger), configuration: .init(
                makeRequest: { last in
                    var all = parsedHeaders
                    if !all.contains(where: { $0.name.lowercased() == "accept" }) { all.append(("Accept", "text/event-stream")) }
                    all.append(("Cache-Control", "no-cache"))
                    // No id (none yet, `--last-event-id ""`, or reset by the server's empty `id:`): no header.
                    if let id = last, !id.isEmpty { all.append(("Last-Event-ID", id)) }
                    return HTTPRequest(.get, url, headers: all)
                },
                lastEventID: lastEventID,
                liveness: liveness > 0 ? .milliseconds(Int64(liveness * 1000)) : nil,
                emitComments: comments, reconnect: !noReconnect))
            // Everything one network read decoded is written with one write(2): a burst costs one
            // system call, and nothing waits for more input.
            var writer = JSONWriter(reservingCapacity: 64 << 10)
            let output = LineOutput.standardOutput
            let status = StatusLine.shared
            var elements = source.makeAsyncIterator()
            do {
                while let batch = try await elements.nextBatch() {
                    writer.reset()
                    for element in batch {
                        switch element {
                        case .connecting(let attempt):
                            if attempt == 1 { status.show("connecting to \(URLCredentials.redacted(url))…") }
                            logger.info("connecting", metadata: ["url": "\(URLCredentials.redacted(url))", "attempt": "\(attempt)"])
                        case .open(let code, _):
                            status.clear()
                            logger.info("connected", metadata: ["status": "\(code)"])
                        case .disconnected(let reason, let retryIn, let attempt):
                            LineOutput.standardError.write("tether sse: \(reason?.detail ?? "the stream ended"); reconnecting in \(retryIn) (attempt \(attempt))\n")
                        case .comment(let text):
                            writer.write(["comment": .string(text)])
                            writer.writeByte(0x0A)
                        case .event(let event):
                            writer.writeRaw("{\"event\":" as StaticString)
                            writer.writeString(event.type)
                            writer.writeRaw(",\"data\":" as StaticString)
                            writer.writeString(utf8: event.dataBytes)
                            writer.writeRaw(",\"id\":" as StaticString)
                            writer.writeString(event.id)
                            if let retry = event.retry {
                                writer.writeRaw(",\"retry\":" as StaticString)
                                writer.writeRaw(String(retry))
                            }
                            writer.writeRaw("}\n" as StaticString)
                        }
                    }
                    if !writer.isEmpty { output.write(writer) }
                }
            } catch let error as NetError {
                throw error.tetherError(service: "the SSE server")
            }
        }
    }
}

extension String {
    var trimmingWhitespace: String {
        var view = Substring(self)
        while view.first?.isWhitespace == true { view.removeFirst() }
        while view.last?.isWhitespace == true { view.removeLast() }
        return String(view)
    }
}
