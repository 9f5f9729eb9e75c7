extension Duration {
    /// Seconds as a number (`1.25`).
    public var inSeconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// For messages a person reads: `1.4 s`.
    public var secondsText: String {
        let tenths = (inSeconds * 10).rounded() / 10
        return "\(tenths) s"
    }
}
