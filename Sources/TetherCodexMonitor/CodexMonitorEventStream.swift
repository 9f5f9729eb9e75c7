import TetherCodexProtocol
import Logging
import TetherAdapterSupport
import TetherCore
import TetherNet
import TetherStreaming

/// The live side of the CodexMonitor backend, reduced to I/O: one connection at a time (and
/// the reconnect schedule), the daemon reads a resync needs, and the execution of what
/// `CodexMonitorStreamMachine` decides. Everything runs in one task, so the machine needs no
/// lock. What is queued when the loop looks goes to the consumer as one batch.
struct CodexMonitorEventStream: Sendable {
    let backend: CodexMonitorBackend
    let request: EventsRequest
    /// For `send --follow`: the prompt to send once the connection is up and resynced, so
    /// nothing of its turn can be missed.
    let sendOnReady: SendRequest?

    private var configuration: CodexMonitorBackend.Configuration { backend.configuration }

    private var logger: Logger { backend.logger }

    func run() -> EventStream {
        EventChannel.stream { channel in try await pump(channel) }
    }

    private func makeMachine() throws -> CodexMonitorStreamMachine {
        CodexMonitorStreamMachine(
            request: request,
            configuration: .init(target: try request.session.map(backend.parseSession),
                                 filtersWorkspaces: configuration.workspace != nil, keepalive: configuration.keepalive,
                                 endpoint: configuration.endpoint, hasPrompt: sendOnReady != nil))
    }

    /// One connection, as the loop holds it (nil between connections: the machine asks for no
    /// daemon reads then).
    private struct Link {
        let client: CodexMonitorClient
        /// The workspaces it watches, read at its first resync.
        var watched: [CodexMonitorWorkspace]?
        /// `--session`'s workspace was connected (or found missing) on this connection.
        var targetConnected = false
    }

    private func pump(_ output: EventChannel) async throws {
        var machine = try makeMachine()
        let outbox = EventOutbox(channel: output)

        guard request.follow || sendOnReady != nil else {
            // What is current, then stop.
            let client = try await backend.open()
            defer { client.close() }
            var link: Link? = Link(client: client)
            try await execute([.resync], &machine, &link, outbox)
            for notification in try await Self.settle(client, quiet: configuration.settle) where !machine.isDone {
                try await execute(machine.receive(method: notification.method, params: notification.params, raw: notification.raw,
                                                  at: Event.now()), &machine, &link, outbox)
            }
            try await outbox.flush()
            return
        }

        var between: Link? = nil
        let loop = ReconnectLoop(policy: configuration.reconnect, service: "CodexMonitor", endpoint: configuration.endpoint,
                                 profile: configuration.profile)
        try await loop.run(&machine, outbox: outbox, closed: "the daemon closed the connection", reconnecting: { reason, attempt in
            logger.info("CodexMonitor stream lost; reconnecting", metadata: ["reason": "\(reason)", "attempt": "\(attempt)"])
        }, execute: { actions, machine in
            try await execute(actions, &machine, &between, outbox)
        }, open: { try await backend.open() }, close: { $0.close() }, live: { client, machine in
            var link: Link? = Link(client: client)
            try await live(&link, &machine, outbox)
        })
    }

