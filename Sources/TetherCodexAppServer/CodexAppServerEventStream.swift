import Logging
import TetherAdapterSupport
import TetherCodexProtocol
import TetherCore
import TetherNet
import TetherStreaming

/// The live side of the `codex` backend, reduced to I/O: a subscription to the shared
/// connection (and the reconnect schedule), the reads a resync needs, and the execution of what
/// ``CodexAppServerStreamMachine`` decides. One task; what is queued when it looks goes out as
/// one batch.
struct CodexAppServerEventStream: Sendable {
    let backend: CodexAppServerBackend
    let request: EventsRequest
    /// `send --follow`: the prompt to send once subscribed and resynced.
    let sendOnReady: SendRequest?

    private var configuration: CodexAppServerBackend.Configuration { backend.configuration }
    private var logger: Logger { backend.logger }

    func run() -> EventStream {
        EventChannel.stream { channel in try await pump(channel) }
    }

    private func pump(_ output: EventChannel) async throws {
        var machine = CodexAppServerStreamMachine(request: request, configuration: .init(
            target: request.session, endpoint: configuration.endpoint, hasPrompt: sendOnReady != nil,
            newProcessPerConnection: configuration.isStdio))
        let outbox = EventOutbox(channel: output)
        guard request.follow || sendOnReady != nil else {
            // What is current, then stop.
            let subscription = try await backend.hub.subscribe()
            defer { backend.hub.unsubscribe(subscription.id) }
            try await execute([.resync], &machine, subscription.connection.client, outbox)
            try await outbox.flush()
            return
        }
        let loop = ReconnectLoop(policy: configuration.reconnect, service: "codex app-server", endpoint: configuration.endpoint,
                                 profile: configuration.profile)
        try await loop.run(&machine, outbox: outbox, closed: "the app-server closed the connection", reconnecting: { reason, attempt in
            logger.info("codex app-server stream lost; reconnecting", metadata: ["reason": "\(reason)", "attempt": "\(attempt)"])
        }, execute: { actions, machine in
            try await execute(actions, &machine, nil, outbox)
        }, open: { try await backend.hub.subscribe() }, close: { backend.hub.unsubscribe($0.id) }, live: { subscription, machine in
            try await live(subscription.connection.client, subscription.inbox, &machine, outbox)
        })
    }

    /// One connection's life: connected (and so resynced, and maybe the prompt sent), then
    /// messages until it ends, through the kernel's pump (the connection's reader decoded them
    /// ahead, ``CodexAppServerRPC``).
    private func live(_ client: CodexAppServerClient, _ inbox: CodexAppServerInbox, _ machine: inout CodexAppServerStreamMachine,
                      _ outbox: EventOutbox) async throws {
        try await execute(machine.connected(at: Event.now()), &machine, client, outbox)
        try await outbox.flush()
        var received = Event.now()  // what came together
        var lost = 0  // dropped after the batch: the machine resyncs once it has the batch
        _ = try await pumpStream(batches: {
            guard case .batch(let messages, let dropped) = try await inbox.next(timeout: nil) else { return nil }
            received = Event.now()
            lost = dropped
            return messages
        }, leaving: CodexAppServerMessage.whole(.null), isDone: { machine.isDone }, feed: { message in
            try await execute(machine.receive(message, at: received), &machine, client, outbox)
        }, endOfBatch: {
            if lost > 0, !machine.isDone { try await execute(machine.lost(count: lost), &machine, client, outbox) }
            try await outbox.flush()
        })
        try await outbox.flush()
    }

    private func execute(_ actions: [CodexAppServerStreamMachine.Action], _ machine: inout CodexAppServerStreamMachine,
                         _ client: CodexAppServerClient?, _ outbox: EventOutbox) async throws {
        for action in actions {
            switch action {
            case .emit(let events):
                outbox.add(events.map(backend.answers.filledIn))
            case .finish:
                return
            case .resync:
                guard let client else { continue }
                try await outbox.flush()
                var active: [String] = []
                if machine.listsActiveThreads { active = try await backend.activeThreads(client) }
                var threads: [JSONValue] = []
                var targetHasNoRollout = false
                for thread in machine.threadsToRead(active: active) {
                    do {
                        threads.append(try await backend.resume(client, thread: thread))
                    } catch let error as TetherError where error.code == .notFound && error.message.contains("no rollout found") {
                        // A thread without a first turn cannot be resumed (nor subscribed to)
                        // until a turn makes its rollout: read as idle and empty, resumed again
                        // once the prompt has started that turn.
                        if thread == machine.target { targetHasNoRollout = true }
                    } catch let error as TetherError where error.code == .notFound && thread != machine.target {
                        logger.info("a thread went away while Tether was disconnected", metadata: ["thread": "\(thread)", "error": "\(error.message)"])
                    }
                }
                try await execute(machine.resynced(threads, targetHasNoRollout: targetHasNoRollout, at: Event.now()),
                                  &machine, client, outbox)
            case .resume(let ids):
                guard let client else { continue }
                try await outbox.flush()
                var threads: [JSONValue] = []
                for thread in ids {
                    do {
                        threads.append(try await backend.resume(client, thread: thread))
                    } catch let error as TetherError where error.code == .notFound {
                        machine.resumeFailed(thread)
                        logger.debug("cannot resume a thread yet", metadata: ["thread": "\(thread)", "error": "\(error.message)"])
                    }
                }
                try await execute(machine.resynced(threads, at: Event.now()), &machine, client, outbox)
            case .postPrompt:
                guard let prompt = sendOnReady, let client else { continue }
                try await outbox.flush()
                machine.postingPrompt()
                let receipt = try await backend.startTurn(prompt, using: client)
                try await execute(machine.promptSent(turn: receipt.turn, at: Event.now()), &machine, client, outbox)
            case .noteDropped(let count):
                logger.warning("Tether fell behind and dropped app-server messages; re-reading the active threads",
                               metadata: ["dropped": "\(count)"])
            }
        }
    }
}


extension CodexAppServerStreamMachine: ConnectionStreamMachine {}
