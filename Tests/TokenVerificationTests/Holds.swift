import TokenKitTesting

/// Holds the calls of a fake endpoint from ``hold()`` until ``release()``; calls after a release go straight on.
final class Holds: Sendable {
    private let gate = Locked<HoldGate?>(nil)

    /// Holds every call from now on.
    func hold() { gate.withLock { $0 = $0 ?? HoldGate() } }

    /// Lets the held calls (and later ones) go.
    func release() {
        gate.withLock { gate in
            defer { gate = nil }
            return gate
        }?.open()
    }

    /// A call's pass: waits while calls are held.
    func pass() async { await gate.withLock { $0 }?.wait() }
}
