extension Duration {
    /// The duration in milliseconds, as stage timings and API processing times report it.
    public var milliseconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) * 1000 + Double(attoseconds) / 1e15
    }
}
