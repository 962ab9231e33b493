// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import AuthToken

/// Thrown by ``withDeadline(_:sleep:_:)`` when the work did not finish in time.
struct DeadlineExceeded: Error {}

/// Whether a write attempt's transaction may still commit: the attempt claims the commit just before `COMMIT` is
/// sent, or the caller that stops waiting withdraws the attempt, whichever comes first. A withdrawn attempt rolls
/// back when it gets that far (a query held in the database goes on after its deadline), so a write reported failed
/// never lands afterwards; the caller waits for the answer of an attempt that claimed its commit.
final class CommitFence: Sendable {
    private enum State {
        case open, committing, withdrawn
    }
    private let state = LockedValue(State.open)

    /// The attempt is about to send `COMMIT`; `false` when it was withdrawn and must roll back.
    func claimCommit() -> Bool {
        state.withLock { state in
            guard state != .withdrawn else { return false }
            state = .committing
            return true
        }
    }

    /// The caller stops waiting for the attempt; `false` when the attempt claimed its commit first.
    func withdraw() -> Bool {
        state.withLock { state in
            guard state != .committing else { return false }
            state = .withdrawn
            return true
        }
    }
}

/// Thrown inside the transaction of a withdrawn attempt, so that it rolls back.
struct WithdrawnAttempt: Error {}

/// Runs `body` in a task of its own and returns its result, or throws ``DeadlineExceeded`` once `timeout` has
/// passed, without waiting for `body` to notice its cancellation (a query on a connection to a server that went
/// away may not notice for a long time). `nil` waits without limit.
///
/// With a `fence`, the deadline (or the caller's cancellation) first withdraws the attempt; when the attempt has
/// already claimed its commit, the caller waits for its answer instead, so a failure is reported only for an attempt
/// that can no longer land.
func withDeadline<T: Sendable>(
    _ timeout: Duration?,
    fence: CommitFence? = nil,
    sleep: @escaping @Sendable (Duration) async throws -> Void,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    guard let timeout else { return try await body() }
    let outcome = OnceResult<T>()
    let work = Task { try await body() }
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            outcome.attach(continuation)
            let timer = Task {
                do { try await sleep(timeout) } catch { return }
                if let fence, !fence.withdraw() { return }
                work.cancel()
                outcome.resume(.failure(DeadlineExceeded()))
            }
            Task {
                let result = await work.result
                timer.cancel()
                outcome.resume(result)
            }
        }
    } onCancel: {
        if let fence, !fence.withdraw() { return }
        work.cancel()
        outcome.resume(.failure(CancellationError()))
    }
}

/// A continuation resumed once, by whichever of the work, the timer or cancellation comes first; a result that
/// comes before the continuation is attached is kept for it.
private final class OnceResult<T: Sendable>: Sendable {
    private enum State {
        case waiting(CheckedContinuation<T, any Error>?)
        case early(Result<T, any Error>)
        case done
    }
    private let state = LockedValue<State>(.waiting(nil))

    func attach(_ continuation: CheckedContinuation<T, any Error>) {
        let early: Result<T, any Error>? = state.withLock { state in
            switch state {
            case .waiting:
                state = .waiting(continuation)
                return nil
            case .early(let result):
                state = .done
                return result
            case .done:
                return nil
            }
        }
        if let early { continuation.resume(with: early) }
    }

    func resume(_ result: Result<T, any Error>) {
        let continuation: CheckedContinuation<T, any Error>? = state.withLock { state in
            switch state {
            case .waiting(let continuation?):
                state = .done
                return continuation
            case .waiting(nil):
                state = .early(result)
                return nil
            case .early, .done:
                return nil
            }
        }
        continuation?.resume(with: result)
    }
}
#endif
