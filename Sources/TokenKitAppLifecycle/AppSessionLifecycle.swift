import AuthToken
public import Persistence
public import TokenRefresh

/// What an app (or an extension) tells a ``AppSessionLifecycle`` about its life, and what the session does then.
///
/// Call its methods from the app's lifecycle notifications:
/// - at launch, ``restore()``: the session, or ``Availability/unavailable`` when the device has not been
///   unlocked since it started (a prewarmed or background launch). Unavailable is never "signed out".
/// - on `UIApplication.protectedDataDidBecomeAvailableNotification`, ``protectedDataDidBecomeAvailable()``: the
///   read that failed is made again.
/// - on returning to the foreground (`scenePhase == .active`), ``willEnterForeground()``: adopts what an
///   extension saved meanwhile, then refreshes if the token is due.
/// - in a `BGAppRefreshTask` handler, ``performBackgroundRefresh()``.
/// - for the whole life of the process, ``observeChanges(adopted:)``: adopts the pair another process saved as soon as
///   its ``SessionChangeNotifier`` says so.
///
/// It uses the client's public API only, and never signs the user out by itself.
public struct AppSessionLifecycle: Sendable {
    /// Whether the session could be read.
    public enum Availability: Sendable, Hashable {
        /// The store cannot be read now (the device is locked since it started, or a user-presence prompt was
        /// dismissed). The session is kept; try again when protected data becomes available.
        case unavailable
        /// The store was read: the client's state.
        case available(AuthState)
    }

    /// The client whose session this is.
    public let client: TokenRefreshClient
    private let store: any TokenStore
    private let notifier: (any SessionChangeNotifier)?

    /// Creates the lifecycle of `client`'s session.
    ///
    /// - Parameters:
    ///   - client: The client.
    ///   - store: The store the client uses (read to see what other processes saved).
    ///   - notifier: The notifications shared with the other processes, if any.
    public init(client: TokenRefreshClient, store: any TokenStore, notifier: (any SessionChangeNotifier)? = nil) {
        self.client = client
        self.store = store
        self.notifier = notifier
    }

    /// Restores the stored session at launch.
    ///
    /// - Returns: ``Availability/unavailable`` when the store cannot be read now, otherwise the client's state.
    public func restore() async -> Availability {
        let state = await client.restoreSession()
        // The client reads `unavailable` (or, while a load is still running, `loading`) when its store cannot be read,
        // and never reads that as signed out.
        return state == .loading || state == .unavailable ? .unavailable : .available(state)
    }

    /// Makes the read again now that protected data is available (after the first unlock).
    ///
    /// - Returns: As ``restore()``.
    public func protectedDataDidBecomeAvailable() async -> Availability {
        await restore()
    }

    /// On the return to the foreground: adopts a pair another process saved meanwhile, then gets a valid token
    /// (refreshing it if it is due), so the first request after the return does not wait for a 401.
    ///
    /// - Returns: As ``restore()``, after the refresh.
    @discardableResult
    public func willEnterForeground() async -> Availability {
        let availability = await restore()
        guard case .available(let state) = availability, state.hasSession else { return availability }
        _ = await storeDidChange()
        _ = try? await client.validToken()
        return .available(client.currentState)
    }

    /// The body of a background refresh (a `BGAppRefreshTask`): refreshes the token if it is due, so the app
    /// resumes with a fresh one. A locked device or a network failure keeps the session.
    ///
    /// - Returns: Whether the session holds a valid token afterwards; pass it to `setTaskCompleted(success:)`.
    public func performBackgroundRefresh() async -> Bool {
        guard case .available(let state) = await restore(), state.hasSession else { return false }
        _ = await storeDidChange()
        do {
            _ = try await client.validToken()
            return true
        } catch {
            return false
        }
    }

    /// Adopts the pair another process saved, if it differs from the one the client holds.
    ///
    /// The client adopts it the way it does before any refresh: under the store's lock, it re-reads the store and
    /// takes a newer pair instead of refreshing.
    ///
    /// - Returns: Whether the client now holds the stored pair after holding another.
    @discardableResult
    public func storeDidChange() async -> Bool {
        guard case .found(let stored) = await store.load(account: client.configuration.account) else { return false }
        guard let held = client.currentToken else {
            _ = await client.restoreSession()
            return client.currentToken == stored.token
        }
        guard held.accessToken != stored.token.accessToken || held.refreshToken != stored.token.refreshToken else {
            return false
        }
        // "The token held is stale": the client re-reads the store under its lock and adopts the newer pair there.
        _ = try? await client.refreshToken(afterRejectionOf: held.accessToken)
        return client.currentToken?.accessToken == stored.token.accessToken
    }

    /// Adopts what other processes save, for as long as the calling task runs (start it in a task at launch).
    ///
    /// - Parameter adopted: Called with the adopted token's fingerprint after each adoption.
    public func observeChanges(adopted: @Sendable (String) -> Void = { _ in }) async {
        guard let notifier else { return }
        for await _ in notifier.changes() {
            if await storeDidChange(), let token = client.currentToken { adopted(token.fingerprint) }
        }
    }
}
