import AuthToken
import Foundation
import Persistence

/// Ending a session inside the client (a rejection, a provider that signed out, an expiry nothing can renew, a
/// removal elsewhere), as an event that returns one action, and the end of the store's removal as another.
extension SessionMachine {
    /// What the actor does to end a session (``endingSession(reason:error:)``, ``signingOut(reason:)``): fail the
    /// callers' flight, remove the session from the store, and say so.
    struct EndSessionAction: Sendable {
        /// The flight to fail with ``failure`` (its callers asked for the ended session's token).
        let flight: RefreshFlight?
        let failure: TokenRefreshError
        /// The store's removal to make, or `nil` when the session was removed elsewhere.
        let removal: Removal?
        /// The event to publish (once the removal is over, except for a sign-out, which says so at once).
        let event: AuthEvent
        /// The session that ended, if one was held.
        let ended: Session?
        /// The epoch after the end, under which the removal runs.
        let epoch: UInt64
    }

    /// A removal of an ended session from the store.
    struct Removal: Sendable {
        /// Conditional on the generation stored, so a newer session saved meanwhile is never removed.
        let condition: WriteCondition
        /// The epoch the session ended in.
        let epoch: UInt64
        /// The ended session (its identity and generation), for a removal made again after an older write lands.
        let endedSession: WriteCondition?
    }

    /// The session ends with `reason`; the callers in flight fail with `error` (``TokenRefreshError/signedOut`` when
    /// `nil`). The one reset of an ended session (``endSession()``) runs here.
    mutating func endingSession(reason: AuthEvent.SignOutReason, error: TokenRefreshError?) -> EndSessionAction {
        let condition: WriteCondition = storedGeneration.map { .session(storedSessionID, generation: $0) } ?? .always
        let (ended, flight) = endSession()
        let removal =
            reason == .removedElsewhere
            ? nil
            : Removal(
                condition: condition, epoch: epoch,
                endedSession: ended.map { .session($0.sessionID, generation: $0.generation) })
        return EndSessionAction(
            flight: flight, failure: error ?? .signedOut, removal: removal,
            event: .signedOut(reason: reason, userID: ended?.userID, error: error), ended: ended, epoch: epoch)
    }

    /// As ``endingSession(reason:error:)`` when a session is held; otherwise the state just reads signed out and
    /// nothing is to be done (`nil`).
    mutating func endingSessionIfHeld(reason: AuthEvent.SignOutReason, error: TokenRefreshError) -> EndSessionAction? {
        guard session == nil && !authState.hasSession else { return endingSession(reason: reason, error: error) }
        if authState != .signedOut { authState = .signedOut }
        return nil
    }

    // MARK: - The one reset of an ended session

    /// Ends the session: the one reset for an ended session. Returns the session that ended and the flight to
    /// resolve.
    private mutating func endSession() -> (ended: Session?, flight: RefreshFlight?) {
        let ended = session
        epoch &+= 1
        state = state.entering(nil)
        lineage.reset()
        profile = nil
        isOffline = false
        let flight = self.flight?.flight
        self.flight = nil
        authState = .signedOut
        return (ended, flight)
    }

    // MARK: - Signing out

    /// The app signs out with `reason`: the one reset of an ended session (``endSession()``). Its removal waits for
    /// every older write (``signOutWriteTurn(epoch:)``).
    mutating func signingOut(reason: AuthEvent.SignOutReason = .userAction) -> EndSessionAction {
        let (ended, flight) = endSession()
        return EndSessionAction(
            flight: flight, failure: .signedOut, removal: Removal(condition: .always, epoch: epoch, endedSession: nil),
            event: .signedOut(reason: reason, userID: ended?.userID), ended: ended, epoch: epoch)
    }

    // MARK: - Another audience's sign-out

    /// Another audience's client removed the session (a sign-out, a revocation): it ends here too, without touching
    /// the store again (``endingSessionIfHeld(reason:error:)`` with ``AuthEvent/SignOutReason/removedElsewhere``). A
    /// store never read reads as signed out from now on, so a read started before (which may have found the removed
    /// session) is dropped.
    mutating func audienceSessionRemoved(now: Date) -> EndSessionAction? {
        if !loaded { _ = storeRead(atLoad: .absent, now: now) }
        return endingSessionIfHeld(reason: .removedElsewhere, error: .signedOut)
    }

    // MARK: - A request refused after a refresh

    /// What the actor does when the server refused a request's access token after a refresh made for that request.
    enum RejectedAfterRefreshAction: Sendable {
        /// Publish this event (``AuthEvent/Kind/unauthorizedAfterRefresh``); the session is kept.
        case publish(AuthEvent)
        /// Publish this event, then end the session with `reason`.
        case publishThenEnd(AuthEvent, reason: AuthEvent.SignOutReason)
    }

    /// The server refused `accessToken` after a refresh made for the request (``TokenRefreshClient/sessionRejected(afterRefreshOf:endSession:)``):
    /// say so, and end the session when the app asks for it (`endsSession`) and the token is still the session's (a
    /// refusal of an older or another session's token ends nothing).
    func rejectedAfterRefresh(of accessToken: String, endsSession: Bool) -> RejectedAfterRefreshAction {
        let event = AuthEvent.unauthorizedAfterRefresh(
            userID: session?.userID, tokenFingerprint: AuthToken.fingerprint(accessToken))
        guard endsSession, session?.token.accessToken == accessToken else { return .publish(event) }
        return .publishThenEnd(event, reason: .unauthorized)
    }
}
