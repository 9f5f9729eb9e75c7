import Foundation

/// A benchmark flood's frame, serialized once by the simulator's own wire code with marker
/// strings where its varying fields go, and split at the markers. A flood of N frames is then N
/// concatenations of fixed bytes and short strings instead of N serializations, so the simulator
/// renders a whole 200,000-frame flood in a fraction of the time any client takes to read it.
///
/// Values filled in must already be valid inside a JSON string (ids, `tokenN `): they are copied
/// as they are.
struct FloodTemplate: Sendable {
    /// The fixed bytes: `pieces[0]`, value 0, `pieces[1]`, value 1, …
    private let pieces: [[UInt8]]
    /// Which value goes after each piece but the last.
    private let slots: [Int]

    /// The marker `render` must place where value `index` goes.
    static func marker(_ index: Int) -> String { "@@FLOOD_FIELD_\(index)@@" }

    /// `render` gets the markers for `fieldCount` values and returns the frame's bytes.
    init(fieldCount: Int, render: ([String]) -> Data) {
        let frame = [UInt8](render((0..<fieldCount).map(Self.marker)))
        var pieces: [[UInt8]] = []
        var slots: [Int] = []
        var start = 0
        var index = 0
        while index < frame.count {
            if frame[index] == UInt8(ascii: "@"),
               let (slot, length) = Self.marker(in: frame, at: index, fieldCount: fieldCount) {
                pieces.append(Array(frame[start..<index]))
                slots.append(slot)
                index += length
                start = index
            } else {
                index += 1
            }
        }
        pieces.append(Array(frame[start...]))
        self.pieces = pieces
        self.slots = slots
    }

    private static func marker(in frame: [UInt8], at index: Int, fieldCount: Int) -> (Int, Int)? {
        for slot in 0..<fieldCount {
            let marker = Array(Self.marker(slot).utf8)
            if frame.count - index >= marker.count, frame[index..<(index + marker.count)].elementsEqual(marker) {
                return (slot, marker.count)
            }
        }
        return nil
    }

    /// Appends one frame with `values` in its fields.
    func append(_ values: [String], to out: inout [UInt8]) {
        for (position, slot) in slots.enumerated() {
            out.append(contentsOf: pieces[position])
            out.append(contentsOf: values[slot].utf8)
        }
        out.append(contentsOf: pieces[pieces.count - 1])
    }
}

/// The two stream shapes benchmarks flood with (issue 14): every delta opens a part that never
/// completes (`newParts`: state for parts grows with the stream), or parts of
/// `longPartLength` deltas each (`longParts`: few parts, many deltas each).
public enum FloodShape: String, Sendable, CaseIterable {
    case longParts = "long-parts"
    case newParts = "new-parts"

    /// Deltas per part in `longParts`.
    public static let longPartLength = 1000

    /// Which part delta `index` (from 0) belongs to.
    public func part(ofDelta index: Int) -> Int {
        switch self {
        case .longParts: index / Self.longPartLength
        case .newParts: index
        }
    }

    /// Whether delta `index` is the first of its part.
    public func opensPart(_ index: Int) -> Bool {
        switch self {
        case .longParts: index % Self.longPartLength == 0
        case .newParts: true
        }
    }
}