    /// One connection's life: the machine resyncs (and maybe sends), then notifications until
    /// the end, through the kernel's pump (the connection's reader decoded them ahead,
    /// ``CodexMonitorRPC``). A wait that outlasts the machine's next tick runs the tick (the
    /// keepalive).
    private func live(_ link: inout Link?, _ machine: inout CodexMonitorStreamMachine, _ outbox: EventOutbox) async throws {
        guard let client = link?.client else { return }
        // Before the resync: what arrives meanwhile is decoded as the stream wants it.
        client.rpc.setKeepingRaw(request.raw)
        try await execute(machine.connected(at: Event.now()), &machine, &link, outbox)
        try await outbox.flush()
        // For lines the reader kept as bytes (a backlog read while a call waited).
        let strings = JSONStringTable(vocabulary: CodexMonitorHotLine.busyWords)
        var lost = 0  // dropped after the batch: the machine resyncs once it has the batch
        func feed(_ incoming: CodexMonitorRPC.Incoming) async throws {
            let now = Event.now()  // per notification: a resync or a send inside the batch takes time
            switch incoming {
            case .notification(let method, let params, let raw):
                try await execute(machine.receive(method: method, params: params, raw: raw, at: now), &machine, &link, outbox)
            case .hot(let hot):
                try await execute(machine.receive(hot, at: now), &machine, &link, outbox)
            case .lines(let kept):
                for index in 0..<kept.count {
                    if machine.isDone { return }
                    if let decoded = client.rpc.decode(kept.line(index), strings: strings) { try await feed(decoded) }
                }
            }
        }
        _ = try await pumpStream(batches: {
            while true {
                switch try await next(client, timeout: machine.timeUntilTick(at: Event.now())) {
                case .batch(let batch, let dropped):
                    strings.startBatch()
                    lost = dropped
                    return batch
                case .timedOut:
                    try await execute(machine.tick(at: Event.now()), &machine, &link, outbox)
                    try await outbox.flush()
                    if machine.isDone { return [] }
                case .ended:
                    return nil
                }
            }
        }, leaving: CodexMonitorRPC.Incoming.lines(KeptLines()), isDone: { machine.isDone }, feed: feed, endOfBatch: {
            if lost > 0, !machine.isDone { try await execute(machine.lost(count: lost, at: Event.now()), &machine, &link, outbox) }
            try await outbox.flush()
        })
        // Done, perhaps by what a resync read: its events go out before the stream ends.
        try await outbox.flush()
    }

    private func next(_ client: CodexMonitorClient, timeout: Duration) async throws -> BatchChannel<CodexMonitorRPC.Incoming>.Received {
        do {
            // A backlog read while a call waited is taken a part at a time: the reader, held
            // until the channel is back under its bound, decodes nothing ahead meanwhile.
            return try await client.rpc.notifications.next(timeout: timeout, weighingAtMost: CodexMonitorRPC.channelBytes)
        } catch let failure as CodexMonitorRPC.Failure {
            throw CodexMonitorClient.tetherError(failure, method: "(events)", doing: "reading events", configuration: configuration)
        }
    }

    /// Runs the machine's actions, and those they lead to. Events wait in the outbox until the
    /// batch ends or I/O is about to happen, so they go out in order and never wait on I/O.
    private func execute(_ actions: [CodexMonitorStreamMachine.Action], _ machine: inout CodexMonitorStreamMachine,
                         _ link: inout Link?, _ outbox: EventOutbox) async throws {
        for action in actions {
            switch action {
            case .emit(let events):
                // Fills in how an approval this process answered was decided (it filters nothing).
                outbox.add(events.map(backend.answers.filledIn))
            case .finish:
                return
            case .resync:
                guard var current = link else { continue }
                try await outbox.flush()
                let snapshot = try await readSnapshot(&current, for: machine)
                link = current
                try await execute(machine.resynced(snapshot, at: Event.now()), &machine, &link, outbox)
            case .ping:
                guard let client = link?.client else { continue }
                try await outbox.flush()
                do {
                    _ = try await client.call("ping", doing: "checking a silent connection", timeout: configuration.pingTimeout)
                } catch let error as TetherError where error.code == .unsupported {}
            case .postPrompt:
                guard let prompt = sendOnReady, let client = link?.client else { continue }
                try await outbox.flush()
                machine.postingPrompt()  // never twice, even if the connection drops before the answer
                let receipt = try await backend.send(prompt, using: client)
                try await execute(machine.promptSent(turn: receipt.turn, at: Event.now()), &machine, &link, outbox)
            case .note(let note):
                log(note)
            }
        }
    }

