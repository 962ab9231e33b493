import AuthToken
import Foundation
import Persistence

/// Ending a session inside the client (a rejection, a provider that signed out, an expiry nothing can renew, a
/// removal elsewhere), as an event that returns one action, and the end of the store's removal as another.
extension SessionMachine {
    /// A removal of an ended session from the store.
    struct Removal: Sendable, Equatable {
        /// Conditional on the generation stored, so a newer session saved meanwhile is never removed.
        let condition: WriteCondition
        /// The epoch the session ended in.
        let epoch: UInt64
        /// The ended session (its identity and generation), for a removal made again after an older write lands.
        let endedSession: WriteCondition?
    }

    /// The session ends with `reason`; the callers in flight fail with `error` (``TokenRefreshError/signedOut`` when
    /// `nil`). The one reset of an ended session (``endSession()``) runs here. The store's removal is conditional on
    /// the generation stored (none when it was removed elsewhere), and the end is published once it is over.
    mutating func endingSession(reason: AuthEvent.SignOutReason, error: TokenRefreshError?) -> Action {
        let condition = storedCondition(otherwise: .always)
        let (ended, flight) = endSession()
        let removal = Removal(
            condition: condition, epoch: epoch,
            endedSession: ended.map { .session($0.sessionID, generation: $0.generation) })
        return Action(
            store: reason == .removedElsewhere ? .none : .removeEnded(removal),
            callers: .failFlight(flight, error ?? .signedOut),
            events: [.signedOut(reason: reason, userID: ended?.userID, error: error)])
    }

    /// As ``endingSession(reason:error:)`` when a session is held; otherwise the state just reads signed out and
    /// nothing is to be done.
    mutating func endingSessionIfHeld(reason: AuthEvent.SignOutReason, error: TokenRefreshError) -> Action {
        guard session == nil && !authState.hasSession else { return endingSession(reason: reason, error: error) }
        authState = .signedOut  // already signed out: the same state, published again (subscribers get no repeat)
        return Action()
    }

    // MARK: - The one reset of an ended session

    /// Ends the session: the one reset for an ended session. Returns the session that ended and the flight to
    /// resolve.
    private mutating func endSession() -> (ended: Session?, flight: RefreshFlight?) {
        let ended = session
        epoch &+= 1
        state = state.enteringNoSession()
        lineage.reset()
        profile = nil
        isOffline = false
        let flight = self.flight?.flight
        self.flight = nil
        authState = .signedOut
        return (ended, flight)
    }

    // MARK: - Signing out

    /// The app signs out with `reason`: the one reset of an ended session (``endSession()``), said at once. Its removal
    /// waits for every older write (``signOutWriteTurn(epoch:)``).
    mutating func signingOut(reason: AuthEvent.SignOutReason = .userAction) -> Action {
        let (ended, flight) = endSession()
        return Action(
            callers: .failFlight(flight, .signedOut), events: [.signedOut(reason: reason, userID: ended?.userID)])
    }

    // MARK: - Another audience's sign-out

    /// Another audience's client removed the session (a sign-out, a revocation): it ends here too, without touching
    /// the store again (``endingSessionIfHeld(reason:error:)`` with ``AuthEvent/SignOutReason/removedElsewhere``). A
    /// store never read reads as signed out from now on, so a read started before (which may have found the removed
    /// session) is dropped (``storeRead(atLoad:now:)`` changes nothing once loaded).
    mutating func audienceSessionRemoved(now: Date) -> Action {
        _ = storeRead(atLoad: .absent, now: now)
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
