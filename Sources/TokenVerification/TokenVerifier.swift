public import AuthToken
public import CoreMetrics
import Crypto
public import Foundation

#if DistributedTracing
    import Tracing
#endif

/// Verifies JWS compact tokens (JWTs) a backend receives: signature, algorithm, header and claims.
///
/// ```swift
/// let keys = RemoteJWKSSource(jwksURL: URL(string: "https://clerk.example.com/.well-known/jwks.json")!)
/// let verifier = TokenVerifier(
///     configuration: .init(
///         issuer: "https://clerk.example.com",
///         audience: .notChecked(reason: "Clerk session tokens carry no aud; azp is checked"),
///         allowedParties: ["https://app.example.com"]),
///     keySource: keys)
/// let claims = try await verifier.verify(token)
/// print(claims.subject, claims.sessionID ?? "-")
/// ```
///
/// The shape, header, signature length and claims are checked before a key is looked up, so a malformed, unsigned or
/// expired token never makes a ``JWKSSource`` fetch anything; the key must match the algorithm; a verified token is
/// cached by its SHA-256 while its claims hold and its key is published. The order of the checks, which is part of
/// the contract: "Cheap checks first" in ``TokenVerification``.
public struct TokenVerifier: Sendable {
    /// Whether and how `aud` is checked: a choice every configuration states.
    ///
    /// Which one a provider needs:
    /// - Clerk session tokens carry no `aud`: ``notChecked(reason:)``, with
    ///   ``Configuration/allowedParties`` set to the app's origins.
    /// - Auth0, Okta, Keycloak, Microsoft Entra, any OpenID Connect ID token or RFC 9068 access token:
    ///   ``oneOf(_:)`` with your API's identifier (an ID token's `aud` is the client ID).
    public struct AudienceRule: Sendable, Hashable, CustomStringConvertible {
        /// The accepted `aud` values; `nil` when `aud` is not checked.
        package let audiences: Set<String>?
        /// Why `aud` is not checked, as the configuration says; `nil` when it is.
        package let reasonNotChecked: String?

        /// `aud` must be present and name at least one of `audiences` (an empty set accepts no token).
        ///
        /// - Parameter audiences: The accepted values, such as `["https://api.example.com"]`.
        /// - Returns: The rule.
        public static func oneOf(_ audiences: Set<String>) -> AudienceRule {
            AudienceRule(audiences: audiences, reasonNotChecked: nil)
        }

        /// `aud` is not checked: right only for an issuer whose tokens are all meant for this backend, such as
        /// Clerk's session tokens (check `azp` with ``Configuration/allowedParties`` instead). A token meant
        /// for another API of the same issuer is then accepted.
        ///
        /// - Parameter reason: Why, in words a reviewer can check ("Clerk session tokens carry no aud").
        /// - Returns: The rule.
        public static func notChecked(reason: String) -> AudienceRule {
            AudienceRule(audiences: nil, reasonNotChecked: reason)
        }

        /// `oneOf([...])` or `notChecked(reason: ...)`.
        public var description: String {
            if let audiences { return "oneOf(\(audiences.sorted()))" }
            return "notChecked(reason: \(reasonNotChecked ?? ""))"
        }
    }

