import Crypto
import Foundation
import Logging
import Synchronization

/// Tokens one login (or client) received: what a token endpoint answers.
struct IssuedTokens: Sendable, Equatable {
    var accessToken: String
    var refreshToken: String?
    var expiresIn: Int
    var scope: String?
    var userID: String
}

/// The outcome of one refresh request.
enum RefreshOutcome: Sendable, Equatable {
    /// New tokens, possibly followed by a fault that strikes after the rotation.
    case issued(IssuedTokens, fault: RefreshFault)
    /// The refresh token is refused (`invalid_grant`), with a description safe to show.
    case rejected(String)
    /// A fault answered instead, before any rotation.
    case faulted(RefreshFault)
}

/// Why a presented access token is refused by a protected resource.
enum AccessRejection: Error, Equatable {
    case invalid
    case expired
    case revoked

    /// The `error_description` of the `WWW-Authenticate` challenge.
    var description: String {
        switch self {
        case .invalid: "The access token is malformed, has a bad signature, or is not for this API"
        case .expired: "The access token expired"
        case .revoked: "The access token was revoked"
        }
    }
}

/// The server's token bookkeeping: logins, rotation with reuse detection, revocation, statistics and faults.
///
/// All state sits behind one `Mutex`; every operation is synchronous and short (an ES256 signature at most),
/// so HTTP handlers call it directly. No token text is ever logged: log lines carry the user, the family ID
/// and the counters.
final class TokenAuthority: Sendable {
    /// One login's chain of refresh tokens. Revoking a family kills every token in it, and its access tokens.
    private struct Family {
        let userID: String
        let clientID: String?
        let scope: String?
        var revoked = false
        /// The digest of the refresh token rotated last: the only one Auth0's reuse interval accepts again.
        var lastRotated: String?
    }

    /// The state of one refresh token, keyed by the SHA-256 of its text.
    private struct RefreshRecord {
        enum Status {
            case active
            case rotated(at: Date, successor: IssuedTokens)
        }
        let familyID: String
        let expiresAt: Date
        var status: Status
    }

    private struct State {
        var refreshTokens: [String: RefreshRecord] = [:]
        var families: [String: Family] = [:]
        var accessTokenFamilies: [String: String] = [:]
        var revokedAccessTokenIDs: Set<String> = []
        var stats = DemoAuthServer.Stats()
        var faults: DemoAuthServer.Faults
        var issueLog: [DemoAuthServer.IssueRecord] = []
        var gates: [RefreshGate] = []
    }

    let configuration: DemoAuthServer.Configuration
    let signer: TokenSigner
    /// The codes `/authorize` handed out, until the token endpoint takes them.
    let authorizationCodes = AuthorizationCodes()
    private let now: @Sendable () -> Date
    private let logger: Logger
    private let state: Mutex<State>

    init(configuration: DemoAuthServer.Configuration, now: @escaping @Sendable () -> Date, logger: Logger) {
        self.configuration = configuration
        self.signer = TokenSigner()
        self.now = now
        self.logger = logger
        self.state = Mutex(State(faults: configuration.faults))
    }

    var stats: DemoAuthServer.Stats { state.withLock { $0.stats } }

    var issueLog: [DemoAuthServer.IssueRecord] { state.withLock { $0.issueLog } }

    var faults: DemoAuthServer.Faults {
        get { state.withLock { $0.faults } }
        set { state.withLock { $0.faults = newValue } }
    }

    /// Queues a gate for the next refresh that reaches its point.
    func addGate(_ gate: RefreshGate) { state.withLock { $0.gates.append(gate) } }

    /// Takes the first queued gate for `point`, if any.
    func takeGate(_ point: DemoAuthServer.GatePoint) -> RefreshGate? {
        state.withLock { state in
            guard let index = state.gates.firstIndex(where: { $0.point == point }) else { return nil }
            return state.gates.remove(at: index)
        }
    }

    /// Counts a response altered by a fault outside the refresh path (`htmlEverywhere`).
    func countInjectedFault() { state.withLock { $0.stats.faultsInjected += 1 } }

