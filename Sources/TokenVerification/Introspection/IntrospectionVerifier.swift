public import AuthToken
import Crypto
public import Foundation
public import Logging

#if DistributedTracing
    import Tracing
#endif

/// Checks opaque access tokens with the issuer's RFC 7662 introspection endpoint, for tokens a backend cannot
/// verify itself (django-oauth-toolkit's, and any server that issues random strings rather than JWTs).
///
/// ```swift
/// let introspection = IntrospectionVerifier(
///     configuration: .init(
///         endpoint: URL(string: "https://auth.example.com/o/introspect/")!,
///         clientAuthentication: .clientSecretBasic(id: "orders-api", secret: secretFromYourStore),
///         audience: .notChecked(reason: "the server binds no audience to its tokens")))
/// let claims = try await introspection.verify(token)
/// ```
///
/// An inactive token throws ``TokenVerificationError/tokenInactive``; an endpoint that cannot answer throws
/// ``TokenVerificationError/introspectionUnavailable``, so a client never throws its token away because the endpoint
/// was down. Answers are cached by the token's SHA-256 within bounds, one call per token runs at a time, the answer's
/// own claims are checked, and no token or client secret reaches a log. The rules in full: "Opaque tokens" in
/// ``TokenVerification``.
public final class IntrospectionVerifier: Sendable {
    /// How this resource server authenticates to the introspection endpoint (RFC 7662 section 2.1).
    public struct ClientAuthentication: Sendable, CustomStringConvertible, CustomReflectable {
        enum Method: Sendable { case basic, post, bearer }
        let method: Method
        let clientID: String
        let secret: String

        /// HTTP Basic with the form-encoded client ID and secret (RFC 6749 section 2.3.1,
        /// `client_secret_basic`): what most servers, django-oauth-toolkit included, expect.
        ///
        /// - Parameters:
        ///   - id: The client ID.
        ///   - secret: The client secret.
        /// - Returns: The authentication.
        public static func clientSecretBasic(id: String, secret: String) -> ClientAuthentication {
            ClientAuthentication(method: .basic, clientID: id, secret: secret)
        }

        /// `client_id` and `client_secret` in the form body (`client_secret_post`).
        ///
        /// - Parameters:
        ///   - id: The client ID.
        ///   - secret: The client secret.
        /// - Returns: The authentication.
        public static func clientSecretPost(id: String, secret: String) -> ClientAuthentication {
            ClientAuthentication(method: .post, clientID: id, secret: secret)
        }

        /// `Authorization: Bearer` with an access token of this resource server's own (django-oauth-toolkit also
        /// accepts a token with the `introspection` scope).
        ///
        /// - Parameter token: The resource server's access token.
        /// - Returns: The authentication.
        public static func bearer(_ token: String) -> ClientAuthentication {
            ClientAuthentication(method: .bearer, clientID: "", secret: token)
        }

        /// The method and the client ID, never the secret.
        public var description: String {
            switch method {
            case .basic: "clientSecretBasic(id: \(clientID))"
            case .post: "clientSecretPost(id: \(clientID))"
            case .bearer: "bearer"
            }
        }

        /// A mirror with the method and the client ID, never the secret, so `dump()` does not print it.
        public var customMirror: Mirror {
            Mirror(self, children: ["method": "\(method)", "clientID": clientID])
        }
    }

