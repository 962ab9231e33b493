import AuthToken

/// The machine's one stored state, and what is read from it.
extension SessionMachine {
    /// Where the session stands: the store unread, no session, or a session; each with its ``Context`` (the refresh in
    /// flight, the offline flag, the profile). The published ``AuthState``
    /// (``authState``), the offline flag and the session are computed from it, never kept in step by hand.
    enum State: Sendable {
        /// The store has not been read yet (shown `loading`).
        case unloaded(Context)
        /// There is no session (shown `signedOut`).
        case signedOut(Context)
        /// There is one (shown `signedIn`, or `expired` while refreshes fail).
        case active(Session, Context)
    }

    /// What every ``State`` carries besides its session.
    struct Context: Sendable {
        /// What the app is shown where the state's case alone does not say it.
        var shown: Shown = .byCase
        /// Whether the last refresh failed for lack of connectivity.
        var isOffline = false
        /// The refresh in flight (a refresh without a session, from a seed or by a strategy without refresh tokens,
        /// runs before one exists).
        var flight: Flight?
        /// The profile the provider or the app supplied for the session's user.
        var profile: AuthUser?
    }

    /// What the app is shown, when it is not what the state's case says.
    enum Shown: Sendable, Equatable {
        /// `loading` while unloaded, `signedOut` without a session, `signedIn` with one.
        case byCase
        /// `loading`: a sign-in is under way (or the store was read before a session change, while still loading).
        case loading
        /// `unavailable`: the store could not be read.
        case unavailable
        /// `signedOut` over a store never read (a sign-in that could not be stored there).
        case signedOut
        /// `expired`: the session's token expired while refreshes fail.
        case expired

        /// How `state` shows `shown` (user IDs come from the session).
        init(representing shown: AuthState, in state: State) {
            switch (shown, state) {
            case (.loading, .unloaded), (.signedOut, .signedOut), (.signedIn, _): self = .byCase
            case (.loading, _): self = .loading
            case (.unavailable, _): self = .unavailable
            case (.signedOut, _): self = .signedOut
            case (.expired, _): self = .expired
            }
        }
    }
}

extension SessionMachine.State {
    /// The context of whichever case this is.
    var context: SessionMachine.Context {
        get {
            switch self {
            case .unloaded(let context), .signedOut(let context), .active(_, let context): context
            }
        }
        set {
            switch self {
            case .unloaded: self = .unloaded(newValue)
            case .signedOut: self = .signedOut(newValue)
            case .active(let session, _): self = .active(session, newValue)
            }
        }
    }

    /// The session, if there is one.
    var session: SessionMachine.Session? {
        if case .active(let session, _) = self { return session }
        return nil
    }

    /// Whether the store has been read (or a session started or ended without reading it).
    var isLoaded: Bool {
        if case .unloaded = self { return false }
        return true
    }

    /// The state shown to the app.
    var authState: AuthState {
        switch (context.shown, self) {
        case (.loading, _), (.byCase, .unloaded): .loading
        case (.unavailable, _): .unavailable
        case (.signedOut, _), (.byCase, .signedOut): .signedOut
        case (.expired, _): .expired(lastUserID: session?.userID)
        case (.byCase, .active(let session, _)): .signedIn(userID: session.userID)
        }
    }

    /// This state moved to the case holding `session`. The context stays, and so does what the app is shown until the
    /// transition says otherwise.
    func entering(_ session: SessionMachine.Session) -> Self { moved(to: .active(session, context)) }

    /// This state moved to the case without a session (the store read, or nothing of it needed any more), as
    /// ``entering(_:)`` does.
    func enteringNoSession() -> Self { moved(to: .signedOut(context)) }

    /// `next`, showing what this state shows.
    private func moved(to next: Self) -> Self {
        var next = next
        next.context.shown = SessionMachine.Shown(representing: authState, in: next)
        return next
    }
}
