/// Where a client's `GET /v1/events` starts: the `Last-Event-ID` header wins over `since`; a
/// value that is not a seq is a bad request.
public enum EventStreamCursor: Sendable, Equatable {
    /// Live events only, from now on.
    case now
    /// Every logged event after this seq, then live.
    case after(Int64)

    public static func parse(lastEventID: String?, since: String?) throws(ProblemDetails) -> EventStreamCursor {
        let header = lastEventID?.trimmingCharacters(in: .whitespaces)
        let chosen = (header?.isEmpty == false ? header : nil) ?? since
        guard let chosen else { return .now }
        guard let seq = Int64(chosen), seq >= 0 else {
            throw ProblemDetails(.badRequest, "the event cursor \"\(chosen.prefix(40))\" is not a seq",
                                 detail: "pass since (or Last-Event-ID) as the non-negative integer id of an event the gateway sent")
        }
        return .after(seq)
    }
}
