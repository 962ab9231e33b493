public import AuthToken
public import CoreMetrics
public import Crypto
public import Foundation

/// Verifies JWS compact tokens (JWTs) a backend receives: signature, algorithm, header and claims.
///
/// ```swift
/// let keys = RemoteJWKSSource(jwksURL: URL(string: "https://clerk.example.com/.well-known/jwks.json")!)
/// let verifier = TokenVerifier(
///     configuration: .init(issuer: "https://clerk.example.com"), keySource: keys)
/// let claims = try await verifier.verify(token)
/// print(claims.subject, claims.sessionID ?? "-")
/// ```
///
/// The order of the checks is part of the contract: the token's length and shape, its header (`alg` in the
/// allow-list and never `none`, no `crit`, no `jku`/`x5u`/`jwk`/`x5c`, a safe `kid`, the `typ`), the
/// signature's length and every claim are checked before a key is looked up, so a malformed, unsigned or
/// expired token never makes a ``JWKSSource`` fetch anything. The key must then match the algorithm by type,
/// curve and its own `alg`. HMAC tokens are checked against ``Configuration/hmacSecret`` only, never a key
/// from a key set.
///
/// A verified token is cached by the SHA-256 of the whole token (``Configuration/tokenCacheCapacity``): a
/// repeat is answered without a signature check while its claims still hold and its key is still published.
public struct TokenVerifier: Sendable {
    /// What a token must satisfy.
    public struct Configuration: Sendable {
        /// The exact `iss` every token must carry.
        public var issuer: String
        /// If set, `aud` must name at least one of these. Default `nil` (Clerk session tokens have no `aud`).
        public var audiences: Set<String>?
        /// The algorithms accepted. Default `[.rs256]`, as the diet-app backend asks. HMAC algorithms also
        /// need ``hmacSecret``.
        public var algorithms: Set<JWSAlgorithm>
        /// Tolerated clock difference for `exp`, `nbf`, `iat` and the token age. Default 5 seconds.
        public var leeway: Duration
        /// If set, `iat` is required and may be at most this long ago (plus the leeway). Default `nil`.
        public var maximumTokenAge: Duration?
        /// Claims that must be present, besides `sub` and `iss`, which always must. Default `["exp"]`.
        public var requiredClaims: Set<String>
        /// If set, the header's `typ` must be this media type, compared without letter case and with an
        /// optional `application/` prefix; use `"at+jwt"` for RFC 9068 access tokens. Default `nil`.
        public var requiredType: String?
        /// If set, an `azp` claim (Clerk's authorized party: the frontend origin) must be one of these; a token
        /// without `azp` passes. Default `nil`.
        public var allowedParties: Set<String>?
        /// The shared secret for `HS256`/`HS384`/`HS512`, which must also be in ``algorithms``. It must be at
        /// least as long as the hash (32, 48, 64 bytes). Default `nil`: no HMAC token is accepted.
        public var hmacSecret: SymmetricKey?
        /// The longest token accepted, in bytes. Default 16 KiB.
        public var maximumTokenLength: Int
        /// How many verified tokens to remember; 0 turns the cache off. Default 10,000.
        public var tokenCacheCapacity: Int

