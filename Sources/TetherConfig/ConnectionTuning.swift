/// How a profile's long-lived streams notice a dead link and come back: the common profile keys
/// `liveness` and `reconnect_delay` (seconds, integer or float). Both optional; nil keeps the
/// backend's own default (its heartbeat cadence decides a sensible liveness).
public struct ConnectionTuning: Sendable, Equatable {
    /// No byte for this long and the link is presumed dead: reconnect (CodexMonitor, which never
    /// heartbeats, pings after this long of silence and expects the answer within it).
    public let liveness: Duration?
    /// The first reconnect delay; later ones grow from it as the default schedule does (×2, ×5,
    /// ×10, then ×30 for every later attempt).
    public let reconnectDelay: Duration?

    public static let keys = ["liveness", "reconnect_delay"]
    public static let backendDefaults = ConnectionTuning(liveness: nil, reconnectDelay: nil)

    public init(liveness: Duration?, reconnectDelay: Duration?) {
        self.liveness = liveness
        self.reconnectDelay = reconnectDelay
    }

    init(table: ConfigTable) throws {
        liveness = try table.seconds("liveness", in: 0.1...86_400, example: "30")
        reconnectDelay = try table.seconds("reconnect_delay", in: 0.01...3_600, example: "1")
    }

    var redactedFields: [RedactedField] {
        var fields: [RedactedField] = []
        if let liveness { fields.append(RedactedField("liveness", .seconds(liveness))) }
        if let reconnectDelay { fields.append(RedactedField("reconnect_delay", .seconds(reconnectDelay))) }
        return fields
    }
}
