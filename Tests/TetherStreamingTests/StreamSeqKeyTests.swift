import Testing
import TetherStreaming

/// `StreamSeqKey` answers `Set` and `Dictionary` without `Hasher`: equal keys must hash alike in
/// every table, and keys that differ in any field must stay apart even when their words collide.
@Suite struct StreamSeqKeyTests {
    @Test func equalKeysHashAlikeWhicheverWayTheyAreHashed() {
        let a = StreamSeqKey(stream: .init("job_1"), seq: 7, kind: "item.started")
        let b = StreamSeqKey(stream: .init(String("job_") + "1"), seq: 7, kind: "item." + "started")
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        var first = Hasher()
        first.combine(a)
        var second = Hasher()
        second.combine(b)
        #expect(first.finalize() == second.finalize())
        #expect(Set([a, b]).count == 1)
    }

    /// Seq, stream and kind each tell keys apart; a kind of the same length (the word only sees
    /// its length) collides in the hash but not in the set.
    @Test func everyFieldTellsKeysApart() {
        let job = StreamSeqKey.Stream("job_1")
        let keys: Set = [
            StreamSeqKey(stream: job, seq: 1, kind: "item.agentMessage.delta"),
            StreamSeqKey(stream: job, seq: 2, kind: "item.agentMessage.delta"),
            StreamSeqKey(stream: .init("job_2"), seq: 1, kind: "item.agentMessage.delta"),
            StreamSeqKey(stream: job, seq: 1, kind: "item.completed"),
            StreamSeqKey(stream: job, seq: 1, kind: "item.agentMessage.DELTA"),
        ]
        #expect(keys.count == 5)
        #expect(keys.contains(StreamSeqKey(stream: .init("job_1"), seq: 1, kind: "item.agentMessage.DELTA")))
        #expect(!keys.contains(StreamSeqKey(stream: job, seq: 3, kind: "item.agentMessage.delta")))
    }

    @Test func aStreamIsAKeyOfItsOwn() {
        var lastSeqs: [StreamSeqKey.Stream: Int64] = [.init("job_1"): 4, .init("job_2"): 9]
        lastSeqs[.init("job_1")] = 5
        #expect(lastSeqs.count == 2 && lastSeqs[.init("job_1")] == 5 && lastSeqs[.init("job_3")] == nil)
    }
}