    /// What a resync reads: the watched workspaces (once per connection), `--session`'s
    /// workspace connected, the active threads when the machine lists them, then each thread
    /// the machine names, with `resume_thread`. Reads the daemon lacks are recorded as gaps.
    private func readSnapshot(_ link: inout Link, for machine: CodexMonitorStreamMachine) async throws -> CodexMonitorSnapshot {
        let client = link.client
        let watched: [CodexMonitorWorkspace]
        if let known = link.watched {
            watched = known
        } else {
            watched = try await backend.watchedWorkspaces(client)
            link.watched = watched
        }
        var snapshot = CodexMonitorSnapshot(watched: watched.map(\.id), threads: [])
        if let target = machine.target, !link.targetConnected {
            link.targetConnected = true
            _ = try await readOrGap(.connectWorkspace, &snapshot) { try await client.connectWorkspace(target.workspace) }
        }
        var active: [(workspace: String, thread: String)] = []
        if machine.listsActiveThreads {
            for workspace in watched {
                let threads = try await readOrGap(.listThreads, &snapshot) {
                    try await backend.api("listing the threads of workspace \(workspace.id)") { try await client.threads(in: workspace) }
                }
                for thread in threads ?? [] where CodexThread.isActive(thread) {
                    if let id = thread["id"]?.string { active.append((workspace.id, id)) }
                }
            }
        }
        for (workspace, thread) in machine.threadsToRead(active: active) {
            do {
                if let object = try await readOrGap(.resumeThread, &snapshot, {
                    try await backend.resume(client, workspace: workspace, thread: thread)
                }) {
                    snapshot.threads.append((workspace, object))
                }
            } catch let error as TetherError where error.code == .notFound && !machine.isTarget(workspace: workspace, thread: thread) {
                logger.info("a thread went away while Tether was disconnected", metadata: ["thread": "\(thread)", "error": "\(error.message)"])
            }
        }
        return snapshot
    }

    /// A read an older or forked daemon may not have (it answers `unknown method`): nil, and
    /// the gap recorded for the machine (which says it once per run).
    private func readOrGap<T>(_ gap: CodexMonitorStreamMachine.Gap, _ snapshot: inout CodexMonitorSnapshot,
                              _ read: () async throws -> T) async throws -> T? {
        do {
            return try await read()
        } catch let error as TetherError where error.code == .unsupported {
            if !snapshot.missing.contains(where: { $0.gap == gap }) { snapshot.missing.append((gap, error)) }
            return nil
        }
    }

    private func log(_ note: CodexMonitorStreamMachine.Note) {
        switch note {
        case .codexStderr(let workspace, let line):
            logger.debug("codex stderr", metadata: ["workspace": "\(workspace ?? "?")", "line": "\(line)"])
        case .unmapped(let method):
            logger.debug("CodexMonitor event not mapped", metadata: ["method": "\(method)"])
        case .ignored(let method):
            logger.debug("CodexMonitor notification ignored", metadata: ["method": "\(method)"])
        case .dropped(let count):
            logger.warning("Tether fell behind and dropped CodexMonitor events; re-reading the active threads",
                           metadata: ["dropped": "\(count)"])
        case .gap(let gap, let message):
            logger.info("CodexMonitor daemon lacks a method; going on without it",
                        metadata: ["error": "\(message)", "consequence": "\(gap.consequence)"])
        case .boundReached(let what):
            logger.warning("\(what)")
        }
    }

    /// Collects notifications until none has come for `quiet` (at most four times that): long
    /// enough for Codex to re-announce the pending requests of threads just resumed.
    static func settle(_ client: CodexMonitorClient, quiet: Duration) async throws
        -> [(method: String, params: JSONValue, raw: JSONValue)] {
        var collected: [(method: String, params: JSONValue, raw: JSONValue)] = []
        func collect(_ incoming: CodexMonitorRPC.Incoming) {
            switch incoming {
            case .notification(let method, let params, let raw): collected.append((method, params, raw))
            case .lines(let kept): kept.forEach { client.rpc.decode($0, strings: nil).map(collect) }
            case .hot: break  // only when decoding keeps no raw; a new connection keeps it
            }
        }
        let deadline = ContinuousClock.now + quiet * 4
        while ContinuousClock.now < deadline {
            let received: BatchChannel<CodexMonitorRPC.Incoming>.Received
            do {
                received = try await client.rpc.notifications.next(timeout: Swift.min(quiet, deadline - .now))
            } catch let failure as CodexMonitorRPC.Failure {
                throw CodexMonitorClient.tetherError(failure, method: "(events)", doing: "reading events", configuration: client.configuration)
            }
            switch received {
            case .timedOut, .ended: return collected
            case .batch(let batch, _): batch.forEach(collect)
            }
        }
        return collected
    }
}

extension CodexMonitorStreamMachine: ConnectionStreamMachine {}
