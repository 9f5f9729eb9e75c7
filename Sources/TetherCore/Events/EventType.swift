/// Every event type of schema v1. `adapters.md` documents the `data` of each, with an example.
public enum EventType: String, Sendable, CaseIterable {
    case connectionState = "connection.state"
    case sessionCreated = "session.created"
    case sessionUpdated = "session.updated"
    case sessionDeleted = "session.deleted"
    case sessionStatus = "session.status"
    case turnStarted = "turn.started"
    case turnCompleted = "turn.completed"
    case partStarted = "part.started"
    case partDelta = "part.delta"
    case partCompleted = "part.completed"
    case partRemoved = "part.removed"
    case approvalRequested = "approval.requested"
    case approvalResolved = "approval.resolved"
    case planUpdated = "plan.updated"
    case usageUpdated = "usage.updated"
    case notificationReceived = "notification.received"
    case terminalOutput = "terminal.output"
    case terminalExit = "terminal.exit"
    case error
}