    // MARK: Clients and users

    /// The configured client with this ID, when the secret fits it (a public client takes none).
    func authenticateClient(id: String, secret: String?) -> DemoAuthServer.Client? {
        guard let client = configuration.clients.first(where: { $0.id == id }) else { return nil }
        if let expected = client.secret, expected != secret { return nil }
        return client
    }

    // MARK: Grants

    /// Logs a user in with a password and starts a new refresh-token family.
    ///
    /// - Returns: The tokens, or `nil` for a wrong email or password.
    func login(email: String, password: String, clientID: String?, scope: String?) throws -> IssuedTokens? {
        let user = configuration.users.first { $0.email.lowercased() == email.lowercased() }
        guard let user, user.password == password else {
            state.withLock { $0.stats.failedLogins += 1 }
            logger.info("login refused", metadata: ["client": "\(clientID ?? "api-key")"])
            return nil
        }
        let (tokens, familyID, count) = try state.withLock { state in
            let familyID = UUID().uuidString
            state.families[familyID] = Family(userID: user.id, clientID: clientID, scope: scope)
            let tokens = try issue(
                in: &state, grant: .login, familyID: familyID, userID: user.id, clientID: clientID, scope: scope)
            state.stats.logins += 1
            return (tokens, familyID, state.stats.logins)
        }
        logger.info(
            "login",
            metadata: ["user": "\(user.id)", "family": "\(familyID.prefix(8))", "logins": "\(count)"]
        )
        return tokens
    }

    /// Starts a refresh-token family for a user the authorization endpoint signed in (the authorization code grant).
    func signIn(userID: String, clientID: String, scope: String?) throws -> IssuedTokens {
        let tokens = try state.withLock { state in
            let familyID = UUID().uuidString
            state.families[familyID] = Family(userID: userID, clientID: clientID, scope: scope)
            state.stats.logins += 1
            return try issue(
                in: &state, grant: .login, familyID: familyID, userID: userID, clientID: clientID, scope: scope)
        }
        logger.info("authorization code exchanged", metadata: ["user": "\(userID)", "client": "\(clientID)"])
        return tokens
    }

    /// The wall clock.
    var currentDate: Date { now() }

    /// The client-credentials grant: an access token for the client itself, with no refresh token.
    func clientCredentials(clientID: String, scope: String?) throws -> IssuedTokens {
        try state.withLock { state in
            state.stats.clientCredentialsGrants += 1
            let claims = makeClaims(subject: clientID, clientID: clientID, scope: scope)
            return IssuedTokens(
                accessToken: try signer.sign(claims), refreshToken: nil,
                expiresIn: claims.exp - claims.iat, scope: scope, userID: clientID
            )
        }
    }