    /// Where to ask, how to authenticate, what an answer must satisfy, and the cache and request bounds.
    public struct Configuration: Sendable {
        /// The introspection endpoint, such as django-oauth-toolkit's `https://auth.example.com/o/introspect/`.
        public var endpoint: URL
        /// How this server authenticates to the endpoint.
        public var clientAuthentication: ClientAuthentication
        /// Whether the answer's `aud` is checked, and against what. No default: every configuration states it.
        public var audience: TokenVerifier.AudienceRule
        /// If set, the answer's `iss` must be exactly this. Default `nil` (django-oauth-toolkit sends none).
        public var issuer: String?
        /// The member that names the user, read by ``VerifiedClaims/subject``: `sub` by default; `username` for
        /// django-oauth-toolkit, which sends no `sub`.
        public var subjectMember: String
        /// Whether ``subjectMember`` must be a non-empty string. Default `true`; turn it off for tokens without a
        /// user (client credentials), and do not key data by an empty subject.
        public var requiresSubject: Bool
        /// Tolerated clock difference for the answer's `exp` and `nbf`. Default 5 seconds.
        public var leeway: Duration
        /// The longest an active answer is reused: how long a token revoked at the server may still be accepted
        /// here. Never past the answer's `exp`. Default 60 seconds.
        public var maximumCacheDuration: Duration
        /// How long an inactive answer is reused, so a replayed dead token costs no call. Default 5 seconds.
        public var inactiveCacheDuration: Duration
        /// How many answers each of the two caches holds (one for accepted answers, one for refusals); 0 turns
        /// caching off. Default 10,000.
        public var cacheCapacity: Int
        /// The most introspection calls in flight at once (each for a different token). When they are all taken, a
        /// token that is neither cached nor already being asked about is answered at once with
        /// ``TokenVerificationError/introspectionUnavailable`` (a 503), without a call. Default 64.
        public var maximumConcurrentCalls: Int
        /// The longest an introspection call may take. Default 5 seconds.
        public var requestTimeout: Duration
        /// The largest answer accepted, in bytes. Default 64 KiB. The default send stops reading there (a longer
        /// `Content-Length` is refused at the head, a stream as it passes the bound), so an endpoint that answers
        /// without end costs at most this much memory; the answer is then
        /// ``TokenVerificationError/introspectionUnavailable``.
        public var maximumResponseBytes: Int
        /// The longest token sent to the endpoint, in bytes. Default 16 KiB.
        public var maximumTokenLength: Int
        /// Whether the endpoint may be plain `http` to a host that is not loopback. Default `false`: tokens and the
        /// client secret would cross the network in clear.
        public var dangerouslyAllowsPlainHTTP: Bool

        /// A configuration; every parameter but the endpoint, the authentication and the audience rule has a
        /// default.
        ///
        /// - Parameters:
        ///   - endpoint: The introspection endpoint.
        ///   - clientAuthentication: How this server authenticates to it.
        ///   - audience: Whether and how `aud` is checked.
        ///   - issuer: The required `iss`, or `nil`.
        ///   - subjectMember: The member that names the user.
        ///   - requiresSubject: Whether that member must be present.
        ///   - leeway: Tolerated clock difference.
        ///   - maximumCacheDuration: Longest reuse of an active answer.
        ///   - inactiveCacheDuration: Reuse of an inactive answer.
        ///   - cacheCapacity: Most answers cached.
        ///   - maximumConcurrentCalls: Most calls in flight at once.
        ///   - requestTimeout: Longest call.
        ///   - maximumResponseBytes: Largest answer.
        ///   - maximumTokenLength: Longest token sent.
        ///   - dangerouslyAllowsPlainHTTP: Whether plain `http` to a host that is not loopback is allowed.
        public init(
            endpoint: URL, clientAuthentication: ClientAuthentication, audience: TokenVerifier.AudienceRule,
            issuer: String? = nil, subjectMember: String = "sub", requiresSubject: Bool = true,
            leeway: Duration = .seconds(5), maximumCacheDuration: Duration = .seconds(60),
            inactiveCacheDuration: Duration = .seconds(5), cacheCapacity: Int = 10_000,
            maximumConcurrentCalls: Int = 64, requestTimeout: Duration = .seconds(5),
            maximumResponseBytes: Int = 64 * 1024,
            maximumTokenLength: Int = 16 * 1024, dangerouslyAllowsPlainHTTP: Bool = false
        ) {
            self.endpoint = endpoint
            self.clientAuthentication = clientAuthentication
            self.audience = audience
            self.issuer = issuer
            self.subjectMember = subjectMember
            self.requiresSubject = requiresSubject
            self.leeway = leeway
            self.maximumCacheDuration = maximumCacheDuration
            self.inactiveCacheDuration = inactiveCacheDuration
            self.cacheCapacity = cacheCapacity
            self.maximumConcurrentCalls = maximumConcurrentCalls
            self.requestTimeout = requestTimeout
            self.maximumResponseBytes = maximumResponseBytes
            self.maximumTokenLength = maximumTokenLength
            self.dangerouslyAllowsPlainHTTP = dangerouslyAllowsPlainHTTP
        }
    }

