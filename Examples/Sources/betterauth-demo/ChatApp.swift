import Crypto
import DemoAppSupport
import Foundation
import HTTPTypes
import Synchronization
import TokenKit

/// Seed 004's `AuthSession`: the BetterAuth `auth_user` and the chat profile (`chat_user`).
struct AuthSession: Sendable, Equatable {
    let authUserId: String
    let username: String
    let email: String
    let user: ChatUser
    let authenticatedAt: Date

    /// The chat profile.
    struct ChatUser: Sendable, Equatable, Decodable {
        let id: String
        let displayName: String
    }

    private struct Profile: Decodable {
        struct AuthUser: Decodable {
            let id: String
            let username: String
            let email: String
        }
        let authUser: AuthUser
        let chatUser: ChatUser
        enum CodingKeys: String, CodingKey {
            case authUser = "auth_user"
            case chatUser = "chat_user"
        }
    }

    /// Decodes `GET /api/chat/profile`.
    init(profile data: Data, at date: Date) throws {
        let profile = try JSONDecoder().decode(Profile.self, from: data)
        authUserId = profile.authUser.id
        username = profile.authUser.username
        email = profile.authUser.email
        user = profile.chatUser
        authenticatedAt = date
    }
}

/// The app's transport: URLSession (cookies off: TokenKit keeps the session cookie), counting what passes, and
/// keeping the last `{"error": ...}` a sign-up or sign-in got as an ``AuthServerError`` (known texts only), so the
/// app can say "this username is taken" rather than a generic refusal.
final class AppTransport: HTTPTransport {
    private let base: any HTTPTransport
    private struct Counts {
        var requests = 0
        var unauthorized = 0
        var withCookie = 0
        var withAuthorization = 0
        var lastServerError: AuthServerError?
    }
    private let counts = Mutex(Counts())

    init(_ base: any HTTPTransport) { self.base = base }

    var requests: Int { counts.withLock { $0.requests } }
    var unauthorized: Int { counts.withLock { $0.unauthorized } }
    /// Requests that carried a `Cookie` / an `Authorization`.
    var presented: (cookie: Int, authorization: Int) { counts.withLock { ($0.withCookie, $0.withAuthorization) } }

    /// The server error of the last refused sign-up or sign-in, cleared by reading it.
    func takeServerError() -> AuthServerError? {
        counts.withLock { counts in
            defer { counts.lastServerError = nil }
            return counts.lastServerError
        }
    }

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        counts.withLock { counts in
            counts.requests += 1
            if request.headerFields[.cookie] != nil { counts.withCookie += 1 }
            if request.headerFields[.authorization] != nil { counts.withAuthorization += 1 }
        }
        let (response, data) = try await base.send(request, body: body)
        let code = response.status.code
        let isSignIn = request.path?.hasPrefix("/api/auth/sign-") ?? false
        counts.withLock { counts in
            if code == 401 { counts.unauthorized += 1 }
            if isSignIn, (400..<500).contains(code) {
                counts.lastServerError = AuthServerError(status: code, body: data)
            }
        }
        return (response, data)
    }
}

/// One launch of the chat app: its auth client over the file store, the authenticated API client presenting the
/// session cookie, and the auth events it printed.
struct ChatApp {
    static let cookieName = "better-auth.session_token"

    let name: String
    let baseURL: URL
    let transport: AppTransport
    let strategy: CookieSessionStrategy
    let auth: TokenRefreshClient
    let api: AuthenticatedClient
    let events: EventLog
    let store: any TokenStore

    /// Starts the app (nothing is read until ``launch()``).
    init(name: String, baseURL: URL, transport: AppTransport, store: any TokenStore, report: DemoReport) {
        self.name = name
        self.baseURL = baseURL
        self.transport = transport
        self.store = store
        strategy = CookieSessionStrategy(baseURL: baseURL, cookieName: Self.cookieName, transport: transport)
        // No retries of a failed check: a demo that is offline should say so at once.
        auth = TokenRefreshClient(
            strategy: strategy, store: store, configuration: .init(backoff: .init(retries: 0)))
        let origin = HTTPOrigin(baseURL)
        api = AuthenticatedClient(
            transport: transport, tokenProvider: auth,
            configuration: .init(
                allowedOrigins: [origin].compactMap { $0 }, endsSessionWhenRefreshDoesNotHelp: true,
                credentialPresentation: strategy.presentation))
        events = EventLog(auth.events(), report, device: name)
    }

    /// Seed 004's `RootView.onAppear`: the stored session is checked with `GET /api/auth/get-session`.
    func launch() async -> AuthState { await auth.restoreSession(validatingWithProvider: true) }

    /// Sign-up with username, e-mail and password; the session cookie is captured from `Set-Cookie`.
    func signUp(username: String, email: String, password: String) async throws {
        let body = try JSONSerialization.data(withJSONObject: [
            "username": username, "email": email, "name": username, "password": password,
        ])
        try await auth.signIn(strategy.signIn(path: "/api/auth/sign-up/email", body: body))
    }

    /// Sign-in with username and password.
    func signIn(username: String, password: String) async throws {
        let body = try JSONSerialization.data(withJSONObject: ["username": username, "password": password])
        try await auth.signIn(strategy.signIn(path: "/api/auth/sign-in/username", body: body))
    }

    /// `GET /api/chat/profile` with the session cookie, as the seed's `AuthSession`.
    func profile() async throws -> AuthSession {
        let (response, data) = try await api.executeWithAutoRetry(request(.get, "/api/chat/profile"))
        guard response.status == .ok else {
            throw DemoFailure("GET /api/chat/profile answered \(response.status.code)")
        }
        return try AuthSession(profile: data, at: Date())
    }

    /// A request to `path` on the server.
    func request(_ method: HTTPRequest.Method, _ path: String) -> HTTPRequest {
        let authority = (baseURL.host ?? "127.0.0.1") + (baseURL.port.map { ":\($0)" } ?? "")
        return HTTPRequest(method: method, scheme: baseURL.scheme, authority: authority, path: path)
    }

    /// The stored session cookie's expiry, if a session is stored.
    func storedExpiry() async -> Date? {
        if case .found(let session) = await store.load(account: "default") { return session.token.expiresAt }
        return nil
    }

    /// Whether a session is stored.
    func hasStoredSession() async -> Bool {
        if case .found = await store.load(account: "default") { return true }
        return false
    }
}

/// Prints the client's auth events as they arrive and keeps them for the checks.
final class EventLog: Sendable {
    private let events = Mutex<[AuthEvent]>([])

    init(_ stream: AsyncStream<AuthEvent>, _ report: DemoReport, device: String) {
        Task { [self] in
            for await event in stream {
                report.event("\(device): \(event)")
                self.events.withLock { $0.append(event) }
            }
        }
    }

    /// The events of `kind` so far.
    func all(_ kind: AuthEvent.Kind) -> [AuthEvent] { events.withLock { $0.filter { $0.kind == kind } } }

    /// Waits up to two seconds until `count` events of `kind` have arrived.
    func wait(for kind: AuthEvent.Kind, count: Int) async -> Bool {
        for _ in 0..<200 {
            if all(kind).count >= count { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }
}

/// A file store sealed with a key the app keeps (the Keychain's job on a phone).
func sealedFileStore(in directory: URL, key: SymmetricKey) -> FileTokenStore {
    FileTokenStore(directory: directory, configuration: .init(encryptionKey: key))
}
