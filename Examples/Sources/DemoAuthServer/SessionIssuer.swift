import Crypto
public import Foundation
public import Logging
import Synchronization
import _CryptoExtras

/// A Clerk-like session issuer: it signs short-lived RS256 or ES256 session JWTs (`kid`, `iss`, `sub`, `sid`,
/// `azp`, `iat`, `nbf`, `exp`) for the sessions it started, publishes its keys as a JWKS and an OpenID Connect
/// discovery document, and rotates them.
///
/// Rotation follows the rule that keeps every verifier working: a key that stops signing stays published until the
/// last token it signed has expired. By default the key that will sign next is also published before it signs
/// (the JWKS holds the current key and the next one), so a verifier's cached set already knows it; with
/// ``Configuration/publishesNextKey`` off, as Clerk's JWKS does, the new key appears at the rotation and a
/// verifier refetches once when it first sees it. ``rotateKey()`` makes the next key current, keeps the old one
/// until `now + tokenLifetime + 1 s`, and makes a fresh next key.
///
/// The demo server serves it under `/v1/...` and `/.well-known/openid-configuration` (see
/// `DemoAuthServer+Issuer.swift`); tests use it in-process.
public final class SessionIssuer: Sendable {
    /// A JWS algorithm the issuer signs with.
    public struct Algorithm: Sendable, Hashable, CustomStringConvertible {
        /// The JWS `alg` name, such as `RS256`.
        public let name: String

        /// RSASSA-PKCS1-v1_5 with SHA-256 over an RSA key of ``Configuration/keySize`` bits (Clerk's).
        public static let rs256 = Algorithm(known: "RS256")
        /// ECDSA on P-256 with SHA-256.
        public static let es256 = Algorithm(known: "ES256")

        /// The `alg` name.
        public var description: String { name }

        /// The algorithm with this `alg` name, or `nil` when the issuer does not sign with it.
        ///
        /// - Parameter name: `RS256` or `ES256` (case-insensitive).
        public init?(name: String) {
            switch name.uppercased() {
            case "RS256": self = .rs256
            case "ES256": self = .es256
            default: return nil
            }
        }

        private init(known name: String) { self.name = name }
    }

    /// The issuer's options.
    public struct Configuration: Sendable {
        /// The `iss` claim: the Clerk frontend API's URL. `nil` (the default): the base URL of the demo server that
        /// serves the issuer, once it listens (``SessionIssuer/defaultIssuer`` before), so that OpenID Connect
        /// discovery at `<iss>/.well-known/openid-configuration` finds it, as it finds Clerk's.
        public var issuer: String?
        /// The `azp` claim: the origin of the app the sessions belong to.
        public var authorizedParty: String
        /// How long a session token lives (Clerk: 60 seconds).
        public var tokenLifetime: Duration
        /// The JWKS response's `Cache-Control: max-age`.
        public var jwksMaxAge: Duration
        /// The RSA modulus size of new RS256 keys (at least 2048 bits).
        public var keySize: Int
        /// The algorithm of every key and token.
        public var algorithm: Algorithm
        /// Whether the key that will sign next is published before it signs (so verifiers need no refetch at a
        /// rotation). `false`: the JWKS holds only keys that sign or signed, as Clerk's does.
        public var publishesNextKey: Bool

