import Testing
import TetherCore

/// Taking a batch apart front to back: each element moved out, not copied.
@Suite struct ArrayMoveOutTests {
    final class Payload {
        let value: Int
        init(_ value: Int) { self.value = value }
    }

    @Test func eachElementLeavesItsPlaceAndIsHeldOnlyByTheTaker() {
        var batch: [Payload?] = (0..<4).map { Payload($0) }
        for index in batch.indices {
            var taken = batch.moveOut(at: index, leaving: nil)
            #expect(taken?.value == index)
            #expect(batch[index] == nil)
            // A copy would still be held by the array too.
            #expect(isKnownUniquelyReferenced(&taken!))
        }
        #expect(batch.allSatisfy { $0 == nil })
    }

    @Test func aSharedArrayIsCopiedOnceAndTheOtherKeepsItsElements() {
        var batch = [1, 2, 3]
        let other = batch
        #expect(batch.moveOut(at: 1, leaving: 0) == 2)
        #expect(batch == [1, 0, 3] && other == [1, 2, 3])
    }
}
