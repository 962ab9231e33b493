import AuthToken
public import Foundation

/// A ``DPoPReplayCache`` for one process: spent proofs in memory, each until its expiry, at most its capacity at a
/// time.
///
/// Replicas behind a load balancer need a shared cache (`PostgresDPoPReplayCache`): with one of these each, a
/// proof replayed to another replica is accepted there. When the cache is full of unexpired entries, a new proof
/// is refused (the cache throws ``Full``) rather than an entry forgotten early, so a replay is never let through.
public final class InMemoryDPoPReplayCache: DPoPReplayCache {
    /// The cache holds as many unexpired proofs as its capacity and cannot take another.
    public struct Full: Error, CustomStringConvertible {
        /// `InMemoryDPoPReplayCache.Full`.
        public var description: String { "InMemoryDPoPReplayCache.Full" }
    }

    private struct State {
        /// Expiry by `jkt.jti` (the thumbprint has no `.`, so the key is unambiguous).
        var expiries: [String: Date] = [:]
        /// Keys in insertion order, pruned from the front; `head` is the first live position.
        var order: [(key: String, expiry: Date)] = []
        var head = 0
    }

    /// The most unexpired proofs held at once.
    let capacity: Int
    private let state = LockedValue(State())

    /// An empty cache.
    ///
    /// - Parameter capacity: The most proofs held at once; 200,000 by default (over 3,000 proofs a second with a
    ///   60-second window).
    public init(capacity: Int = 200_000) {
        self.capacity = max(1, capacity)
    }

    /// How many proofs are held (expired ones until the next spend prunes them).
    package var count: Int { state.withLock { $0.expiries.count } }

    /// Spends the proof unless it is held already; prunes expired entries first.
    ///
    /// - Parameters:
    ///   - keyThumbprint: The proof key's thumbprint.
    ///   - jwtID: The proof's `jti`.
    ///   - expiry: How long to hold it.
    ///   - now: The current time.
    /// - Returns: `true` the first time, `false` for a replay.
    /// - Throws: ``Full`` when the cache is at its capacity of unexpired proofs.
    public func spend(keyThumbprint: String, jwtID: String, until expiry: Date, now: Date) throws -> Bool {
        let key = keyThumbprint + "." + jwtID
        return try state.withLock { (state: inout State) throws(Full) -> Bool in
            Self.prune(&state, now: now)
            if let held = state.expiries[key], held >= now { return false }
            guard state.expiries.count < capacity || state.expiries[key] != nil else { throw Full() }
            state.expiries[key] = expiry
            state.order.append((key, expiry))
            return true
        }
    }

    /// Drops the entries at the front whose expiry has passed, and compacts the order now and then.
    private static func prune(_ state: inout State, now: Date) {
        while state.head < state.order.count {
            let (key, expiry) = state.order[state.head]
            if expiry >= now {
                // Entries expire roughly in insertion order (within one proof window); a later one that expires
                // earlier waits for those before it, at most a window longer.
                break
            }
            if let held = state.expiries[key], held <= expiry { state.expiries.removeValue(forKey: key) }
            state.head += 1
        }
        if state.head > 1024, state.head * 2 > state.order.count {
            state.order.removeFirst(state.head)
            state.head = 0
        }
    }
}
