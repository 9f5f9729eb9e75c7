import Testing
@testable import TetherCore

@Suite struct EventChannelTests {
    /// A producer that finds the channel full races a consumer that drains it. Every event must
    /// arrive, in order, and neither side may end up waiting for the other: a producer used to
    /// park after the consumer had emptied the channel and gone to wait, and `tether events`
    /// hung under a flood. The race needs many hand-offs through a small channel to show.
    @Test func aFullChannelNeverStrandsTheProducerAndTheConsumer() async throws {
        let total = 300_000
        let stream = EventChannel.stream(capacity: 1) { channel in
            for index in 0..<total {
                try await channel.send(.sessionStatus("s\(index)", .busy))
            }
        }
        let outcome = try await withThrowingTaskGroup(of: (count: Int, inOrder: Bool)?.self) { group in
            group.addTask {
                var count = 0
                var inOrder = true
                for try await event in stream {
                    if event.session != "s\(count)" { inOrder = false }
                    count += 1
                }
                return (count, inOrder)
            }
            group.addTask {
                try await Task.sleep(for: .seconds(60))
                return nil  // stuck: the consumer is cancelled, which ends its stream
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        #expect(outcome?.count == total)
        #expect(outcome?.inOrder == true)
    }
}
