import AuthToken
import Persistence

extension SessionMachine {
    /// What the actor does after an event of the session (a load, a read made for another writer, a sign-in's save, a
    /// pending pair's write, the turn of a write): one action in three parts, as async-http-client's pool builds its
    /// action from a request part and a connection part. The actor carries the parts out in one order: a refresh
    /// made void is failed, the store step is taken, the events are published, and then the call answers.
    struct Action: Sendable, Equatable {
        /// What is done with the store.
        var store: StoreStep = .none
        /// What the callers get.
        var callers: Callers = .goOn
        /// The events to publish, in order.
        var events: [AuthEvent] = []
    }

    /// The store part of an ``Action``.
    enum StoreStep: Sendable, Equatable {
        /// Nothing.
        case none
        /// Read the store (it never was), hand the answer to ``storeRead(atLoad:now:)``, and carry that out.
        case readAtLoad
        /// Read the store (it never was) before a sign-in or sign-out, and hand the answer to
        /// ``storeReadBeforeSessionChange(_:)``.
        case readBeforeSessionChange
        /// A write of the session of `epoch` met a newer pair: read it, and hand it to ``conflictRead(_:epoch:now:elapsed:)``.
        case readAfterConflict(epoch: UInt64)
        /// Remove the stored pair under this condition, best effort (its refresh token was rejected before).
        case discard(WriteCondition)
        /// Save this pair above the generation stored (a sign-in: whatever is stored is replaced).
        case saveAboveStored(StoredSession)
        /// Save this pair under this condition.
        case save(StoredSession, WriteCondition)
        /// Remove the stored session under this condition.
        case remove(WriteCondition)
        /// Remove the session that ended here, at once (under the store's lock, it cannot wait for older writes; one
        /// that lands after it has the removal made again), then hand its end to
        /// ``removalEnded(_:_:overtaken:elapsed:)``.
        case removeEnded(Removal)
    }

    /// The callers' part of an ``Action``.
    enum Callers: Sendable, Equatable {
        /// The call goes on.
        case goOn
        /// The call fails with this error, once the rest is carried out.
        case fail(TokenRefreshError)
        /// The refresh in flight is void (its callers asked for a session that ended here): forget its task and fail
        /// them with this error; the call goes on.
        case failFlight(RefreshFlight?, TokenRefreshError)
        /// The refresh `flight` is over: answer its callers with the result, and forget its task when `forgetTask` (it
        /// was the current flight; a newer one, or none, may be current now).
        case finish(RefreshFlight, Result<AuthToken, TokenRefreshError>, forgetTask: Bool)
        /// The refresh failed transiently with retries left: its callers wait while it waits `after` with the store's
        /// lock released, then takes the lock again for attempt `retry`.
        case retry(after: Duration, retry: Int)
    }
}
