import Persistence

/// Ending a session inside the client (a rejection, a provider that signed out, an expiry nothing can renew, a
/// removal elsewhere), as an event that returns one action, and the end of the store's removal as another.
extension SessionMachine {
    /// What the actor does to end a session (``endingSession(reason:error:)``).
    struct EndSessionAction: Sendable {
        /// The flight to fail with ``failure`` (its callers asked for the ended session's token).
        let flight: RefreshFlight?
        let failure: TokenRefreshError
        /// The store's removal to make, or `nil` when the session was removed elsewhere.
        let removal: Removal?
        /// The event to publish once the removal is over.
        let event: AuthEvent
    }

    /// A removal of an ended session from the store.
    struct Removal: Sendable {
        /// Conditional on the generation stored, so a newer session saved meanwhile is never removed.
        let condition: WriteCondition
        /// The epoch the session ended in.
        let epoch: UInt64
        /// The ended session's generation, for a removal made again after an older write lands.
        let endedGeneration: UInt64?
    }

    /// The session ends with `reason`; the callers in flight fail with `error` (``TokenRefreshError/signedOut`` when
    /// `nil`). The one reset of an ended session (``endSession()``) runs here.
    mutating func endingSession(reason: AuthEvent.SignOutReason, error: TokenRefreshError?) -> EndSessionAction {
        let condition: WriteCondition = storedGeneration.map { .generation($0) } ?? .always
        let (ended, flight) = endSession()
        let removal =
            reason == .removedElsewhere
            ? nil : Removal(condition: condition, epoch: epoch, endedGeneration: ended?.generation)
        return EndSessionAction(
            flight: flight, failure: error ?? .signedOut, removal: removal,
            event: .signedOut(reason: reason, userID: ended?.userID, error: error))
    }

    /// As ``endingSession(reason:error:)`` when a session is held; otherwise the state just reads signed out and
    /// nothing is to be done (`nil`).
    mutating func endingSessionIfHeld(reason: AuthEvent.SignOutReason, error: TokenRefreshError) -> EndSessionAction? {
        guard session == nil && !authState.hasSession else { return endingSession(reason: reason, error: error) }
        if authState != .signedOut { authState = .signedOut }
        return nil
    }
}
