import TetherCore
import TetherStreaming

/// The signaling relay's frames read without a relay, the way the notification backend reads
/// them: a pushed notification becomes the event `notifications watch` emits, and a command
/// response reads as the answer to each of the 11 methods. Public for tools that replay
/// recorded relay traffic, and for the fuzz targets (`Fuzz/`).
public enum NotificationWireDecoder {
    /// The `notification.received` event one text frame carries (before deduplication), or
    /// `nil` for any other frame.
    public static func pushedNotification(fromFrame text: String) -> Event? {
        let frame = NotificationWire.decode(text)
        guard case .event(let event, _) = frame.inbound, let notification = NotificationWire.notification(from: event) else {
            return nil
        }
        return .notificationReceived(notification, raw: frame.raw)
    }

    /// A command response frame read as the answer to every method, by wire name, in
    /// ``NotificationMethod`` order: what `tether notifications …` prints, or the error it
    /// reports. The request's own parameters are the CLI's defaults (no filter or limit,
    /// priority normal, no device), id `n1`, and the setting `enabled=true`. `nil` when the frame
    /// is not a command response.
    public static func responseReadings(fromFrame text: String) -> [(method: String, result: Result<JSONValue, TetherError>)]? {
        guard case .response(let response, let from) = NotificationWire.decode(text).inbound else { return nil }
        return NotificationMethod.allCases.map { method in
            let context = NotificationResponseDecoder.Context(method: method, desktop: from ?? "desktop")
            let result = Result { () throws(TetherError) -> JSONValue in
                try reading(NotificationResponseDecoder.result(of: response, context), as: method, context)
            }
            return (method.rawValue, result)
        }
    }

    private static func reading(_ result: JSONValue, as method: NotificationMethod,
                                _ context: NotificationResponseDecoder.Context) throws(TetherError) -> JSONValue {
        typealias Decoder = NotificationResponseDecoder
        switch method {
        case .send: return .object(try Decoder.send(result, priority: "normal", context))
        case .sendToMobile: return .object(try Decoder.push(result, device: nil, context))
        case .broadcast: return .object(try Decoder.broadcast(result, context))
        case .getHistory: return .array(try Decoder.history(result, unreadOnly: false, limit: nil, context).map(\.json))
        case .markAsRead: return try Decoder.markRead(result, context)
        case .markAllAsRead: return .object(try Decoder.markAllRead(result, context))
        case .delete: return .object(try Decoder.delete(result, id: "n1", context))
        case .clearAll: return .object(try Decoder.clear(result, context))
        case .getUnreadCount: return .int(Int64(try Decoder.unreadCount(result, context)))
        case .getSettings: return .object(try Decoder.settings(result, context))
        case .updateSettings:
            let change = try NotificationSettingsChange(["enabled": "true"])
            return .object(try Decoder.settingsUpdate(result, requested: change, context))
        }
    }
}