    /// What a token must satisfy.
    ///
    /// Which checks a provider needs (see the TokenVerification article for the full table):
    /// - Clerk session tokens: `audience: .notChecked(reason: ...)`, ``allowedParties`` = the app's origins.
    /// - OpenID Connect ID tokens: `audience: .oneOf([clientID])`.
    /// - RFC 9068 access tokens (Auth0, Okta, Keycloak with JWT access tokens): `audience: .oneOf([apiID])` and
    ///   ``requiredType`` `"at+jwt"`.
    public struct Configuration: Sendable {
        /// The exact `iss` every token must carry.
        public var issuer: String
        /// Whether `aud` is checked, and against what. No default: every configuration states it.
        public var audience: AudienceRule
        /// The algorithms accepted. Default `[.rs256]`, as the diet-app backend asks. HMAC algorithms also
        /// need ``hmacSecrets`` (or `oct` keys in a static key set).
        public var algorithms: Set<JWSAlgorithm>
        /// Tolerated clock difference for `exp`, `nbf`, `iat` and the token age. Default 5 seconds.
        public var leeway: Duration
        /// If set, `iat` is required and may be at most this long ago (plus the leeway). Default `nil`.
        public var maximumTokenAge: Duration?
        /// Whether `exp` must be present. Default `true`; turn it off only for an issuer whose tokens never
        /// expire, knowing a stolen one then works until its key is rotated.
        public var requiresExpiration: Bool
        /// Whether `sub` must be present. Default `true`. RFC 7519 makes it optional (a client-credentials
        /// token may have none); without it ``VerifiedClaims/subject`` is empty, so do not key data by it.
        public var requiresSubject: Bool
        /// Further claims that must be present, such as `sid` or `org_id`. `iss` always must; `exp` and `sub`
        /// follow ``requiresExpiration`` and ``requiresSubject``, whatever this set says. Default empty.
        public var requiredClaims: Set<String>
        /// If set, the header's `typ` must be this media type, compared without letter case and with an
        /// optional `application/` prefix; use `"at+jwt"` for RFC 9068 access tokens (so an ID token of the
        /// same issuer is refused). Default `nil`.
        public var requiredType: String?
        /// If set, an `azp` claim (Clerk's authorized party: the frontend origin) must be one of these. A token
        /// without `azp` passes unless ``requiresAuthorizedParty`` is on. Default `nil`.
        public var allowedParties: Set<String>?
        /// Whether `azp` must be present. Default `false`: Clerk omits it when the request had no `Origin`
        /// (native apps); turn it on for a web-only app, or for an OpenID Connect issuer that always sets it.
        public var requiresAuthorizedParty: Bool
        /// The shared secrets for `HS256`/`HS384`/`HS512` (which must also be in ``algorithms``), each bound to
        /// its `kid`. Default empty: HMAC tokens then verify only with an `oct` key of a static key set.
        public var hmacSecrets: [HMACSecret]
        /// The longest token accepted, in bytes. Default 16 KiB.
        public var maximumTokenLength: Int
        /// How many verified tokens to remember; 0 turns the cache off. Default 10,000.
        public var tokenCacheCapacity: Int

        /// A configuration; every parameter but `issuer` and `audience` has a default.
        ///
        /// - Parameters:
        ///   - issuer: The exact `iss`.
        ///   - audience: Whether `aud` is checked: ``AudienceRule/oneOf(_:)`` or ``AudienceRule/notChecked(reason:)``.
        ///   - algorithms: Accepted algorithms.
        ///   - leeway: Tolerated clock difference.
        ///   - maximumTokenAge: Maximum age by `iat`, or `nil`.
        ///   - requiresExpiration: Whether `exp` must be present.
        ///   - requiresSubject: Whether `sub` must be present.
        ///   - requiredClaims: Further claims that must be present.
        ///   - requiredType: The required `typ`, or `nil`.
        ///   - allowedParties: Accepted `azp` values, or `nil`.
        ///   - requiresAuthorizedParty: Whether `azp` must be present.
        ///   - hmacSecrets: The HMAC secrets, each with its `kid`.
        ///   - maximumTokenLength: The longest token accepted.
        ///   - tokenCacheCapacity: The verified-token cache's size.
        public init(
            issuer: String, audience: AudienceRule, algorithms: Set<JWSAlgorithm> = [.rs256],
            leeway: Duration = .seconds(5), maximumTokenAge: Duration? = nil, requiresExpiration: Bool = true,
            requiresSubject: Bool = true, requiredClaims: Set<String> = [], requiredType: String? = nil,
            allowedParties: Set<String>? = nil, requiresAuthorizedParty: Bool = false, hmacSecrets: [HMACSecret] = [],
            maximumTokenLength: Int = 16 * 1024, tokenCacheCapacity: Int = 10_000
        ) {
            self.issuer = issuer
            self.audience = audience
            self.algorithms = algorithms
            self.leeway = leeway
            self.maximumTokenAge = maximumTokenAge
            self.requiresExpiration = requiresExpiration
            self.requiresSubject = requiresSubject
            self.requiredClaims = requiredClaims
            self.requiredType = requiredType
            self.allowedParties = allowedParties
            self.requiresAuthorizedParty = requiresAuthorizedParty
            self.hmacSecrets = hmacSecrets
            self.maximumTokenLength = maximumTokenLength
            self.tokenCacheCapacity = tokenCacheCapacity
        }
    }

    /// The checks.
    package let configuration: Configuration
    /// Where keys come from.
    package let keySource: any JWKSSource
    /// The wall clock for `exp`, `nbf` and `iat`.
    package let now: @Sendable () -> Date
    let cache: VerifiedTokenCache?
    let cacheHits: Counter
    let cacheMisses: Counter
    let rules: TokenRules

