// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import AuthToken

/// Thrown by ``withDeadline(_:fence:afterClaim:sleep:_:)`` when the work did not finish in time.
struct DeadlineExceeded: Error {}

/// Thrown by ``withDeadline(_:fence:afterClaim:sleep:_:)`` when an attempt that claimed its commit got no answer
/// within the second bound: whether the commit took effect is not known (``CommitFence/claim`` tells how to find out).
struct CommitUnanswered: Error {}

/// Whether a write attempt's transaction may still commit: the attempt claims the commit just before `COMMIT` is
/// sent, or the caller that stops waiting withdraws the attempt, whichever comes first. A withdrawn attempt rolls
/// back when it gets that far (a query held in the database goes on after its deadline), so it never lands
/// afterwards. An attempt that claimed its commit is waited for within a second bound; when it fails or does not
/// answer in time, its outcome is unknown until the database is asked about its transaction.
final class CommitFence: Sendable {
    /// What the attempt committed, once it claimed its commit.
    enum Claim: Sendable, Equatable {
        /// The write, in the transaction with this ID (`txid_current()`): `txid_status` tells whether it landed.
        case transaction(Int64)
        /// Nothing: an earlier attempt's write is already stored (its answer was lost).
        case alreadyStored
    }

    private enum State {
        case open, committing(Claim), withdrawn
    }
    private let state = LockedValue(State.open)

    /// The attempt is about to send `COMMIT`; `false` when it was withdrawn and must roll back.
    func claimCommit(_ claim: Claim) -> Bool {
        state.withLock { state in
            if case .withdrawn = state { return false }
            state = .committing(claim)
            return true
        }
    }

    /// The caller stops waiting for the attempt; `false` when the attempt claimed its commit first.
    func withdraw() -> Bool {
        state.withLock { state in
            if case .committing = state { return false }
            state = .withdrawn
            return true
        }
    }

    /// What the attempt claimed to commit, if it did: after a failure, the outcome is then unknown.
    var claim: Claim? {
        state.withLock { state in
            if case .committing(let claim) = state { return claim }
            return nil
        }
    }
}

/// Thrown inside the transaction of a withdrawn attempt, so that it rolls back.
struct WithdrawnAttempt: Error {}

/// Runs `body` in a task of its own and returns its result, or throws ``DeadlineExceeded`` once `timeout` has
/// passed, without waiting for `body` to notice its cancellation (a query on a connection to a server that went
/// away may not notice for a long time). `nil` waits without limit.
///
/// With a `fence`, the deadline (or the caller's cancellation) first withdraws the attempt. When the attempt has
/// already claimed its commit, the caller waits for its answer for at most `afterClaim` more (`timeout` when `nil`)
/// and then throws ``CommitUnanswered``: a connection that died between the write and the commit's answer may not
/// be noticed for minutes.
func withDeadline<T: Sendable>(
    _ timeout: Duration?,
    fence: CommitFence? = nil,
    afterClaim: Duration? = nil,
    sleep: @escaping @Sendable (Duration) async throws -> Void,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    guard let timeout else { return try await body() }
    let outcome = OnceResult<T>()
    let work = Task { try await body() }
    let afterClaim = afterClaim ?? timeout
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            outcome.attach(continuation)
            let timer = Task {
                do { try await sleep(timeout) } catch { return }
                if let fence, !fence.withdraw() {
                    do { try await sleep(afterClaim) } catch { return }
                    outcome.resume(.failure(CommitUnanswered()))
                    return
                }
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
        if let fence, !fence.withdraw() {
            Task {
                try? await sleep(afterClaim)
                outcome.resume(.failure(CommitUnanswered()))
            }
            return
        }
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
