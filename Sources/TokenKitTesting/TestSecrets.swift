public import AuthToken

/// A registry of the secrets a test run uses, so its log lines can be searched for them.
///
/// The fakes in this module register what crosses them: ``MockTransport`` and ``LoopbackServer`` the
/// credentials in each request and the tokens in each response body, ``SimulatedTokenServer`` its clients'
/// secrets, its users' passwords and every token it mints. Tests register the rest themselves, and
/// ``registerLiterals(inSourcesUnder:)`` registers the secret literals of a test directory.
///
/// ```swift
/// let secrets = TestSecrets()
/// secrets.register("refresh-token-for-alice", as: .refreshToken)
/// let leaks = LogLeakSearch(secrets: secrets.all).leaks(in: capture.lines)
/// #expect(leaks.isEmpty)
/// ```
///
/// A secret shorter than ``minimumLength`` bytes cannot be searched for without false alarms (`"a"` is in
/// every line), so it is kept in ``tooShort`` instead; a test run should use longer ones.
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
    }

    /// One registered secret.
    public struct Secret: Hashable, Sendable, CustomStringConvertible {
        /// The secret text. Never print it.
        public let value: String
        /// What it is.
        public let kind: Kind
        /// Where it was registered: a source location or a fake's name.
        public let origin: String
        /// The test scope (``ProcessLogCapture/scope``) that registered it, if any.
        public let scope: String?

        /// Kind, fingerprint and origin; never the value. A password, or a secret too short to search for,
        /// gets no fingerprint: a 32-bit hash of a low-entropy secret can be reversed by trying candidates.
        public var description: String {
            guard kind != .password, value.utf8.count >= TestSecrets.minimumLength else {
                return "\(kind) (from \(origin))"
            }
            return "\(kind) \(AuthToken.fingerprint(value)) (from \(origin))"
        }
    }

    /// Secrets shorter than this many UTF-8 bytes are not searched for. At least 8: ``LogLeakSearch`` indexes
    /// secrets by their first 8 bytes.
    public static let minimumLength = 8

    /// The registry the fakes of this module use.
    public static let shared = TestSecrets()

    private struct State {
        var order: [Secret] = []
        var known: Set<String> = []
    }

    private let state = Locked(State())

    /// Creates an empty registry.
    public init() {}

    /// Every secret registered so far, in order, without duplicates.
    public var all: [Secret] { state.withLock { $0.order } }

    /// The number of secrets registered so far.
    public var count: Int { state.withLock { $0.order.count } }

    /// The secrets too short to search for.
    public var tooShort: [Secret] { all.filter { $0.value.utf8.count < Self.minimumLength } }

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
