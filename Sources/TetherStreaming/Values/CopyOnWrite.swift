/// A value kept in one reference-counted box and copied on write. Copying a `CopyOnWrite` is one
/// retain whatever the value's size, and an array of them moves one word an element: what an
/// event pays as it goes from a mapper into its batch, the channel, the filter and the writer
/// (bench/PROFILE.md, "`Event` as a plain struct", for what the box is worth).
///
/// What keeps it safe: the box is written only through `value`'s `_modify`, which first gives
/// this holder a box of its own unless it is the only one (`isKnownUniquelyReferenced`). So no
/// box is ever written while another holder can read it — which is what makes sending it
/// between tasks safe when the value itself is `Sendable`, and what rules out overlapping
/// accesses to the box's field, so the run-time exclusivity check (a call into the runtime on
/// every read and write) is left out.
public struct CopyOnWrite<Value> {
    @usableFromInline
    final class Box {
        @exclusivity(unchecked) @usableFromInline var value: Value

        @usableFromInline
        init(_ value: Value) { self.value = value }
    }

    @usableFromInline var box: Box

    @inlinable
    public init(_ value: Value) { box = Box(value) }

    @inlinable
    public var value: Value {
        get { box.value }
        _modify {
            if !isKnownUniquelyReferenced(&box) { box = Box(box.value) }
            yield &box.value
        }
    }

    /// Whether both hold the same box: equal values without comparing them.
    @inlinable
    public func sharesStorage(with other: Self) -> Bool { box === other.box }
}

extension CopyOnWrite: @unchecked Sendable where Value: Sendable {}