    /// What an answer decided: accepted claims (until their `exp`, if any), or a refusal of the token.
    enum Answer: Sendable {
        case accepted(VerifiedClaims, expiration: Date?)
        case refused(TokenVerificationError)
    }

    private struct State {
        /// Accepted answers only, so a flood of unknown tokens (each a refusal) cannot push them out.
        var accepted: BoundedCache<Answer>
        /// Refusals (inactive, expired, wrong audience, ...).
        var refused: BoundedCache<Answer>
        var inFlight: [SHA256Digest: Task<Result<Answer, TokenVerificationError>, Never>] = [:]
        var joins = 0
    }

    /// The checks and bounds.
    package let configuration: Configuration
    private let send: Send
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let elapsed: @Sendable () -> Duration
    private let sleep: @Sendable (Duration) async throws -> Void
    private let state: LockedValue<State>

    /// A verifier.
    ///
    /// - Parameters:
    ///   - configuration: The endpoint, the authentication, the checks and the bounds.
    ///   - clock: The clock for cache lifetimes and the request timeout.
    ///   - now: The wall clock for the answer's `exp` and `nbf`; the system's by default.
    ///   - logger: Where calls and failures are logged (debug level; refused credentials at error level).
    ///   - send: Sends the introspection request; ``urlSessionSend(configuration:)`` by default.
    public init(
        configuration: Configuration, clock: any Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = AuthToken.systemNow,
        logger: Logger = Logger(label: "tokenkit.verification.introspection"),
        send: @escaping Send = IntrospectionVerifier.urlSessionSend()
    ) {
        self.configuration = configuration
        self.send = send
        self.logger = logger
        self.now = now
        (elapsed, sleep) = Self.handles(clock)
        let capacity = max(0, configuration.cacheCapacity)
        state = LockedValue(
            State(accepted: BoundedCache(capacity: capacity), refused: BoundedCache(capacity: capacity)))
    }

    private static func handles(
        _ clock: some Clock<Duration>
    ) -> (@Sendable () -> Duration, @Sendable (Duration) async throws -> Void) {
        let start = clock.now
        return ({ start.duration(to: clock.now) }, { try await clock.sleep(for: $0) })
    }

    /// How many callers have joined a call already in flight for their token.
    var joinCount: Int { state.withLock { $0.joins } }

    /// How many answers the cache holds.
    var cachedAnswerCount: Int { state.withLock { $0.accepted.count + $0.refused.count } }