        /// Creates a configuration; every parameter has a default.
        ///
        /// - Parameters:
        ///   - issuer: The `iss` claim; `nil` (the default) for the serving demo server's base URL.
        ///   - authorizedParty: The `azp` claim.
        ///   - tokenLifetime: The session tokens' lifetime; 60 s by default, as Clerk's.
        ///   - jwksMaxAge: The JWKS `max-age`; 300 s by default.
        ///   - keySize: The RSA key size in bits; 2048 by default.
        ///   - algorithm: `RS256` (the default, Clerk's) or `ES256`.
        ///   - publishesNextKey: Whether the next key is published before it signs; on by default.
        public init(
            issuer: String? = nil,
            authorizedParty: String = "https://app.tokenkit-demo.test",
            tokenLifetime: Duration = .seconds(60), jwksMaxAge: Duration = .seconds(300), keySize: Int = 2048,
            algorithm: Algorithm = .rs256, publishesNextKey: Bool = true
        ) {
            self.issuer = issuer
            self.authorizedParty = authorizedParty
            self.tokenLifetime = tokenLifetime
            self.jwksMaxAge = jwksMaxAge
            self.keySize = keySize
            self.algorithm = algorithm
            self.publishesNextKey = publishesNextKey
        }
    }

    /// The `iss` of an issuer with no configured issuer that no demo server serves.
    public static let defaultIssuer = "https://clerk.tokenkit-demo.test"

    /// A started session, as the SDK holds it: the session ID and the device's client token (the credential that
    /// mints session tokens, Clerk's `__client`).
    public struct StartedSession: Sendable, Hashable {
        /// The `sid` of the tokens.
        public let sessionID: String
        /// The user's ID (the tokens' `sub`).
        public let userID: String
        /// The user's e-mail address.
        public let email: String
        /// The client token: a secret the SDK keeps and presents to mint tokens.
        public let clientToken: String
    }

    /// Why a session token was not minted.
    public enum Refusal: String, Sendable, Hashable, Error {
        /// The client token is not one this issuer handed out.
        case unknownClient = "client_not_found"
        /// The session was ended by sign-out.
        case signedOut = "session_ended"
        /// The session was revoked on the server.
        case revoked = "session_revoked"
        /// The user was deleted.
        case userDeleted = "user_deleted"
    }

    /// The issuer's counters.
    public struct Stats: Sendable, Hashable, Encodable {
        /// Session tokens minted.
        public var tokensIssued = 0
        /// Sessions started.
        public var sessionsStarted = 0
        /// Key rotations.
        public var rotations = 0
        /// JWKS documents served.
        public var jwksServed = 0
        /// OpenID Connect discovery documents served.
        public var discoveryServed = 0
    }

    enum PrivateKey: Sendable {
        case rsa(_RSA.Signing.PrivateKey)
        case p256(P256.Signing.PrivateKey)
    }

    struct SigningKey: Sendable {
        let keyID: String
        let privateKey: PrivateKey
        let jwk: [String: String]
        /// When the key leaves the JWKS (the expiry of the last token it signed); `nil` while it signs or waits.
        var retiresAt: Date?
    }

    struct Session: Sendable {
        let id: String
        let userID: String
        let clientToken: String
        var ended: Refusal?
    }

    /// The keys: generated on first use, so a server that never issues a session token never pays for RSA keys.
    struct Keys: Sendable {
        var current: SigningKey
        var next: SigningKey
        var retiring: [SigningKey] = []
    }

    struct State: Sendable {
        var keys: Keys?
        var sessions: [String: Session] = [:]
        var deletedUsers: Set<String> = []
        var serial = 0
        var stats = Stats()
        /// The base URL of the demo server serving the issuer, the `iss` when none is configured.
        var servedAt: String?
    }

    /// The options.
    public let configuration: Configuration
    private let now: @Sendable () -> Date
    private let logger: Logger
    private let state: Mutex<State>

    /// Creates an issuer. Its two keys (the current one and the next one) are generated on first use.
    ///
    /// - Parameters:
    ///   - configuration: The options.
    ///   - now: The wall clock.
    ///   - logger: Where sign-ins, rotations and revocations are logged (never token text).
    public init(
        configuration: Configuration = Configuration(), now: @escaping @Sendable () -> Date,
        logger: Logger = Logger(label: "demo-auth-server.issuer")
    ) {
        self.configuration = configuration
        self.now = now
        self.logger = logger
        state = Mutex(State())
    }

