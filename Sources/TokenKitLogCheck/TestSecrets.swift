public import AuthToken
import TokenKitTesting

/// The secrets a test run uses, so the log check can search its log lines for them.
///
/// The mock kit of `TokenKitTesting` registers what crosses it in ``shared``: `MockTransport` and
/// `LoopbackServer` the credentials in each request and the tokens in each response body,
/// `SimulatedTokenServer` its clients' secrets, its users' passwords, every token it mints and the user ID it mints
/// it for, `MockSessionProvider` every token it hands out and the ID of every user it signs in. User IDs are
/// searched for like secrets: no log line may name a user. A test registers the secrets it makes itself, where it
/// makes them:
///
/// ```swift
/// let token = TestSecrets.shared.register(AuthToken(accessToken: "access-for-alice", expiresIn: 3600))
/// TestSecrets.shared.register("client-secret-of-the-app", as: .clientSecret)
/// TestSecrets.shared.register("ada@example.com", as: .userID)
/// ```
///
/// A secret shorter than 8 bytes cannot be searched for without false alarms (`"a"` is in every line): the
/// check reports it instead, so a test run should use longer ones.
public final class TestSecrets: Sendable {
    /// What a secret is.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// A name such as `access token`.
        public let description: String

        /// An OAuth access token.
        public static let accessToken = Kind(description: "access token")
        /// A refresh token.
        public static let refreshToken = Kind(description: "refresh token")
        /// An OpenID Connect ID token.
        public static let idToken = Kind(description: "ID token")
        /// A client secret.
        public static let clientSecret = Kind(description: "client secret")
        /// A user's password.
        public static let password = Kind(description: "password")
        /// Any other credential: an API key, an authorization code, a PKCE verifier, a Basic credential.
        public static let credential = Kind(description: "credential")
        /// A user ID: no credential, but it names a person (often by e-mail address), so no log line may carry it.
        /// The mock kit registers the IDs of the users it signs in (those of at least ``TestSecrets/minimumLength``
        /// bytes).
        public static let userID = Kind(description: "user ID")
    }

    /// One registered secret.
    package struct Secret: Hashable, Sendable, CustomStringConvertible {
        /// The secret text. Never print it.
        package let value: String
        /// What it is.
        package let kind: Kind
        /// Where it was registered: a source location or a fake's name.
        package let origin: String
        /// The test scope (``ProcessLogCapture/scope``) that registered it, if any.
        package let scope: String?

        /// Kind, fingerprint and origin; never the value. A password, or a secret too short to search for,
        /// gets no fingerprint: a 32-bit hash of a low-entropy secret can be reversed by trying candidates.
        package var description: String {
            guard kind != .password, value.utf8.count >= TestSecrets.minimumLength else {
                return "\(kind) (from \(origin))"
            }
            return "\(kind) \(AuthToken.fingerprint(value)) (from \(origin))"
        }
    }

    /// Secrets shorter than this many UTF-8 bytes are not searched for. At least 8: `LogLeakSearch` indexes
    /// secrets by their first 8 bytes.
    public static let minimumLength = 8

    /// The registry the log check searches for, and the one the mock kit registers in: made on first use,
    /// which connects the mocks to it.
    public static let shared: TestSecrets = {
        let secrets = TestSecrets()
        SecretCrossings.observe { crossing, origin in secrets.register(crossing, origin: origin) }
        return secrets
    }()

    private struct State {
        var order: [Secret] = []
        var known: Set<String> = []
    }

    private let state = Locked(State())

    /// Creates an empty registry (the mock kit registers in ``shared`` only).
    package init() {}

    /// Every secret registered so far, in order, without duplicates.
    package var all: [Secret] { state.withLock { $0.order } }

    /// The number of secrets registered so far.
    package var count: Int { state.withLock { $0.order.count } }

    /// The secrets too short to search for.
    package var tooShort: [Secret] { all.filter { $0.value.utf8.count < Self.minimumLength } }

    /// Registers a token's access token and refresh token.
    ///
    /// - Parameters:
    ///   - token: The token.
    ///   - origin: Where it comes from; the caller's location by default.
    /// - Returns: The token, so a test can register a token where it makes it.
    @discardableResult
    public func register(_ token: AuthToken, origin: String = "\(#fileID):\(#line)") -> AuthToken {
        register(token.accessToken, as: .accessToken, origin: origin)
        if let refreshToken = token.refreshToken { register(refreshToken, as: .refreshToken, origin: origin) }
        return token
    }

    /// Registers a secret. The empty string, and a value already registered, are ignored.
    ///
    /// - Parameters:
    ///   - value: The secret.
    ///   - kind: What it is.
    ///   - origin: Where it comes from; the caller's location by default.
    public func register(
        _ value: String, as kind: Kind, origin: String = "\(#fileID):\(#line)"
    ) {
        guard !value.isEmpty else { return }
        let secret = Secret(value: value, kind: kind, origin: origin, scope: ProcessLogCapture.scope)
        state.withLock { state in
            guard state.known.insert(value).inserted else { return }
            state.order.append(secret)
        }
    }
}
