import AuthToken
import Foundation

extension TokenRefreshClient {
    /// What the client's lock-free readers see: ``TokenRefreshClient/validToken()``'s fast path, ``currentToken``,
    /// ``isOfflineNow``, the waiter count and the session states. Built by ``SessionMachine/snapshot()``.
    struct Snapshot: Sendable {
        var token: AuthToken?
        var state: AuthState = .loading
        var needsActor = true
        /// When ``token`` becomes due for a proactive refresh (`willExpireSoon`), precomputed.
        var refreshDue = Date.distantPast
        var isOffline = false
        var flight: RefreshFlight?
        /// The profile the provider or the app supplied for the session's user, boxed: most sessions have none, and
        /// an `AuthUser?` in place made every client 104 bytes larger.
        private var profileBox: ProfileBox?

        /// The profile the provider or the app supplied for the session's user.
        var profile: AuthUser? {
            get { profileBox?.profile }
            set { profileBox = newValue.map(ProfileBox.init) }
        }

        /// The refresh in flight that a caller may join without the actor, if any.
        var joinableFlight: RefreshFlight? { needsActor || token == nil ? nil : flight }

        /// How many callers wait for the refresh in flight.
        var waiterCount: Int { flight?.waiterCount ?? 0 }

        /// The token's redacted description, for `dump`.
        var tokenDescription: String { token.map { "\($0)" } ?? "none" }

        /// A profile, held by reference.
        private final class ProfileBox: Sendable {
            let profile: AuthUser
            init(_ profile: AuthUser) { self.profile = profile }
        }
    }

    /// The ``Snapshot``, behind the lock of ``TokenRefreshClient/subscribers`` (a lock of its own cost every client
    /// 80 bytes more). ``TokenRefreshClient/validToken()``'s fast path takes it.
    struct SnapshotLock: Sendable {
        let subscribers: LockedValue<Subscribers>

        /// Runs `body` with the snapshot, holding the lock.
        @inline(__always) func withLock<Result>(_ body: (inout Snapshot) -> Result) -> Result {
            subscribers.withLock { body(&$0.snapshot) }
        }
    }
}
