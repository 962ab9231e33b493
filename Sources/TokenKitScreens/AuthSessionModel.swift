public import Observation
public import TokenRefresh

/// The session as a SwiftUI view reads it: the diet-app ADR's `AuthManager` properties, kept up to date from
/// `TokenRefreshClient.states()`.
///
/// ```swift
/// @State private var session = AuthSessionModel(client: auth)
///
/// var body: some View {
///     if session.isAuthenticated { MainTabView() } else { AuthenticationView() }
/// }
/// ```
///
/// Observation is in the toolchain on Linux too, so the model is tested there; only views are Apple-only.
/// On Apple platforms it needs the releases that have Observation (macOS 14, iOS 17); the rest of TokenKit runs
/// on macOS 13 and iOS 16.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
@MainActor
@Observable
public final class AuthSessionModel {
    /// Whether a session exists (signed in, or expired but kept while offline).
    public private(set) var isAuthenticated = false
    /// Whether the stored session is still being read or a sign-in is under way.
    public private(set) var isLoading = true
    /// The signed-in user, if any, with the profile the token provider or the app supplied (also one supplied
    /// after the sign-in, through `TokenRefreshClient.setProfile(_:)`).
    public private(set) var currentUser: AuthUser?
    /// The state itself.
    public private(set) var state: AuthState = .loading
    /// The last error the app reported with ``report(_:)``; cleared by a new session.
    public var error: TokenRefreshError?

    @ObservationIgnored private let client: TokenRefreshClient
    @ObservationIgnored private var task: Task<Void, Never>?
    @ObservationIgnored private var userTask: Task<Void, Never>?

    /// Creates a model that follows `client` until it is released.
    ///
    /// - Parameter client: The session to follow.
    public init(client: TokenRefreshClient) {
        self.client = client
        let states = client.states()
        task = Task { [weak self] in
            for await state in states {
                guard let self else { return }
                self.apply(state)
            }
        }
        // A new user or profile without a change of state (a profile supplied after the sign-in): read it again.
        let sessions = client.sessionStates()
        userTask = Task { [weak self] in
            for await _ in sessions {
                guard let self else { return }
                if self.state.hasSession { self.currentUser = self.client.currentUser }
            }
        }
    }

    isolated deinit {
        task?.cancel()
        userTask?.cancel()
    }

    /// Keeps an error for the view to show (its `localizedDescription`).
    ///
    /// - Parameter error: What went wrong.
    public func report(_ error: any Error) {
        self.error = error as? TokenRefreshError ?? TokenRefreshError.transient.with(underlying: error)
    }

    private func apply(_ state: AuthState) {
        self.state = state
        isAuthenticated = state.hasSession
        isLoading = state == .loading
        currentUser = state.hasSession ? client.currentUser : nil
        if case .signedIn = state { error = nil }
    }
}
