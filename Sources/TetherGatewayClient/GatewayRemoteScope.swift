import TetherAdapterSupport
import TetherCore

/// Which of the gateway's profiles a local profile stands for, and how ids cross between them:
/// the one rule for what a `gateway` profile's ids look like.
///
/// - `remote_profile` set: the remote profile's ids, as they are.
/// - none: every profile of the gateway, so an id carries its profile — `PROFILE~ID`, the
///   remote id as it is after the first `~` — and `tether approve ID` from a fresh process
///   knows where to send it.
///
/// Events say where they came from: their `profile` becomes `LOCAL/REMOTE` (as when a gateway
/// fans another in) and they keep the remote `backend`.
public struct GatewayRemoteScope: Sendable, Equatable {
    /// The local profile's name.
    public let local: String
    /// The remote profile this one stands for; nil means all of them.
    public let remote: String?

    public init(local: String, remote: String?) {
        self.local = local
        self.remote = remote
    }

    /// A remote profile and one of its ids, from a local id: the profile is what comes before
    /// the first `~` (escaped as `CompositeID` escapes a part), the id all that follows, as it is.
    public func resolve(_ id: String, what: String) throws(TetherError) -> (profile: String, id: String) {
        if let remote { return (remote, id) }
        let bytes = Array(id.utf8)
        guard let tilde = bytes.firstIndex(of: UInt8(ascii: "~")), tilde > 0, tilde + 1 < bytes.count else {
            throw TetherError(.usage, "\"\(id)\" is not a \(what) of profile \(local): its ids are PROFILE~ID",
                              hint: "copy the id as `tether -p \(local) sessions list` or `tether -p \(local) approvals` prints it")
        }
        let profile = CompositeID.parts(String(decoding: bytes[..<tilde], as: UTF8.self))[0]
        return (profile, String(decoding: bytes[(tilde + 1)...], as: UTF8.self))
    }

    /// The local id of `id`, one of `profile`'s: `PROFILE~ID` when this profile stands for all.
    public func localID(_ id: String, profile: String) -> String {
        remote == nil ? CompositeID.join([profile, ""]) + id : id
    }

    /// `path` under the remote profile of `id`, with the id as one path segment.
    public func path(_ id: String, what: String, _ route: (_ profile: PathSegment, _ id: PathSegment) -> String) throws(TetherError) -> String {
        let (profile, remoteID) = try resolve(id, what: what)
        return route(try PathSegment(profile, what: "profile"), try PathSegment(remoteID, what: what))
    }

    /// A remote event as this profile shows it: ids local, `profile` `LOCAL/REMOTE`, and the
    /// gateway's `seq` (the SSE id) as its cursor.
    public func localEvent(_ event: Event, seq: String?) -> Event {
        var event = event
        let profile = event.profile ?? remote ?? ""
        if remote == nil {
            if let session = event.session { event.session = localID(session, profile: profile) }
            switch event.type {
            case .sessionCreated, .sessionUpdated, .sessionDeleted, .approvalRequested, .approvalResolved:
                var data = event.data
                if let id = data["id"]?.string { data["id"] = .string(localID(id, profile: profile)) }
                if let session = data["session"]?.string { data["session"] = .string(localID(session, profile: profile)) }
                event.data = data
            default:
                break
            }
        }
        event.profile = "\(local)/\(profile)"
        if let seq { event.cursor = seq }
        return event
    }
}