    /// A verifier.
    ///
    /// - Parameters:
    ///   - configuration: What a token must satisfy.
    ///   - keySource: Where keys come from.
    ///   - now: The wall clock; the system's by default.
    ///   - metricsFactory: Where the cache's hits and misses go (`tokenkit_verifier_cache_lookups_total` with
    ///     `result` `hit` or `miss`); the bootstrapped swift-metrics backend by default.
    public init(
        configuration: Configuration, keySource: any JWKSSource,
        now: @escaping @Sendable () -> Date = AuthToken.systemNow,
        metricsFactory: any MetricsFactory = MetricsSystem.factory
    ) {
        cacheHits = Counter(
            label: "tokenkit_verifier_cache_lookups_total", dimensions: [("result", "hit")], factory: metricsFactory)
        cacheMisses = Counter(
            label: "tokenkit_verifier_cache_lookups_total", dimensions: [("result", "miss")], factory: metricsFactory)
        self.configuration = configuration
        self.keySource = keySource
        self.now = now
        // Without configured secrets, an HMAC token is refused before any lookup unless the source may hold
        // `oct` keys (so it cannot cause a fetch).
        rules = TokenRules(
            configuration, hmacConfigured: !configuration.hmacSecrets.isEmpty || Self.mayHoldSymmetricKeys(keySource))
        cache =
            configuration.tokenCacheCapacity > 0 ? VerifiedTokenCache(capacity: configuration.tokenCacheCapacity) : nil
    }

    /// Whether `source` may serve `oct` keys: a static set that has one, or a source of the app's own; never a
    /// remote set.
    private static func mayHoldSymmetricKeys(_ source: any JWKSSource) -> Bool {
        if source is RemoteJWKSSource { return false }
        if let source = source as? StaticJWKSSource { return source.keySet.keys.contains { $0.keyType == "oct" } }
        return true
    }

    /// How many verified tokens the cache holds.
    package var cachedTokenCount: Int { cache?.count ?? 0 }

    /// Verifies a token and returns its claims.
    ///
    /// - Parameter token: The compact JWS, without the `Bearer ` prefix.
    /// - Returns: The verified claims.
    /// - Throws: ``TokenVerificationError`` with the first check that failed.
    public func verify(_ token: String) async throws(TokenVerificationError) -> VerifiedClaims {
        #if DistributedTracing
            // One span per verification (never the token or a claim value in it), current while keys are looked
            // up, so a wait on a JWKS refresh is linked from the refresh's span.
            let span = startSpan("tokenkit.token.verify")
            defer { span.end() }
            span.attributes["tokenkit.verifier.issuer"] = configuration.issuer
            let result: Result<(VerifiedClaims, Bool?), TokenVerificationError> =
                await ServiceContext.$current.withValue(span.context) {
                    do throws(TokenVerificationError) {
                        return .success(try await verifyUntraced(token))
                    } catch {
                        return .failure(error)
                    }
                }
            switch result {
            case .success(let (claims, cacheHit)):
                if let cacheHit { span.attributes["tokenkit.verifier.cache"] = cacheHit ? "hit" : "miss" }
                return claims
            case .failure(let error):
                span.attributes["tokenkit.verifier.cache"] = "miss"
                span.attributes["error.type"] = error.reason
                span.setStatus(SpanStatus(code: .error))
                throw error
            }
        #else
            return try await verifyUntraced(token).claims
        #endif
    }

