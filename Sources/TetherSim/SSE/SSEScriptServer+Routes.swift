import FlyingFox
import Foundation

/// Request handling of `SSEScriptServer`: one value per request.
struct SSEScriptRoutes: Sendable {
    let streams: StreamRegistry
    let log: RequestLog
    let scripts: Locked<[String: [SSEScriptChunk]]>
    /// The last flood rendered, by frame count and size: a benchmark asks for the same one again.
    let floods: Locked<(count: Int, size: Int, bytes: Data)?>

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let body = (try? await request.bodyData) ?? Data()
        let recorded = RecordedRequest(request, body: body)
        log.append(recorded)

        let components = request.path.split(separator: "/").map { String($0).removingPercentEncoding ?? String($0) }
        switch components.first {
        case "script" where components.count == 2:
            return script(named: components[1])
        case "flood":
            return flood(count: intQuery(recorded, "n") ?? 100, size: intQuery(recorded, "size") ?? 250)
        case "paced":
            return paced(
                rate: max(1, intQuery(recorded, "rate") ?? 100),
                count: intQuery(recorded, "n") ?? intQuery(recorded, "seconds").map { $0 * max(1, intQuery(recorded, "rate") ?? 100) },
                size: intQuery(recorded, "size") ?? 0
            )
        case "resume":
            return resume(recorded)
        case "status" where components.count == 2:
            return status(components[1])
        case "redirect":
            return redirect(recorded)
        case "notsse":
            return SSEResponse.text("this is not an event stream\n")
        case "stall":
            return stall(after: intQuery(recorded, "after") ?? 0)
        case "ticker":
            return ticker(
                interval: .milliseconds(max(1, intQuery(recorded, "interval_ms") ?? 1000)),
                count: intQuery(recorded, "count")
            )
        default:
            return SSEResponse.text("no route for \(recorded.method) \(recorded.path)\n", status: .notFound)
        }
    }

    private func intQuery(_ request: RecordedRequest, _ name: String) -> Int? {
        request.queryValue(name).flatMap { Int($0) }
    }

    // MARK: Routes

    private func script(named name: String) -> HTTPResponse {
        guard let chunks = scripts.current[name] else {
            return SSEResponse.text("no script named \(name)\n", status: .notFound)
        }
        let body = streams.makeBody()
        Task {
            for chunk in chunks {
                if chunk.delay > .zero {
                    try? await Task.sleep(for: chunk.delay)
                }
                guard body.isOpen else { return }
                body.send(Data(chunk.bytes))
            }
            body.finish()
        }
        return SSEResponse.stream(body)
    }

    private func flood(count: Int, size: Int) -> HTTPResponse {
        let body = streams.makeBody()
        let bytes = floods.withLock { cached -> Data in
            if let cached, cached.count == count, cached.size == size { return cached.bytes }
            let bytes = Self.renderFlood(count: count, size: size)
            cached = (count, size, bytes)
            return bytes
        }
        Task { await SSEResponse.write(bytes, into: body, close: true) }
        return SSEResponse.stream(body)
    }

    /// The flood, rendered once before it is served (as the other simulators' floods are): a
    /// server that built each frame as it wrote it served about 140 MB/s, slower than
    /// `tether sse` reads, and the benchmark measured the server.
    static func renderFlood(count: Int, size: Int) -> Data {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(max(1, count) * (size + 16))
        for i in stride(from: 1, through: count, by: 1) { appendFloodFrame(i, size: size, to: &bytes) }
        return Data(bytes)
    }

    /// `id: i\ndata: {"i":i,"pad":"xx…"}\n\n`, padded to about `size` bytes.
    private static func appendFloodFrame(_ i: Int, size: Int, to bytes: inout [UInt8]) {
        let digits = Array(String(i).utf8)
        let start = bytes.count
        bytes.append(contentsOf: "id: ".utf8)
        bytes.append(contentsOf: digits)
        bytes.append(contentsOf: "\ndata: {\"i\":".utf8)
        bytes.append(contentsOf: digits)
        bytes.append(contentsOf: ",\"pad\":\"".utf8)
        let tail = "\"}\n\n".utf8
        let pad = max(0, size - (bytes.count - start) - tail.count)
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "x"), count: pad))
        bytes.append(contentsOf: tail)
    }

    /// Frames at `rate` per second, each stamped with the wall-clock time it was written (see
    /// `PacedSchedule`); frames that fell due together go out in one write. `count` nil: forever.
    private func paced(rate: Int, count: Int?, size: Int) -> HTTPResponse {
        let body = streams.makeBody()
        Task {
            let schedule = PacedSchedule(rate: rate)
            var i = 0
            var batch = Data()
            while count.map({ i < $0 }) ?? true {
                guard await schedule.wait(for: i) else { return }
                let due = schedule.dueCount(from: i, limit: count.map { min(256, $0 - i) } ?? 256)
                batch.removeAll(keepingCapacity: true)
                for _ in 0..<due {
                    i += 1
                    batch.append(Self.pacedFrame(i, sentNanoseconds: PacedSchedule.wallClockNanoseconds(), size: size))
                }
                guard await body.write(batch) else { return }
            }
            body.finish()
        }
        return SSEResponse.stream(body)
    }

    /// `id: i\ndata: {"i":i,"sent_ns":NS,"pad":"xx…"}\n\n`, padded to about `size` bytes (no pad if 0).
    static func pacedFrame(_ i: Int, sentNanoseconds: Int64, size: Int) -> Data {
        let head = "id: \(i)\ndata: {\"i\":\(i),\"sent_ns\":\(sentNanoseconds)"
        guard size > 0 else { return Data((head + "}\n\n").utf8) }
        let pad = max(0, size - head.utf8.count - 12)
        return Data((head + ",\"pad\":\"" + String(repeating: "x", count: pad) + "\"}\n\n").utf8)
    }

    private func resume(_ request: RecordedRequest) -> HTTPResponse {
        let total = intQuery(request, "total") ?? 10
        let dropEvery = max(0, intQuery(request, "dropEvery") ?? 0)
        let lastID = request.header("Last-Event-ID")
            .flatMap { Int($0.trimmingCharacters(in: .whitespaces)) } ?? 0
        // Nothing left: 204 tells an EventSource-style client to stop reconnecting.
        guard lastID < total else { return SSEResponse.empty(.noContent) }
        let body = streams.makeBody()
        Task {
            var sentHere = 0
            for i in (lastID + 1)...total {
                guard body.send(Data("id: \(i)\ndata: {\"i\":\(i)}\n\n".utf8)) else { return }
                sentHere += 1
                if dropEvery > 0, sentHere == dropEvery, i < total {
                    body.abort()
                    return
                }
                await Task.yield()
            }
            body.finish()
        }
        return SSEResponse.stream(body)
    }

    private func status(_ text: String) -> HTTPResponse {
        guard let code = Int(text), (200...599).contains(code) else {
            return SSEResponse.text("bad status \(text)\n", status: .badRequest)
        }
        if code == 204 || code == 304 {
            return SSEResponse.empty(SSEResponse.status(code))
        }
        return SSEResponse.text("status \(code)\n", status: SSEResponse.status(code))
    }

    private func redirect(_ request: RecordedRequest) -> HTTPResponse {
        let code = intQuery(request, "code") ?? 302
        guard (300...399).contains(code) else {
            return SSEResponse.text("bad redirect code \(code)\n", status: .badRequest)
        }
        let location = request.queryValue("to").map { [("Location", $0)] } ?? []
        return SSEResponse.empty(SSEResponse.status(code), headers: location)
    }

    private func stall(after count: Int) -> HTTPResponse {
        let body = streams.makeBody()
        if count > 0 {
            for i in 1...count {
                body.send(Data("id: \(i)\ndata: {\"i\":\(i)}\n\n".utf8))
            }
        }
        return SSEResponse.stream(body)
    }

    private func ticker(interval: Duration, count: Int?) -> HTTPResponse {
        let body = streams.makeBody()
        Task {
            var i = 1
            while count.map({ i <= $0 }) ?? true {
                do {
                    try await Task.sleep(for: interval)
                } catch {
                    return
                }
                let ts = Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
                guard body.send(Data("id: \(i)\ndata: {\"i\":\(i),\"ts\":\"\(ts)\"}\n\n".utf8)) else { return }
                i += 1
            }
            body.finish()
        }
        return SSEResponse.stream(body)
    }
}
