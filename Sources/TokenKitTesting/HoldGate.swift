/// A point where a test holds tasks until it lets them go: each ``wait()`` is an arrival that waits while the gate
/// is closed, and ``open()`` lets every waiting and later arrival through.
///
/// Put `await gate.wait()` inside a transport, strategy or store closure to hold a request at an exact instant; wait
/// for it to get there with ``waitForArrivals(_:)``, act, then ``open()``. Waiting ignores cancellation, as a
/// server answers whether or not anyone still listens.
public final class HoldGate: Sendable {
    private struct State {
        var isOpen = false
        var arrivals = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Locked(State())
    private let opensAt: Int

    /// Creates a closed gate.
    ///
    /// - Parameter arrivals: The gate opens by itself when this many arrivals have reached it (a barrier for
    ///   that many tasks); by default only ``open()`` opens it.
    public init(openingAt arrivals: Int = .max) {
        opensAt = arrivals
    }

    /// How many calls of ``wait()`` have reached the gate.
    public var arrivals: Int { state.withLock { $0.arrivals } }

    /// Arrives at the gate and, while it is closed, waits until it opens.
    public func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (goesOn, resumed) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                state.arrivals += 1
                var resumed = Self.takeWatchers(&state)
                if !state.isOpen && state.arrivals >= opensAt {
                    state.isOpen = true
                    resumed += state.waiters
                    state.waiters = []
                }
                if state.isOpen { return (true, resumed) }
                state.waiters.append(continuation)
                return (false, resumed)
            }
            for waiter in resumed { waiter.resume() }
            if goesOn { continuation.resume() }
        }
    }

    /// Opens the gate: every waiting arrival goes on, and later ones do not wait. Opening twice is harmless.
    public func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.isOpen = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once `count` arrivals have reached the gate (at once if they have).
    public func waitForArrivals(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let reached = state.withLock { state -> Bool in
                if state.arrivals >= count { return true }
                state.watchers.append((count, continuation))
                return false
            }
            if reached { continuation.resume() }
        }
    }

    private static func takeWatchers(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        let arrivals = state.arrivals
        let reached = state.watchers.filter { $0.count <= arrivals }.map(\.continuation)
        state.watchers.removeAll { $0.count <= arrivals }
        return reached
    }
}