    /// Checks a token with the introspection endpoint (or a cached answer) and returns the answer's members as
    /// claims (``VerifiedClaims/isIntrospected``).
    ///
    /// - Parameter token: The access token, without the `Bearer ` prefix.
    /// - Returns: The claims: `active`, `scope`, `client_id`, `exp`, the subject, and whatever else the server sent.
    /// - Throws: ``TokenVerificationError/tokenInactive`` or another token problem (a 401); or
    ///   ``TokenVerificationError/introspectionUnavailable``, ``TokenVerificationError/introspectionClientRejected``
    ///   or ``TokenVerificationError/insecureIntrospectionURL`` when the endpoint could not answer (a 503).
    public func verify(_ token: String) async throws(TokenVerificationError) -> VerifiedClaims {
        #if DistributedTracing
            // One span per introspection, current while the call is made. Its attributes hold the cache use, the
            // call, the outcome and the endpoint's host: never the token, a claim value or a credential.
            let span = startSpan("tokenkit.token.introspect")
            defer { span.end() }
            span.attributes["server.address"] = configuration.endpoint.host ?? ""
            let (result, lookup) = await ServiceContext.$current.withValue(span.context) { await check(token) }
            if let cache = lookup.cache { span.attributes["tokenkit.introspection.cache"] = cache }
            if let call = lookup.call { span.attributes["tokenkit.introspection.call"] = call }
            switch result {
            case .success:
                span.attributes["tokenkit.introspection.outcome"] = "active"
            case .failure(let error):
                span.attributes["tokenkit.introspection.outcome"] =
                    error == .tokenInactive ? "inactive" : error.isTokenProblem ? "refused" : "unavailable"
                span.attributes["error.type"] = error.reason
                span.setStatus(SpanStatus(code: .error))
            }
            return try result.get()
        #else
            return try await check(token).result.get()
        #endif
    }

    /// How ``verify(_:)`` found its answer, for its span: the cache (`hit` or `miss`; `nil` when the token was
    /// refused before the lookup) and, on a miss, the call (`sent`, `joined` for one already in flight, or `skipped`
    /// when the bound on concurrent calls was reached).
    private struct Lookup {
        var cache: String?
        var call: String?
    }

    /// ``verify(_:)`` without a span: its result, and how the answer was found.
    private func check(_ token: String) async -> (result: Result<VerifiedClaims, TokenVerificationError>, Lookup) {
        guard !token.isEmpty else { return (.failure(.malformedToken), Lookup()) }
        guard token.utf8.count <= configuration.maximumTokenLength else { return (.failure(.tokenTooLong), Lookup()) }
        let digest = SHA256.hash(data: Data(token.utf8))
        let started = elapsed()
        enum Step {
            case cached(Answer)
            case wait(Task<Result<Answer, TokenVerificationError>, Never>, joined: Bool)
            case saturated
        }
        let step = state.withLock { state -> Step in
            if let answer = state.accepted.value(for: digest, at: started) { return .cached(answer) }
            if let answer = state.refused.value(for: digest, at: started) { return .cached(answer) }
            if let task = state.inFlight[digest] {
                state.joins += 1
                return .wait(task, joined: true)
            }
            // Fail fast rather than queue: under a flood of unknown tokens a queue would be full of the attacker's
            // tokens, real requests would wait behind them until they time out, and every queued call would still
            // reach the server. A 503 now keeps the client's token and lets it retry.
            guard state.inFlight.count < max(1, configuration.maximumConcurrentCalls) else { return .saturated }
            let task = Task { await self.introspect(token, digest: digest) }
            state.inFlight[digest] = task
            return .wait(task, joined: false)
        }
        let answer: Answer
        var lookup = Lookup(cache: "miss")
        switch step {
        case .cached(let cached):
            lookup.cache = "hit"
            answer = cached
        case .wait(let task, let joined):
            lookup.call = joined ? "joined" : "sent"
            switch await task.value {
            case .success(let value): answer = value
            case .failure(let error): return (.failure(error), lookup)
            }
        case .saturated:
            lookup.call = "skipped"
            logger.debug(
                "Introspection refused: the bound on concurrent calls is reached",
                metadata: ["calls": "\(configuration.maximumConcurrentCalls)"])
            return (.failure(.introspectionUnavailable), lookup)
        }
        switch answer {
        case .refused(let error):
            return (.failure(error), lookup)
        case .accepted(let claims, let expiration):
            // A cached answer may outlive its token only by the clocks' disagreement: check `exp` again.
            if let expiration, expiration.timeIntervalSince(now()) <= -Self.seconds(configuration.leeway) {
                return (.failure(.expired), lookup)
            }
            return (.success(claims), lookup)
        }
    }