    /// ``verify(_:)`` without a span: the claims, and whether the verified-token cache answered (`nil` without a
    /// cache).
    private func verifyUntraced(
        _ token: String
    ) async throws(TokenVerificationError) -> (claims: VerifiedClaims, cacheHit: Bool?) {
        // The token's bytes are read in place (a native string's UTF-8 is contiguous), never copied.
        var token = token
        guard token.utf8.count <= configuration.maximumTokenLength else { throw .tokenTooLong }
        let now = now()
        var digest: SHA256Digest?
        var signingInput: (count: Int, hash: SHA256)?
        if let cache {
            let (tokenDigest, signingInputDigest) = token.withUTF8 { Self.digests(of: $0) }
            digest = tokenDigest
            signingInput = signingInputDigest
            if let entry = cache.entry(for: tokenDigest) {
                if entry.key.map(keySource.isPublished) ?? true {
                    // Every check but the clock's gave its answer when the entry was made, under these rules.
                    do throws(TokenVerificationError) {
                        try rules.checkTimes(entry.times, now: now)
                        cacheHits.increment()
                        return (entry.claims, true)
                    } catch {
                        cache.remove(tokenDigest)
                        throw error
                    }
                }
                // Its key has left the set: forget it, and verify from scratch (which looks the key up again).
                cache.remove(tokenDigest)
            }
            cacheMisses.increment()
        }

        let parsed: Result<CompactJWS, TokenVerificationError> = token.withUTF8 { bytes in
            do throws(TokenVerificationError) {
                return .success(try CompactJWS(bytes))
            } catch {
                return .failure(error)
            }
        }
        let jws = try parsed.get()
        let (algorithm, keyID) = try rules.checkHeader(jws.header)
        guard algorithm.signatureLengths.contains(jws.signature.count) else { throw .malformedToken }
        let times = try rules.checkClaims(jws.claims, now: now)

        var verifyingKey: JWK?
        if algorithm.family == .hmac, !configuration.hmacSecrets.isEmpty {
            // Only the secrets issued under the token's `kid` (or, without one, the secrets without one).
            var candidates = configuration.hmacSecrets.lazy.filter { $0.keyID == keyID }.makeIterator()
            guard var secret = candidates.next() else { throw keyID == nil ? .missingKeyID : .unknownKeyID }
            while true {
                guard secret.key.bitCount >= jws.signature.count * 8 else { throw .weakKey }
                let key = secret.key
                let valid = token.withUTF8 { bytes in
                    let input = UnsafeRawBufferPointer(
                        rebasing: UnsafeRawBufferPointer(bytes)[..<jws.signingInputCount])
                    return JWK.isValidHMAC(jws.signature, for: input, key: key, hash: algorithm.hash)
                }
                if valid { break }
                guard let next = candidates.next() else { throw .invalidSignature }
                secret = next
            }
        } else {
            let key = try await keySource.key(for: keyID, algorithm: algorithm)
            guard key.canVerify(algorithm) else { throw .keyAlgorithmMismatch }
            if case .symmetric(let secret) = key.material, secret.bitCount < jws.signature.count * 8 {
                throw .weakKey
            }
            // The SHA-256 of the signing input, when the cache key's hashing already computed it over these bytes.
            let inputSHA256 = signingInput.flatMap {
                $0.count == jws.signingInputCount && algorithm.hash == .sha256 ? $0.hash.finalize() : nil
            }
            let valid = token.withUTF8 { bytes in
                let input = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[..<jws.signingInputCount])
                return key.isValidSignature(jws.signature, for: input, algorithm: algorithm, inputSHA256: inputSHA256)
            }
            guard valid else { throw .invalidSignature }
            verifyingKey = key
        }

        let claims = VerifiedClaims(members: jws.claims, payload: jws.payload, algorithm: algorithm, keyID: keyID)
        if let cache, let digest { cache.insert(.init(claims: claims, key: verifyingKey, times: times), for: digest) }
        return (claims, cache == nil ? nil : false)
    }
    /// The SHA-256 of the whole token (the cache's key) and, when the token has two dots, its signing input's
    /// length (everything before the second dot) and a hash of it not yet finalized: one pass over the signing input
    /// serves both, where hashing the token and then the signing input for the signature check read it twice (about
    /// 7,000 instructions of an RS256 cache miss). A cache hit never finalizes the second.
    ///
    /// - Parameter token: The token's bytes.
    /// - Returns: The token's digest, and the signing input's length and running hash.
    static func digests(
        of token: UnsafeBufferPointer<UInt8>
    ) -> (token: SHA256Digest, signingInput: (count: Int, hash: SHA256)?) {
        let bytes = UnsafeRawBufferPointer(token)
        guard let first = dot(in: bytes, from: 0), let second = dot(in: bytes, from: first + 1) else {
            return (SHA256.hash(data: bytes), nil)
        }
        var signingInput = SHA256()
        signingInput.update(bufferPointer: UnsafeRawBufferPointer(rebasing: bytes[..<second]))
        var whole = signingInput
        whole.update(bufferPointer: UnsafeRawBufferPointer(rebasing: bytes[second...]))
        return (whole.finalize(), (second, signingInput))
    }

    /// The index of the first `.` at or after `start`, found by `memchr`.
    private static func dot(in bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        guard let base = bytes.baseAddress, start < bytes.count,
            let found = memchr(base + start, Int32(UInt8(ascii: ".")), bytes.count - start)
        else { return nil }
        return UnsafeRawPointer(found) - base
    }
}