    /// Runs `body` under the lock with the keys, generating them first if this is their first use.
    private func withKeys<T>(_ body: (inout State, inout Keys) throws -> T) throws -> T {
        try state.withLock { state in
            var keys = try state.keys ?? Keys(current: makeKey(), next: makeKey())
            defer { state.keys = keys }
            return try body(&state, &keys)
        }
    }

    private func makeKey() throws -> SigningKey {
        try Self.makeKey(configuration.algorithm, bits: configuration.keySize)
    }

    static func makeKey(_ algorithm: Algorithm, bits: Int) throws -> SigningKey {
        if algorithm == .es256 {
            let privateKey = P256.Signing.PrivateKey()
            // The uncompressed point: 0x04, then x and y, 32 bytes each.
            let point = privateKey.publicKey.x963Representation.dropFirst()
            let keyID = "ins_" + Base64URL.encode(SHA256.hash(data: point).prefix(9))
            let jwk = [
                "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": keyID,
                "x": Base64URL.encode(point.prefix(32)), "y": Base64URL.encode(point.suffix(32)),
            ]
            return SigningKey(keyID: keyID, privateKey: .p256(privateKey), jwk: jwk)
        }
        let privateKey = try _RSA.Signing.PrivateKey(keySize: .init(bitCount: max(2048, bits)))
        let primitives = try privateKey.publicKey.getKeyPrimitives()
        let keyID = "ins_" + Base64URL.encode(SHA256.hash(data: primitives.modulus).prefix(9))
        let jwk = [
            "kty": "RSA", "use": "sig", "alg": "RS256", "kid": keyID,
            "n": Base64URL.encode(primitives.modulus), "e": Base64URL.encode(primitives.publicExponent),
        ]
        return SigningKey(keyID: keyID, privateKey: .rsa(privateKey), jwk: jwk)
    }

    // MARK: Issuer

    /// The `iss` of the tokens: the configured issuer, else the base URL of the demo server serving this issuer,
    /// else ``defaultIssuer``.
    public var issuer: String {
        configuration.issuer ?? state.withLock { $0.servedAt } ?? Self.defaultIssuer
    }

    /// The base URL of the demo server serving the issuer, once it listens.
    var servedAt: String? { state.withLock { $0.servedAt } }

    /// Records the base URL of the demo server that serves the issuer (the `iss` when none is configured).
    func served(at baseURL: URL) {
        var text = baseURL.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        state.withLock { $0.servedAt = text }
    }