    /// One call for `token`: sends it, judges the answer, caches what may be cached, and leaves the in-flight
    /// table in the same step, so a caller finds either the cached answer or the call.
    private func introspect(_ token: String, digest: SHA256Digest) async -> Result<Answer, TokenVerificationError> {
        let fingerprint = HexEncoding.encode(digest.prefix(4))
        let result: Result<Answer, TokenVerificationError>
        do throws(TokenVerificationError) {
            let (members, body) = try await call(token, fingerprint: fingerprint)
            result = .success(try judge(members, payload: body))
        } catch {
            result = .failure(error)
        }
        let at = elapsed()
        let wallNow = now()
        state.withLock { state in
            state.inFlight[digest] = nil
            guard case .success(let answer) = result else { return }
            var lifetime: Duration
            switch answer {
            case .accepted(_, let expiration):
                lifetime = configuration.maximumCacheDuration
                if let expiration {
                    lifetime = min(lifetime, .seconds(max(0, expiration.timeIntervalSince(wallNow))))
                }
            case .refused:
                lifetime = configuration.inactiveCacheDuration
            }
            guard lifetime > .zero else { return }
            switch answer {
            case .accepted: state.accepted.insert(answer, for: digest, until: at + lifetime)
            case .refused: state.refused.insert(answer, for: digest, until: at + lifetime)
            }
        }
        switch result {
        case .success(.accepted): logger.debug("Token introspected: active", metadata: ["token": "\(fingerprint)"])
        case .success(.refused(let error)):
            logger.debug(
                "Token introspected: refused", metadata: ["token": "\(fingerprint)", "reason": "\(error.reason)"])
        case .failure(let error):
            logger.debug(
                "Token introspection failed", metadata: ["token": "\(fingerprint)", "reason": "\(error.reason)"])
        }
        return result
    }

    /// Sends the request within the timeout and returns the answer's members.
    private func call(
        _ token: String, fingerprint: String
    ) async throws(TokenVerificationError) -> (members: [String: JSONValue], body: [UInt8]) {
        let endpoint = configuration.endpoint
        guard RemoteJWKSSource.isAcceptable(endpoint, allowingPlainHTTP: configuration.dangerouslyAllowsPlainHTTP)
        else {
            logger.error(
                "Introspection endpoint refused: plain http to a host that is not loopback (https required)",
                metadata: ["host": "\(endpoint.host ?? "-")"])
            throw .insecureIntrospectionURL
        }
        let request = Self.request(token, configuration: configuration)
        let send = send
        // `nil`: the send stopped reading an answer longer than the bound.
        let result = await Race.first(
            timeout: configuration.requestTimeout, sleep: sleep, failure: .introspectionUnavailable
        ) { () -> Response? in
            do {
                return try await send(request)
            } catch let error as URLError where error.code == .dataLengthExceedsMaximum {
                return nil
            }
        }
        let response: Response
        switch result {
        case .success(let value?):
            response = value
        case .success(nil):
            logger.debug(
                "Introspection answer too large: reading stopped at the bound",
                metadata: ["maximumBytes": "\(configuration.maximumResponseBytes)"])
            throw .introspectionUnavailable
        case .failure(let error):
            logger.debug(
                error == .fetchTimedOut ? "Introspection timed out" : "Introspection endpoint unreachable",
                metadata: ["token": "\(fingerprint)"])
            throw .introspectionUnavailable
        }
        switch response.status {
        case 200:
            break
        case 401, 403:
            logger.error(
                "Introspection endpoint refused this server's credentials",
                metadata: ["status": "\(response.status)", "authentication": "\(configuration.clientAuthentication)"])
            throw .introspectionClientRejected
        default:
            logger.debug("Introspection endpoint answered an error", metadata: ["status": "\(response.status)"])
            throw .introspectionUnavailable
        }
        // A send that does not stop reading at the bound itself (`Request.maximumResponseBytes`) is held to it here.
        guard response.body.count <= configuration.maximumResponseBytes else {
            logger.debug("Introspection answer too large", metadata: ["bytes": "\(response.body.count)"])
            throw .introspectionUnavailable
        }
        do throws(TokenVerificationError) {
            return (try JWKSet.parseObject(response.body), Array(response.body))
        } catch {
            logger.debug("Introspection answer is not a JSON object", metadata: ["reason": "\(error.reason)"])
            throw .introspectionUnavailable
        }
    }