    /// Exchanges a refresh token: rotation, grace window, reuse detection and injected faults.
    ///
    /// - Parameters:
    ///   - refreshToken: The presented refresh token.
    ///   - clientID: The authenticated OAuth client, or `nil` for the FitIQ-style (API key) endpoint. A token
    ///     is only accepted from the client its family was issued to.
    ///   - endpoint: A short name of the endpoint, for the log line.
    func refresh(_ refreshToken: String, clientID: String?, endpoint: String) throws -> RefreshOutcome {
        let key = Self.key(for: refreshToken)
        var logLine: (message: Logger.Message, metadata: Logger.Metadata)?
        let outcome: RefreshOutcome = try state.withLock { state in
            state.stats.refreshAttempts += 1
            let preFault = state.faults.takePreRotationFault()
            if preFault != .none {
                state.stats.faultsInjected += 1
                return .faulted(preFault)
            }
            let current = now()
            guard var record = state.refreshTokens[key], let family = state.families[record.familyID],
                family.clientID == clientID
            else {
                state.stats.rejectedRefreshes += 1
                return .rejected("The refresh token is unknown or was issued to another client")
            }
            guard !family.revoked else {
                state.stats.rejectedRefreshes += 1
                return .rejected("The refresh token was revoked")
            }
            guard current < record.expiresAt else {
                state.stats.rejectedRefreshes += 1
                return .rejected("The refresh token expired")
            }
            var tokens: IssuedTokens
            switch record.status {
            case .active:
                tokens = try issue(
                    in: &state, grant: .refresh, familyID: record.familyID, userID: family.userID, clientID: clientID,
                    scope: family.scope, withRefreshToken: configuration.rotateRefreshTokens
                )
                if configuration.rotateRefreshTokens {
                    record.status = .rotated(at: current, successor: tokens)
                    state.refreshTokens[key] = record
                    state.families[record.familyID]?.lastRotated = key
                }
                state.stats.refreshes += 1
                logLine = (
                    "refresh",
                    [
                        "endpoint": "\(endpoint)", "user": "\(family.userID)",
                        "family": "\(record.familyID.prefix(8))", "refreshes": "\(state.stats.refreshes)",
                    ]
                )
            case .rotated(let rotatedAt, let successor):
                let grace = Double(configuration.graceWindow.wholeSeconds)
                if grace > 0, current.timeIntervalSince(rotatedAt) <= grace, configuration.graceIssuesNewPair {
                    // Auth0's reuse interval: a new rotating pair, as long as the presented token is the one rotated
                    // last in its family; an older one (the second-to-last) is reuse.
                    guard family.lastRotated == key else {
                        state.stats.reuseDetections += 1
                        state.stats.rejectedRefreshes += 1
                        if configuration.reuseDetection { state.families[record.familyID]?.revoked = true }
                        return .rejected("The refresh token was already used")
                    }
                    state.stats.graceReuses += 1
                    tokens = try issue(
                        in: &state, grant: .refresh, familyID: record.familyID, userID: family.userID,
                        clientID: clientID, scope: family.scope)
                    state.stats.refreshes += 1
                } else if grace > 0, current.timeIntervalSince(rotatedAt) <= grace {
                    state.stats.graceReuses += 1
                    tokens = successor
                    logLine = (
                        "refresh within grace window: same pair returned",
                        ["endpoint": "\(endpoint)", "family": "\(record.familyID.prefix(8))"]
                    )
                } else {
                    state.stats.reuseDetections += 1
                    state.stats.rejectedRefreshes += 1
                    if configuration.reuseDetection {
                        state.families[record.familyID]?.revoked = true
                        logLine = (
                            "refresh token reuse detected: family revoked",
                            [
                                "endpoint": "\(endpoint)", "family": "\(record.familyID.prefix(8))",
                                "reuse_detections": "\(state.stats.reuseDetections)",
                            ]
                        )
                        return .rejected("The refresh token was already used; the session is revoked")
                    }
                    return .rejected("The refresh token was already used")
                }
            }
            let postFault = state.faults.takePostRotationFault()
            if postFault != .none { state.stats.faultsInjected += 1 }
            return .issued(tokens, fault: postFault)
        }
        if let logLine { logger.info(logLine.message, metadata: logLine.metadata) }
        return outcome
    }

    // MARK: Revocation

    /// Revokes a refresh token (its whole family) or an access token (RFC 7009).
    ///
    /// - Parameters:
    ///   - token: The token to revoke; unknown tokens are ignored, as RFC 7009 asks.
    ///   - clientID: The authenticated client, or `nil` for the API-key endpoints. A token issued to another
    ///     client is left alone.
    /// - Returns: Whether something was revoked.
    @discardableResult
    func revoke(_ token: String, clientID: String?) -> Bool {
        let key = Self.key(for: token)
        let claims = try? signer.verify(
            token, issuer: configuration.issuer, audience: configuration.audience, now: .distantPast
        )
        let familyID: String? = state.withLock { state in
            if let record = state.refreshTokens[key], let family = state.families[record.familyID],
                family.clientID == clientID, !family.revoked
            {
                state.families[record.familyID]?.revoked = true
                state.stats.revocations += 1
                return record.familyID
            }
            if let claims, claims.clientID == clientID, !state.revokedAccessTokenIDs.contains(claims.jti) {
                state.revokedAccessTokenIDs.insert(claims.jti)
                state.stats.revocations += 1
                return state.accessTokenFamilies[claims.jti] ?? "access-token"
            }
            return nil
        }
        if let familyID { logger.info("revoked", metadata: ["family": "\(familyID.prefix(8))"]) }
        return familyID != nil
    }

