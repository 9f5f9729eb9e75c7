import ArgumentParser
import TetherCore
import TetherStreaming

/// `tether notifications …`: the notification backend's 11 methods and its live pushes.
struct NotificationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifications", abstract: "Desktop notifications (the notification backend).",
        subcommands: [List.self, Count.self, Read.self, ReadAll.self, Delete.self, Clear.self, Settings.self,
                      Send.self, Push.self, Broadcast.self, Watch.self, Queue.self],
        defaultSubcommand: List.self)

    /// Resolves the profile's backend as a `NotificationBackend`, or says why it is not one.
    static func run(_ options: GlobalOptions, command: String,
                    _ body: (any NotificationBackend, EventPrinter) async throws -> Void) async throws {
        try await reportingFailures {
            try await CommandContext(options).withBackend(requiring: .notifications, command: "notifications \(command)") { _, backend, printer in
                guard let notifications = backend as? any NotificationBackend else {
                    throw TetherError.unsupported("`tether notifications`", backend: backend.kind)
                }
                try await body(notifications, printer)
            }
        }
    }

    /// A method's result: one JSON line, or `key: value` lines in the readable view (`-o text`
    /// printed JSON).
    static func printResult(_ result: JSONObject, _ printer: EventPrinter) {
        switch printer.format {
        case .jsonl:
            LineOutput.standardOutput.write(JSONValue.object(result).serialized + "\n")
        case .text:
            let lines = result.keys.map { key in
                let value = result[key]!
                return "\(key.replacingOccurrences(of: "_", with: " ")): \(value.stringish ?? value.serialized)"
            }
            LineOutput.standardOutput.write(lines.joined(separator: "\n") + (lines.isEmpty ? "" : "\n"))
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Notifications, newest first.")
        @OptionGroup var options: GlobalOptions
        @Flag(help: "Only unread ones.") var unread = false
        @Option(help: "At most this many.") var limit: Int?
        @Option(help: "Skip this many.") var offset: Int?
        func run() async throws {
            try await NotificationsCommand.run(options, command: "list") { backend, printer in
                for notification in try await backend.listNotifications(unreadOnly: unread, limit: limit, offset: offset) {
                    printer.print(.notificationReceived(notification))
                }
            }
        }
    }

    struct Count: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "How many are unread.")
        @OptionGroup var options: GlobalOptions
        func run() async throws {
            try await NotificationsCommand.run(options, command: "count") { backend, printer in
                let unread = try await backend.unreadCount()
                if printer.format == .text {
                    LineOutput.standardOutput.write("\(unread) unread\n")
                } else {
                    printResult(["unread": .int(Int64(unread))], printer)
                }
            }
        }
    }

    struct Read: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Mark notifications read.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "Notification ids.") var ids: [String]
        func run() async throws {
            try await NotificationsCommand.run(options, command: "read") { backend, printer in
                printResult(try await backend.markRead(ids: ids), printer)
            }
        }
    }

    struct ReadAll: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "read-all", abstract: "Mark every notification read.")
        @OptionGroup var options: GlobalOptions
        func run() async throws {
            try await NotificationsCommand.run(options, command: "read-all") { backend, printer in
                printResult(try await backend.markAllRead(), printer)
            }
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete one notification.")
        @OptionGroup var options: GlobalOptions
        @Argument(help: "The notification's id.") var id: String
        func run() async throws {
            try await NotificationsCommand.run(options, command: "delete") { backend, printer in
                printResult(try await backend.deleteNotification(id: id), printer)
            }
        }
    }

    struct Clear: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Delete every notification.")
        @OptionGroup var options: GlobalOptions
        func run() async throws {
            try await NotificationsCommand.run(options, command: "clear") { backend, printer in
                printResult(try await backend.clearNotifications(), printer)
            }
        }
    }

    struct Settings: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show, or change with --set KEY=VALUE, the notification settings.")
        @OptionGroup var options: GlobalOptions
        @Option(name: .customLong("set"), help: ArgumentHelp("A setting to change.", valueName: "key=value"))
        var assignments: [String] = []
        func validate() throws {
            for assignment in assignments where assignment.firstIndex(of: "=").map({ $0 == assignment.startIndex }) ?? true {
                throw ValidationError("--set takes KEY=VALUE (a key before the =), got \"\(assignment)\"")
            }
        }
        func run() async throws {
            var values: [String: String] = [:]
            for assignment in assignments {
                let equals = assignment.firstIndex(of: "=")!  // validate() made sure
                values[String(assignment[..<equals])] = String(assignment[assignment.index(after: equals)...])
            }
            try await NotificationsCommand.run(options, command: "settings") { backend, printer in
                printResult(try await backend.settings(set: values), printer)
            }
        }
    }

    struct Send: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show a notification on the desktop.")
        @OptionGroup var options: GlobalOptions
        @Option var title: String
        @Option var body: String
        @Option(help: "low, normal, high or urgent.") var priority: String?
        func run() async throws {
            try await NotificationsCommand.run(options, command: "send") { backend, printer in
                printResult(try await backend.sendNotification(title: title, body: body, priority: priority), printer)
            }
        }
    }

    struct Push: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Push a notification to a device.")
        @OptionGroup var options: GlobalOptions
        @Option var title: String
        @Option var body: String
        @Option(help: "The device's id (default: all of this user's).") var device: String?
        func run() async throws {
            try await NotificationsCommand.run(options, command: "push") { backend, printer in
                printResult(try await backend.push(title: title, body: body, device: device), printer)
            }
        }
    }

    struct Broadcast: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Send a notification to every device.")
        @OptionGroup var options: GlobalOptions
        @Option var title: String
        @Option var body: String
        func run() async throws {
            try await NotificationsCommand.run(options, command: "broadcast") { backend, printer in
                printResult(try await backend.broadcast(title: title, body: body), printer)
            }
        }
    }

    struct Queue: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Commands queued while the desktop was unreachable (read, read-all, delete, clear).",
            discussion: "They are sent, in order, the next time Tether reaches the desktop; each is tried up to 3 times.")
        @OptionGroup var options: GlobalOptions
        func run() async throws {
            try await NotificationsCommand.run(options, command: "queue") { backend, printer in
                for entry in backend.pendingQueue() { printResult(entry, printer) }
            }
        }
    }

    struct Watch: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stream notifications as they arrive (notification.received).")
        @OptionGroup var options: GlobalOptions
        func run() async throws {
            try await NotificationsCommand.run(options, command: "watch") { backend, printer in
                try await printer.print(backend.watch())
            }
        }
    }
}
