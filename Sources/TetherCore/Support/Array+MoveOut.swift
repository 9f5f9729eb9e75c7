extension Array {
    /// The element at `index`, moved out with `placeholder` left in its place: a batch taken
    /// apart front to back without copying its elements. A copy retains every string and tree
    /// an element holds — which the decoding task made on the other core — and `reverse()`
    /// then `popLast()` copies each element once more while it swaps (bench/PROFILE.md, part
    /// ten).
    /// The placeholder should hold nothing counted (a case without a payload, or a number).
    @inlinable
    public mutating func moveOut(at index: Int, leaving placeholder: Element) -> Element {
        var taken = placeholder
        swap(&taken, &self[index])
        return taken
    }
}