    /// Revokes every session, or every session of one user.
    ///
    /// - Returns: How many refresh-token families were revoked.
    @discardableResult
    func revokeAllSessions(userID: String? = nil) -> Int {
        let count = state.withLock { state in
            var count = 0
            for (id, family) in state.families where !family.revoked && (userID == nil || family.userID == userID) {
                state.families[id]?.revoked = true
                count += 1
            }
            state.stats.revocations += count
            return count
        }
        logger.info("revoked all sessions", metadata: ["families": "\(count)"])
        return count
    }

    // MARK: Protected resources

    /// Checks a bearer token presented to a protected resource and counts the outcome.
    func authorize(_ accessToken: String) -> Result<TokenSigner.Claims, AccessRejection> {
        let current = now()
        let checked: Result<TokenSigner.Claims, AccessRejection>
        do {
            checked = .success(
                try signer.verify(
                    accessToken, issuer: configuration.issuer, audience: configuration.audience, now: current
                )
            )
        } catch .expired {
            checked = .failure(.expired)
        } catch {
            checked = .failure(.invalid)
        }
        return state.withLock { state in
            var result = checked
            if case .success(let claims) = checked {
                let familyRevoked = state.accessTokenFamilies[claims.jti].flatMap { state.families[$0]?.revoked }
                if state.revokedAccessTokenIDs.contains(claims.jti) || familyRevoked == true {
                    result = .failure(.revoked)
                }
            }
            switch result {
            case .success: state.stats.resourceRequests += 1
            case .failure: state.stats.rejectedResourceRequests += 1
            }
            return result
        }
    }

    /// Counts a protected-resource request that carried no token.
    func countUnauthenticatedRequest() { state.withLock { $0.stats.rejectedResourceRequests += 1 } }

    // MARK: Helpers

    private func makeClaims(subject: String, clientID: String?, scope: String?) -> TokenSigner.Claims {
        let issuedAt = Int(now().timeIntervalSince1970.rounded(.down))
        return TokenSigner.Claims(
            sub: subject, iss: configuration.issuer, aud: configuration.audience, iat: issuedAt,
            exp: issuedAt + max(1, configuration.accessTokenLifetime.wholeSeconds),
            jti: Base64URL.random(byteCount: 12), scope: scope, clientID: clientID
        )
    }

    private func issue(
        in state: inout State, grant: DemoAuthServer.IssueRecord.Grant, familyID: String, userID: String,
        clientID: String?, scope: String?, withRefreshToken: Bool = true
    ) throws -> IssuedTokens {
        let issuedAt = now()
        let claims = makeClaims(subject: userID, clientID: clientID, scope: scope)
        let accessToken = try signer.sign(claims)
        if state.issueLog.count >= DemoAuthServer.IssueRecord.kept { state.issueLog.removeFirst() }
        state.issueLog.append(
            .init(
                grant: grant, family: String(familyID.prefix(8)), issuedAt: issuedAt.timeIntervalSince1970,
                expiresAt: claims.exp))
        state.accessTokenFamilies[claims.jti] = familyID
        var refreshToken: String?
        if withRefreshToken {
            let token = Base64URL.random(byteCount: 32)
            let lifetime = Double(max(1, configuration.refreshTokenLifetime.wholeSeconds))
            state.refreshTokens[Self.key(for: token)] = RefreshRecord(
                familyID: familyID, expiresAt: now().addingTimeInterval(lifetime), status: .active
            )
            refreshToken = token
        }
        return IssuedTokens(
            accessToken: accessToken, refreshToken: refreshToken, expiresIn: claims.exp - claims.iat,
            scope: scope, userID: userID
        )
    }

    /// Refresh tokens are kept by digest, never in clear.
    private static func key(for token: String) -> String {
        Base64URL.encode(SHA256.hash(data: Data(token.utf8)))
    }
}