    /// The OpenID Connect discovery document (`/.well-known/openid-configuration`): the `issuer`, the `jwks_uri`,
    /// and the one signing algorithm.
    ///
    /// - Parameter jwksURL: Where the JWKS is served.
    /// - Returns: The JSON document.
    public func discoveryDocument(jwksURL: URL) -> Data {
        state.withLock { $0.stats.discoveryServed += 1 }
        let document = DiscoveryDocument(
            issuer: issuer, jwksURI: jwksURL.absoluteString,
            signingAlgorithms: [configuration.algorithm.name])
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(document)) ?? Data("{}".utf8)
    }

    struct DiscoveryDocument: Encodable {
        var issuer: String
        var jwksURI: String
        var signingAlgorithms: [String]
        var subjectTypes = ["public"]
        var responseTypes = ["id_token"]
        var claims = ["azp", "exp", "iat", "iss", "jti", "nbf", "sid", "sub"]

        enum CodingKeys: String, CodingKey {
            case issuer
            case jwksURI = "jwks_uri"
            case signingAlgorithms = "id_token_signing_alg_values_supported"
            case subjectTypes = "subject_types_supported"
            case responseTypes = "response_types_supported"
            case claims = "claims_supported"
        }
    }

    // MARK: Sessions

    /// Starts a session for a user, as Clerk's sign-in does.
    ///
    /// - Parameters:
    ///   - userID: The user's ID.
    ///   - email: The user's e-mail address.
    /// - Returns: The session and its client token.
    public func startSession(userID: String, email: String) -> StartedSession {
        let started = state.withLock { state in
            state.serial += 1
            state.stats.sessionsStarted += 1
            state.deletedUsers.remove(userID)
            let id = "sess_\(state.serial)" + Self.randomSuffix(6)
            let session = Session(id: id, userID: userID, clientToken: "client_" + Self.randomSuffix(24))
            state.sessions[id] = session
            return StartedSession(sessionID: id, userID: userID, email: email, clientToken: session.clientToken)
        }
        logger.debug("session started", metadata: ["sid": "\(started.sessionID)", "user": "\(userID)"])
        return started
    }

    /// Mints a session token, as Clerk's `POST /v1/client/sessions/{sid}/tokens` does.
    ///
    /// - Parameters:
    ///   - sessionID: The session.
    ///   - clientToken: The client token the session was started with.
    /// - Returns: A signed JWT (RS256 or ES256, as configured).
    /// - Throws: A ``Refusal`` when the client is unknown or the session has ended.
    public func sessionToken(sessionID: String, clientToken: String) throws -> String {
        let date = now()
        let issuer = issuer
        let (key, claims) = try withKeys { state, keys -> (SigningKey, Claims) in
            guard let session = state.sessions[sessionID], session.clientToken == clientToken else {
                throw Refusal.unknownClient
            }
            if let ended = session.ended { throw ended }
            state.serial += 1
            state.stats.tokensIssued += 1
            let issuedAt = Int(date.timeIntervalSince1970)
            let claims = Claims(
                azp: configuration.authorizedParty, exp: issuedAt + Int(configuration.tokenLifetime.components.seconds),
                iat: issuedAt, iss: issuer, jti: "jti_\(state.serial)", nbf: issuedAt - Self.nbfSkew,
                sid: session.id, sub: session.userID)
            return (keys.current, claims)
        }
        return try Self.sign(claims, with: key)
    }

    /// Ends a session (sign-out): its client can mint no more tokens. Ending an ended session does nothing.
    ///
    /// - Parameters:
    ///   - sessionID: The session.
    ///   - clientToken: The client token the session was started with.
    /// - Throws: ``Refusal/unknownClient`` when the session or client is not known.
    public func endSession(_ sessionID: String, clientToken: String) throws(Refusal) {
        try state.withLock { state throws(Refusal) in
            guard let session = state.sessions[sessionID], session.clientToken == clientToken else {
                throw .unknownClient
            }
            if session.ended == nil { state.sessions[sessionID]?.ended = .signedOut }
        }
    }

    /// Revokes every session of a user, or every session, as an administrator would in the dashboard.
    ///
    /// - Parameter userID: The user, or `nil` for all.
    /// - Returns: How many live sessions were revoked.
    @discardableResult
    public func revokeSessions(userID: String? = nil) -> Int {
        let count = state.withLock { state in
            var count = 0
            for (id, session) in state.sessions
            where session.ended == nil && (userID == nil || session.userID == userID) {
                state.sessions[id]?.ended = .revoked
                count += 1
            }
            return count
        }
        logger.debug("sessions revoked", metadata: ["count": "\(count)"])
        return count
    }

    /// Deletes a user (account deletion): every session of theirs ends.
    ///
    /// - Parameter userID: The user.
    public func deleteUser(_ userID: String) {
        state.withLock { state in
            state.deletedUsers.insert(userID)
            for (id, session) in state.sessions where session.userID == userID && session.ended == nil {
                state.sessions[id]?.ended = .userDeleted
            }
        }
    }

    // MARK: Keys

    /// The `kid` of the key that signs now.
    public var currentKeyID: String { (try? withKeys { _, keys in keys.current.keyID }) ?? "" }

    /// The `kid` of the key published to sign next.
    public var nextKeyID: String { (try? withKeys { _, keys in keys.next.keyID }) ?? "" }

    /// The counters.
    public var stats: Stats { state.withLock { $0.stats } }

    /// The `kid`s in the JWKS now: the current key, the next one (when ``Configuration/publishesNextKey``), and
    /// retired keys whose tokens may still be valid.
    public var publishedKeyIDs: [String] { publishedKeys().map { $0["kid"] ?? "" } }

    /// Rotates: the next key (published since the last rotation when ``Configuration/publishesNextKey``) signs
    /// from now on, the old one stays published until its last token has expired, and a new next key is made.
    ///
    /// - Returns: The new current `kid`.
    /// - Throws: When a key cannot be generated.
    @discardableResult
    public func rotateKey() throws -> String {
        let fresh = try makeKey()
        let retiresAt = now().addingTimeInterval(Double(configuration.tokenLifetime.components.seconds + 1))
        let keyID = try withKeys { state, keys in
            var old = keys.current
            old.retiresAt = retiresAt
            keys.retiring.append(old)
            keys.current = keys.next
            keys.next = fresh
            state.stats.rotations += 1
            return keys.current.keyID
        }
        logger.debug("key rotated", metadata: ["kid": "\(keyID)"])
        return keyID
    }

    /// Withdraws the current key at once (it leaked): the next key signs from now on, the old key leaves the JWKS
    /// immediately (its tokens stop verifying once a backend sees the new set), and a new next key is made.
    ///
    /// - Returns: The withdrawn `kid`.
    /// - Throws: When a key cannot be generated.
    @discardableResult
    public func withdrawCurrentKey() throws -> String {
        let fresh = try makeKey()
        let keyID = try withKeys { state, keys in
            let old = keys.current.keyID
            keys.current = keys.next
            keys.next = fresh
            state.stats.rotations += 1
            return old
        }
        logger.debug("key withdrawn", metadata: ["kid": "\(keyID)"])
        return keyID
    }

    /// The JWKS document.
    public var jwksDocument: Data {
        let keys = publishedKeys()
        state.withLock { $0.stats.jwksServed += 1 }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(["keys": keys])) ?? Data(#"{"keys":[]}"#.utf8)
    }

    private func publishedKeys() -> [[String: String]] {
        let date = now()
        let publishesNext = configuration.publishesNextKey
        let keys = try? withKeys { _, keys in
            keys.retiring.removeAll { ($0.retiresAt ?? .distantFuture) <= date }
            return [keys.current.jwk] + (publishesNext ? [keys.next.jwk] : []) + keys.retiring.map(\.jwk)
        }
        if keys == nil { logger.error("no signing keys: key generation failed") }
        return keys ?? []
    }

    // MARK: Signing

    /// Clerk sets `nbf` ten seconds before `iat`, for clock skew.
    static let nbfSkew = 10

    struct Claims: Encodable {
        var azp: String
        var exp: Int
        var iat: Int
        var iss: String
        var jti: String
        var nbf: Int
        var sid: String
        var sub: String
    }

    static func sign(_ claims: Claims, with key: SigningKey) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let header = Base64URL.encode(
            try encoder.encode(["alg": key.jwk["alg"] ?? "RS256", "kid": key.keyID, "typ": "JWT"]))
        let payload = Base64URL.encode(try encoder.encode(claims))
        let input = header + "." + payload
        let digest = SHA256.hash(data: Data(input.utf8))
        let signature: Data
        switch key.privateKey {
        case .rsa(let privateKey):
            signature = try privateKey.signature(for: digest, padding: .insecurePKCS1v1_5).rawRepresentation
        case .p256(let privateKey):
            // JWS wants r || s (RFC 7518 section 3.4), which is the raw representation.
            signature = try privateKey.signature(for: digest).rawRepresentation
        }
        return input + "." + Base64URL.encode(signature)
    }

    private static func randomSuffix(_ count: Int) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<count).map { _ in alphabet.randomElement()! })
    }
}
