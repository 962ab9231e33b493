import AuthToken

/// One shared refresh and the callers waiting for it.
///
/// Waiters park as continuations in arrival order and are resumed oldest-first when the refresh finishes.
/// Joining takes two short lock sections (reserve a slot, then park in it), cancellation and completion one
/// each, all outside the client actor, so a resumed waiter never queues on the actor again: 20,000 waiters
/// cost about twice what 10,000 do.
///
/// The continuations are unsafe (no per-waiter canary allocation); exactly-once resumption is guaranteed by
/// the slot state machine under the lock: a slot is taken out of `.waiting` before its continuation is resumed,
/// either by ``finish(_:)`` (which empties all slots) or by the cancellation handler.
final class RefreshFlight: Sendable {
    private enum Slot {
        case reserved
        case waiting(UnsafeContinuation<AuthToken, any Error>)
        case cancelled
    }

    private struct State {
        var slots: [Slot] = []
        var result: Result<AuthToken, TokenRefreshError>?
        var waiting = 0
    }

    // LockedValue, not Mutex: ThreadSanitizer on Linux does not follow Mutex's futex and reported this state as
    // racing.
    private let state = LockedValue(State())

    /// Creates a flight with no waiters.
    init() {}

    /// The number of callers waiting now.
    var waiterCount: Int { state.withLock { $0.waiting } }

    /// Waits for the result. A cancelled caller leaves with ``TokenRefreshError/cancelled``; the refresh goes on.
    func wait() async throws -> AuthToken {
        let reserved: Int? = state.withLock { state in
            guard state.result == nil else { return nil }
            state.slots.append(.reserved)
            state.waiting += 1
            return state.slots.count - 1
        }
        guard let index = reserved else { return try finishedResult() }
        return try await withTaskCancellationHandler {
            try await withUnsafeThrowingContinuation { continuation in
                let immediate: Result<AuthToken, TokenRefreshError>? = state.withLock { state in
                    if let result = state.result { return result }
                    guard case .reserved = state.slots[index] else { return .failure(.cancelled) }
                    state.slots[index] = .waiting(continuation)
                    return nil
                }
                if let immediate { continuation.resume(with: immediate) }
            }
        } onCancel: {
            let continuation = state.withLock { state -> UnsafeContinuation<AuthToken, any Error>? in
                guard state.result == nil else { return nil }
                switch state.slots[index] {
                case .waiting(let continuation):
                    state.slots[index] = .cancelled
                    state.waiting -= 1
                    return continuation
                case .reserved:
                    state.slots[index] = .cancelled
                    state.waiting -= 1
                    return nil
                case .cancelled:
                    return nil
                }
            }
            continuation?.resume(throwing: TokenRefreshError.cancelled)
        }
    }

    /// The result of a flight that has finished.
    private func finishedResult() throws -> AuthToken {
        try state.withLock { $0.result ?? .failure(.cancelled) }.get()
    }

    /// Resolves every waiter with `result`, oldest first. Only the first call has an effect.
    ///
    /// - Returns: The arrival indices of the waiters resumed, in the order they were resumed.
    @discardableResult
    func finish(_ result: Result<AuthToken, TokenRefreshError>) -> [Int] {
        let slots: [Slot] = state.withLock { state in
            guard state.result == nil else { return [] }
            state.result = result
            state.waiting = 0
            defer { state.slots = [] }
            return state.slots
        }
        var resumed: [Int] = []
        resumed.reserveCapacity(slots.count)
        for (index, slot) in slots.enumerated() {
            if case .waiting(let continuation) = slot {
                continuation.resume(with: result)
                resumed.append(index)
            }
        }
        return resumed
    }
}

extension TokenRefreshClient.Next {
    /// The token: at once, or when the shared refresh answers.
    func token() async throws -> AuthToken {
        switch self {
        case .token(let token): return token
        case .wait(let flight): return try await flight.wait()
        }
    }

    /// The token, or what `fallback` makes of the shared refresh's failure (a proactive refresh that failed while the
    /// token is still valid answers with that token).
    nonisolated(nonsending) func token(
        orAfterFailure fallback: (any Error) throws -> AuthToken
    ) async throws -> AuthToken {
        switch self {
        case .token(let token): return token
        case .wait(let flight):
            do {
                return try await flight.wait()
            } catch {
                return try fallback(error)
            }
        }
    }
}

extension RefreshFlight: Equatable {
    /// Whether both are the same flight (a flight is equal only to itself).
    static func == (lhs: RefreshFlight, rhs: RefreshFlight) -> Bool { lhs === rhs }
}