    /// The checks of an answer, apart from the call: `active`, `token_type`, `exp`, `nbf`, `iss`, `aud` and the
    /// subject.
    ///
    /// - Throws: ``TokenVerificationError/introspectionUnavailable`` for an answer without a Boolean `active`
    ///   (RFC 7662 requires one): an endpoint that answers `{}` is misconfigured, and its tokens are not inactive.
    func judge(_ members: [String: JSONValue], payload: [UInt8]) throws(TokenVerificationError) -> Answer {
        guard case .bool(let active) = members["active"] else {
            logger.debug("Introspection answer has no Boolean active member")
            throw .introspectionUnavailable
        }
        guard active else { return .refused(.tokenInactive) }
        if let type = members["token_type"]?.stringValue?.lowercased(), type == "refresh_token" || type == "refresh" {
            return .refused(.typeMismatch)
        }
        let now = now().timeIntervalSince1970
        let leeway = Self.seconds(configuration.leeway)
        var expiration: Date?
        if let value = members["exp"] {
            guard let seconds = NumericDate.seconds(value) else { return .refused(.invalidClaim("exp")) }
            guard now < seconds + leeway else { return .refused(.expired) }
            expiration = Date(timeIntervalSince1970: seconds)
        }
        if let value = members["nbf"] {
            guard let seconds = NumericDate.seconds(value) else { return .refused(.invalidClaim("nbf")) }
            guard seconds <= now + leeway else { return .refused(.notYetValid) }
        }
        if let issuer = configuration.issuer, members["iss"]?.stringValue != issuer { return .refused(.issuerMismatch) }
        if let audiences = configuration.audience.audiences {
            let named: [String]
            switch members["aud"] {
            case .string(let value): named = [value]
            case .array(let values): named = values.compactMap(\.stringValue)
            default: named = []
            }
            guard named.contains(where: audiences.contains) else { return .refused(.audienceMismatch) }
        }
        if configuration.requiresSubject, members[configuration.subjectMember]?.stringValue?.isEmpty ?? true {
            return .refused(.missingClaim(configuration.subjectMember))
        }
        let claims = VerifiedClaims(
            members: members, payload: payload, algorithm: .introspection, keyID: nil,
            subjectMember: configuration.subjectMember)
        return .accepted(claims, expiration: expiration)
    }

    /// The POST: `token` and `token_type_hint=access_token` form-encoded, with the client authentication.
    static func request(_ token: String, configuration: Configuration) -> Request {
        var form = "token=\(FormEncoding.encode(token))&token_type_hint=access_token"
        var fields: [(name: String, value: String)] = [
            ("Content-Type", "application/x-www-form-urlencoded"), ("Accept", "application/json"),
        ]
        let authentication = configuration.clientAuthentication
        switch authentication.method {
        case .basic:
            // RFC 6749 section 2.3.1, with a space as `%20` (form decoding reads it as a space, and servers that
            // decode the pair by RFC 3986 rules do too; they would keep a `+`).
            let pair = [authentication.clientID, authentication.secret].map(FormEncoding.basicEncode)
                .joined(separator: ":")
            fields.append(("Authorization", "Basic " + Data(pair.utf8).base64EncodedString()))
        case .post:
            form += "&client_id=\(FormEncoding.encode(authentication.clientID))"
            form += "&client_secret=\(FormEncoding.encode(authentication.secret))"
        case .bearer:
            fields.append(("Authorization", "Bearer " + authentication.secret))
        }
        return Request(
            url: configuration.endpoint, headerFields: fields, body: Data(form.utf8),
            maximumResponseBytes: max(0, configuration.maximumResponseBytes))
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
