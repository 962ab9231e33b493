import Crypto
public import Foundation
public import Logging
import Synchronization
import _CryptoExtras

/// A Clerk-like session issuer: it signs short-lived RS256 session JWTs (`kid`, `iss`, `sub`, `sid`, `azp`, `iat`,
/// `nbf`, `exp`) for the sessions it started, publishes its keys as a JWKS, and rotates them.
///
/// Rotation follows the rule that keeps every verifier working: the key that will sign next is published before
/// it signs (the JWKS always holds the current key and the next one), and a key that stops signing stays
/// published until the last token it signed has expired. ``rotateKey()`` makes the next key current, keeps the old
/// one until `now + tokenLifetime + nbf skew`, and publishes a fresh next key.
///
/// The demo server serves it under `/v1/...` (see `DemoAuthServer+Issuer.swift`); tests use it in-process.
public final class SessionIssuer: Sendable {
    /// The issuer's options.
    public struct Configuration: Sendable {
        /// The `iss` claim: the Clerk frontend API's URL.
        public var issuer: String
        /// The `azp` claim: the origin of the app the sessions belong to.
        public var authorizedParty: String
        /// How long a session token lives (Clerk: 60 seconds).
        public var tokenLifetime: Duration
        /// The JWKS response's `Cache-Control: max-age`.
        public var jwksMaxAge: Duration
        /// The RSA modulus size of new keys (at least 2048 bits).
        public var keySize: Int

        /// Creates a configuration; every parameter has a default.
        ///
        /// - Parameters:
        ///   - issuer: The `iss` claim.
        ///   - authorizedParty: The `azp` claim.
        ///   - tokenLifetime: The session tokens' lifetime; 60 s by default, as Clerk's.
        ///   - jwksMaxAge: The JWKS `max-age`; 300 s by default.
        ///   - keySize: The RSA key size in bits; 2048 by default.
        public init(
            issuer: String = "https://clerk.tokenkit-demo.test",
            authorizedParty: String = "https://app.tokenkit-demo.test",
            tokenLifetime: Duration = .seconds(60), jwksMaxAge: Duration = .seconds(300), keySize: Int = 2048
        ) {
            self.issuer = issuer
            self.authorizedParty = authorizedParty
            self.tokenLifetime = tokenLifetime
            self.jwksMaxAge = jwksMaxAge
            self.keySize = keySize
        }
    }

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
    }

    struct SigningKey: Sendable {
        let keyID: String
        let privateKey: _RSA.Signing.PrivateKey
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
        let bits = configuration.keySize
        return try state.withLock { state in
            var keys = try state.keys ?? Keys(current: Self.makeKey(bits: bits), next: Self.makeKey(bits: bits))
            defer { state.keys = keys }
            return try body(&state, &keys)
        }
    }

    static func makeKey(bits: Int) throws -> SigningKey {
        let privateKey = try _RSA.Signing.PrivateKey(keySize: .init(bitCount: max(2048, bits)))
        let primitives = try privateKey.publicKey.getKeyPrimitives()
        let keyID = "ins_" + Base64URL.encode(SHA256.hash(data: primitives.modulus).prefix(9))
        let jwk = [
            "kty": "RSA", "use": "sig", "alg": "RS256", "kid": keyID,
            "n": Base64URL.encode(primitives.modulus), "e": Base64URL.encode(primitives.publicExponent),
        ]
        return SigningKey(keyID: keyID, privateKey: privateKey, jwk: jwk)
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
    /// - Returns: A signed RS256 JWT.
    /// - Throws: A ``Refusal`` when the client is unknown or the session has ended.
    public func sessionToken(sessionID: String, clientToken: String) throws -> String {
        let date = now()
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
                iat: issuedAt, iss: configuration.issuer, jti: "jti_\(state.serial)", nbf: issuedAt - Self.nbfSkew,
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

    /// The `kid`s in the JWKS now: the current key, the next one, and retired keys whose tokens may still be valid.
    public var publishedKeyIDs: [String] { publishedKeys().map { $0["kid"] ?? "" } }

    /// Rotates: the next key (published since the last rotation) signs from now on, the old one stays published
    /// until its last token has expired, and a new next key is published.
    ///
    /// - Returns: The new current `kid`.
    /// - Throws: When a key cannot be generated.
    @discardableResult
    public func rotateKey() throws -> String {
        let fresh = try Self.makeKey(bits: configuration.keySize)
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
    /// immediately (its tokens stop verifying once a backend sees the new set), and a new next key is published.
    ///
    /// - Returns: The withdrawn `kid`.
    /// - Throws: When a key cannot be generated.
    @discardableResult
    public func withdrawCurrentKey() throws -> String {
        let fresh = try Self.makeKey(bits: configuration.keySize)
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
        let keys = try? withKeys { _, keys in
            keys.retiring.removeAll { ($0.retiresAt ?? .distantFuture) <= date }
            return [keys.current.jwk, keys.next.jwk] + keys.retiring.map(\.jwk)
        }
        if keys == nil { logger.error("no signing keys: RSA key generation failed") }
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
            try encoder.encode(["alg": "RS256", "kid": key.keyID, "typ": "JWT"]))
        let payload = Base64URL.encode(try encoder.encode(claims))
        let input = header + "." + payload
        let signature = try key.privateKey.signature(
            for: SHA256.hash(data: Data(input.utf8)), padding: .insecurePKCS1v1_5)
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }

    private static func randomSuffix(_ count: Int) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        return String((0..<count).map { _ in alphabet.randomElement()! })
    }
}