        /// A configuration; every parameter but `issuer` has a default.
        ///
        /// - Parameters:
        ///   - issuer: The exact `iss`.
        ///   - audiences: Accepted `aud` values, or `nil` to not check `aud`.
        ///   - algorithms: Accepted algorithms.
        ///   - leeway: Tolerated clock difference.
        ///   - maximumTokenAge: Maximum age by `iat`, or `nil`.
        ///   - requiredClaims: Claims that must be present.
        ///   - requiredType: The required `typ`, or `nil`.
        ///   - allowedParties: Accepted `azp` values, or `nil`.
        ///   - hmacSecret: The HMAC secret, or `nil`.
        ///   - maximumTokenLength: The longest token accepted.
        ///   - tokenCacheCapacity: The verified-token cache's size.
        public init(
            issuer: String, audiences: Set<String>? = nil, algorithms: Set<JWSAlgorithm> = [.rs256],
            leeway: Duration = .seconds(5), maximumTokenAge: Duration? = nil, requiredClaims: Set<String> = ["exp"],
            requiredType: String? = nil, allowedParties: Set<String>? = nil, hmacSecret: SymmetricKey? = nil,
            maximumTokenLength: Int = 16 * 1024, tokenCacheCapacity: Int = 10_000
        ) {
            self.issuer = issuer
            self.audiences = audiences
            self.algorithms = algorithms
            self.leeway = leeway
            self.maximumTokenAge = maximumTokenAge
            self.requiredClaims = requiredClaims
            self.requiredType = requiredType
            self.allowedParties = allowedParties
            self.hmacSecret = hmacSecret
            self.maximumTokenLength = maximumTokenLength
            self.tokenCacheCapacity = tokenCacheCapacity
        }
    }

    /// The checks.
    public let configuration: Configuration
    /// Where keys come from.
    public let keySource: any JWKSSource
    /// The wall clock for `exp`, `nbf` and `iat`.
    public let now: @Sendable () -> Date
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
        rules = TokenRules(configuration)
        cache =
            configuration.tokenCacheCapacity > 0 ? VerifiedTokenCache(capacity: configuration.tokenCacheCapacity) : nil
    }

    /// How many verified tokens the cache holds.
    public var cachedTokenCount: Int { cache?.count ?? 0 }

    /// Verifies a token and returns its claims.
    ///
    /// - Parameter token: The compact JWS, without the `Bearer ` prefix.
    /// - Returns: The verified claims.
    /// - Throws: ``TokenVerificationError`` with the first check that failed.
    public func verify(_ token: String) async throws(TokenVerificationError) -> VerifiedClaims {
        // The token's bytes are read in place (a native string's UTF-8 is contiguous), never copied.
        var token = token
        guard token.utf8.count <= configuration.maximumTokenLength else { throw .tokenTooLong }
        let now = now()
        var digest: SHA256Digest?
        if let cache {
            let tokenDigest = token.withUTF8 { SHA256.hash(data: UnsafeRawBufferPointer($0)) }
            digest = tokenDigest
            if let entry = cache.entry(for: tokenDigest) {
                if entry.key.map(keySource.isPublished) ?? true {
                    // Every check but the clock's gave its answer when the entry was made, under these rules.
                    do throws(TokenVerificationError) {
                        try rules.checkTimes(entry.times, now: now)
                        cacheHits.increment()
                        return entry.claims
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
        if algorithm.family == .hmac {
            guard let secret = configuration.hmacSecret else { throw .algorithmNotAllowed }
            guard secret.bitCount >= jws.signature.count * 8 else { throw .weakKey }
            let valid = token.withUTF8 { bytes in
                let input = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[..<jws.signingInputCount])
                switch algorithm.hash {
                case .sha256:
                    return HMAC<SHA256>.isValidAuthenticationCode(jws.signature, authenticating: input, using: secret)
                case .sha384:
                    return HMAC<SHA384>.isValidAuthenticationCode(jws.signature, authenticating: input, using: secret)
                case .sha512:
                    return HMAC<SHA512>.isValidAuthenticationCode(jws.signature, authenticating: input, using: secret)
                }
            }
            guard valid else { throw .invalidSignature }
        } else {
            let key = try await keySource.key(for: keyID, algorithm: algorithm)
            guard key.canVerify(algorithm) else { throw .keyAlgorithmMismatch }
            let valid = token.withUTF8 { bytes in
                let input = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[..<jws.signingInputCount])
                return key.isValidSignature(jws.signature, for: input, algorithm: algorithm)
            }
            guard valid else { throw .invalidSignature }
            verifyingKey = key
        }

        let claims = VerifiedClaims(members: jws.claims, payload: jws.payload, algorithm: algorithm, keyID: keyID)
        if let cache, let digest { cache.insert(.init(claims: claims, key: verifyingKey, times: times), for: digest) }
        return claims
    }
}
