import Foundation
@testable import TetherTestSupport

/// A webhook receiver on loopback (python3's http.server, as ntfy would take the push): answers
/// the first POST 503 and the rest 200, and keeps every POST as a JSON line in a file.
final class PushReceiver: @unchecked Sendable {
    let child: ChildProcess
    let directory: String
    let url: String

    static let script = #"""
import http.server, json, sys, os
directory = sys.argv[1]
count = 0
class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global count
        count += 1
        body = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
        with open(os.path.join(directory, "posts.jsonl"), "a") as f:
            f.write(json.dumps({"title": self.headers.get("Title"), "type": self.headers.get("Content-Type"), "body": body}) + "\n")
        self.send_response(503 if count == 1 else 200)
        self.send_header("Content-Length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[2])), Handler)
with open(os.path.join(directory, "port.tmp"), "w") as f:
    f.write(str(server.server_address[1]))
os.rename(os.path.join(directory, "port.tmp"), os.path.join(directory, "port"))
server.serve_forever()
"""#

    /// `port` 0 picks a free one.
    init(port: Int = 0) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tether-push-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        child = try ChildProcess("/usr/bin/env", ["python3", "-c", Self.script, directory, String(port)])
        let deadline = ContinuousClock.now + .seconds(10)
        var port: String?
        while port == nil, ContinuousClock.now < deadline {
            port = try? String(contentsOfFile: directory + "/port", encoding: .utf8)
            if port == nil { try await Task.sleep(for: .milliseconds(50)) }
        }
        guard let port else {
            child.signal(SIGKILL)
            throw FixtureError("the push receiver did not start")
        }
        url = "http://127.0.0.1:\(port)/topic"
    }

    var posts: [[String: String]] {
        let text = (try? String(contentsOfFile: directory + "/posts.jsonl", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: String]
        }
    }

    func stop() {
        child.signal(SIGKILL)
        child.wait()
    }
}
