public import AuthToken
import Crypto
public import Foundation

/// Checks DPoP proofs (RFC 9449 section 4.3) on a resource server, and spends each proof's `jti` once in a
/// ``DPoPReplayCache``.
///
/// ```swift
/// let proofs = DPoPVerifier(replayCache: InMemoryDPoPReplayCache())
/// let proof = try await proofs.verify(
///     proof: dpopHeader, method: "GET", uri: "https://api.example.com/orders",
///     accessToken: token, boundKeyThumbprint: claims.confirmationKeyThumbprint)
/// ```
///
/// A proof must be a compact JWS with `typ` `dpop+jwt`, an asymmetric `alg` from
/// ``Configuration/algorithms``, and a public `jwk` in its header (a private key is refused) whose key verifies
/// the signature; its `htm` and `htu` must name the request (the URIs compared after normalization, without
/// query and fragment); its `iat` must lie within ``Configuration/maximumAge`` in the past and
/// ``Configuration/leeway`` in the future; `ath` must be the hash of the access token presented with it; with
/// ``Configuration/nonces``, its `nonce` must be one this server issued. Only when every check passed, and the key
/// matched the token's `cnf.jkt`, is the `jti` spent. Most backends use it through a ``DPoPAuthenticator``.
public struct DPoPVerifier: Sendable {
    /// What a proof must satisfy.
    public struct Configuration: Sendable {
        /// The accepted signing algorithms; HMAC algorithms are ignored (a proof's key is public). Default ES256,
        /// ES384, EdDSA, PS256 and RS256.
        public var algorithms: Set<JWSAlgorithm>
        /// How long after its `iat` a proof is accepted (before the leeway); a negative value counts as zero.
        /// Default 60 seconds.
        public var maximumAge: Duration
        /// The tolerated clock difference, both ways: an `iat` this far in the future is accepted, and a proof this
        /// much older than ``maximumAge``; a negative value counts as zero. Default 5 seconds.
        public var leeway: Duration
        /// The server nonces every proof must carry, or `nil` (the default) to require none.
        public var nonces: DPoPNonces?
        /// The longest proof accepted, in bytes. Default 8 KiB (an RSA 4096 key fits).
        public var maximumProofLength: Int

        /// A configuration; every parameter has a default.
        ///
        /// - Parameters:
        ///   - algorithms: The accepted algorithms.
        ///   - maximumAge: How long after `iat` a proof is accepted.
        ///   - leeway: The tolerated clock difference.
        ///   - nonces: The server nonces to require, or `nil`.
        ///   - maximumProofLength: The longest proof accepted.
        public init(
            algorithms: Set<JWSAlgorithm> = [.es256, .es384, .edDSA, .ps256, .rs256],
            maximumAge: Duration = .seconds(60), leeway: Duration = .seconds(5), nonces: DPoPNonces? = nil,
            maximumProofLength: Int = 8 * 1024
        ) {
            self.algorithms = algorithms
            self.maximumAge = maximumAge
            self.leeway = leeway
            self.nonces = nonces
            self.maximumProofLength = maximumProofLength
        }
    }

    /// The checks.
    package let configuration: Configuration
    /// Where each `jti` is spent.
    package let replayCache: any DPoPReplayCache
    /// The server's wall clock, for `iat` and nonces.
    package let now: @Sendable () -> Date
    /// The accepted asymmetric algorithms, and their names as the `algs` of a challenge.
    let algorithms: Set<JWSAlgorithm>
    let algorithmNames: String
    private let maximumAgeSeconds: Double
    private let leewaySeconds: Double
    private let headers = ProofHeaderCache(capacity: 1_024)

    /// A verifier.
    ///
    /// - Parameters:
    ///   - configuration: What a proof must satisfy.
    ///   - replayCache: Where each `jti` is spent: ``InMemoryDPoPReplayCache`` for one process, a shared cache for
    ///     replicas.
    ///   - now: The wall clock; the system's by default.
    public init(
        configuration: Configuration = .init(), replayCache: any DPoPReplayCache,
        now: @escaping @Sendable () -> Date = AuthToken.systemNow
    ) {
        self.configuration = configuration
        self.replayCache = replayCache
        self.now = now
        algorithms = configuration.algorithms.filter { $0.family != .hmac && $0.family != .introspection }
        algorithmNames = algorithms.map(\.name).sorted().joined(separator: " ")
        // A negative age or leeway is taken as zero: the window never turns inside out.
        maximumAgeSeconds = max(0, Self.seconds(configuration.maximumAge))
        leewaySeconds = max(0, Self.seconds(configuration.leeway))
    }

    /// The nonce to send in `DPoP-Nonce` now, or `nil` without ``Configuration/nonces``.
    public var currentNonce: String? { configuration.nonces?.nonce(at: now()) }

    /// Checks a proof and spends its `jti`.
    ///
    /// - Parameters:
    ///   - proof: The `DPoP` header's value.
    ///   - method: The request's method, such as `GET`.
    ///   - uri: The request's absolute URI as the client addressed it (`https://api.example.com/orders`); query and
    ///     fragment are ignored.
    ///   - accessToken: The access token presented with the proof, whose hash `ath` must be; `nil` at a token
    ///     endpoint (then `ath` is not checked).
    ///   - boundKeyThumbprint: The `cnf.jkt` the access token is bound to, if any: the proof's key must have it.
    /// - Returns: The checked proof.
    /// - Throws: ``TokenVerificationError/invalidDPoPProof(_:)``, ``TokenVerificationError/useDPoPNonce``,
    ///   ``TokenVerificationError/dpopKeyMismatch``, ``TokenVerificationError/dpopProofReplayed``, or
    ///   ``TokenVerificationError/dpopReplayCacheUnavailable``.
    public func verify(
        proof: String, method: String, uri: String, accessToken: String?, boundKeyThumbprint: String?
    ) async throws(TokenVerificationError) -> DPoPProof {
        let now = now()
        let checked = try check(proof: proof, method: method, uri: uri, accessToken: accessToken, now: now)
        if let boundKeyThumbprint, boundKeyThumbprint != checked.keyThumbprint { throw .dpopKeyMismatch }
        try await spend(checked, now: now)
        return checked
    }

    /// Spends a checked proof's `jti`: the last step, once every other check passed.
    package func spend(_ proof: DPoPProof, now: Date) async throws(TokenVerificationError) {
        let first: Bool
        do {
            first = try await replayCache.spend(
                keyThumbprint: proof.keyThumbprint, jwtID: proof.jwtID, until: proof.expiry, now: now)
        } catch {
            throw .dpopReplayCacheUnavailable
        }
        guard first else { throw .dpopProofReplayed }
    }

    /// Every check of a proof but the replay cache's: header, claims, nonce and signature, cheapest first.
    package func check(
        proof: String, method: String, uri: String, accessToken: String?, now: Date
    ) throws(TokenVerificationError) -> DPoPProof {
        var proof = proof
        guard !proof.isEmpty, proof.utf8.count <= configuration.maximumProofLength else {
            throw .invalidDPoPProof("proof")
        }
        let split: Result<ProofParts, TokenVerificationError> = proof.withUTF8 { bytes in
            do throws(TokenVerificationError) {
                return .success(try ProofParts(bytes))
            } catch {
                return .failure(error)
            }
        }
        let jws = try split.get()
        let (algorithm, key) = try checkHeader(segment: jws.headerSegment)
        guard algorithm.signatureLengths.contains(jws.signature.count) else { throw .invalidDPoPProof("signature") }
        let claims = jws.claims

        guard case .string(let jti) = claims["jti"], !jti.isEmpty, jti.utf8.count <= 256 else {
            throw .invalidDPoPProof("jti")
        }
        guard case .string(let htm) = claims["htm"], htm == method else { throw .invalidDPoPProof("htm") }
        guard case .string(let htu) = claims["htu"], DPoPTargetURI.matches(htu, uri) else {
            throw .invalidDPoPProof("htu")
        }
        guard let iatValue = claims["iat"], let iat = NumericDate.seconds(iatValue) else {
            throw .invalidDPoPProof("iat")
        }
        let nowSeconds = now.timeIntervalSince1970
        guard iat - nowSeconds <= leewaySeconds, nowSeconds - iat <= maximumAgeSeconds + leewaySeconds else {
            throw .invalidDPoPProof("iat")
        }
        if let accessToken {
            guard case .string(let ath) = claims["ath"], ath == Self.accessTokenHash(accessToken) else {
                throw .invalidDPoPProof("ath")
            }
        }
        var nonce: String?
        if let value = claims["nonce"] {
            guard case .string(let text) = value else { throw .useDPoPNonce }
            nonce = text
        }
        if let nonces = configuration.nonces {
            guard let nonce, nonces.accepts(nonce, at: now) else { throw .useDPoPNonce }
        }

        let valid = proof.withUTF8 { bytes in
            let input = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(bytes)[..<jws.signingInputCount])
            return key.isValidSignature(jws.signature, for: input, algorithm: algorithm)
        }
        guard valid else { throw .invalidDPoPProof("signature") }
        // The entry lives as long as the proof could be accepted, and never less than now (a proof accepted at
        // the window's very edge is still refused if replayed at that same instant).
        let expiry = Date(timeIntervalSince1970: max(iat + maximumAgeSeconds + leewaySeconds, nowSeconds))
        return DPoPProof(
            algorithm: algorithm, keyThumbprint: key.thumbprint, jwtID: jti,
            issuedAt: Date(timeIntervalSince1970: iat), expiry: expiry, nonce: nonce)
    }

    /// The JWK members that only a private key has (RFC 7518 section 6): a header carrying one is refused.
    private static let privateMembers: Set<String> = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"]

    /// The header's algorithm and key: from the cache when this exact header passed before (a client sends the same
    /// header with every proof), else checked and then remembered.
    private func checkHeader(segment: String) throws(TokenVerificationError) -> (JWSAlgorithm, JWK) {
        if let known = headers.entry(for: segment) { return known }
        guard let json = Base64URL.decode(segment) else { throw .invalidDPoPProof("proof") }
        let parsed: Result<JSONValue, JSONParser.Failure> = json.withUnsafeBufferPointer { buffer in
            do throws(JSONParser.Failure) {
                return .success(try JSONParser.parse(buffer, rejectingDuplicateNames: true))
            } catch {
                return .failure(error)
            }
        }
        guard case .success(.object(let header)) = parsed else { throw .invalidDPoPProof("proof") }
        let checked = try checkHeader(header)
        headers.insert(checked, for: segment)
        return checked
    }

    /// `typ`, `alg`, `crit` and the embedded `jwk`.
    private func checkHeader(
        _ header: [String: JSONValue]
    ) throws(TokenVerificationError) -> (JWSAlgorithm, JWK) {
        guard case .string(let typ) = header["typ"], typ.lowercased() == "dpop+jwt" else {
            throw .invalidDPoPProof("typ")
        }
        guard case .string(let name) = header["alg"], let algorithm = JWSAlgorithm(name: name),
            algorithms.contains(algorithm)
        else { throw .invalidDPoPProof("alg") }
        guard header["crit"] == nil else { throw .invalidDPoPProof("crit") }
        guard case .object(let members) = header["jwk"],
            !members.keys.contains(where: Self.privateMembers.contains)
        else { throw .invalidDPoPProof("jwk") }
        let key: JWK
        do {
            key = try JWK(.object(members), allowsSymmetricKeys: false)
        } catch {
            throw .invalidDPoPProof("jwk")
        }
        guard key.canVerify(algorithm) else { throw .invalidDPoPProof("alg") }
        return (algorithm, key)
    }

    /// `ath`: the base64url SHA-256 of the access token's ASCII bytes (RFC 9449 section 4.2).
    ///
    /// - Parameter accessToken: The access token.
    /// - Returns: Its hash as a proof names it.
    package static func accessTokenHash(_ accessToken: String) -> String {
        var accessToken = accessToken
        // Hashed in place: a native string's UTF-8 is contiguous.
        return Base64URL.encode(accessToken.withUTF8 { SHA256.hash(data: UnsafeRawBufferPointer($0)) })
    }

    /// A proof split at its two dots: the header segment as sent, the decoded claims and signature, and the length of
    /// the signing input.
    private struct ProofParts {
        let headerSegment: String
        let claims: [String: JSONValue]
        let signature: [UInt8]
        let signingInputCount: Int

        init(_ bytes: UnsafeBufferPointer<UInt8>) throws(TokenVerificationError) {
            let dot = UInt8(ascii: ".")
            guard let first = bytes.firstIndex(of: dot), first > 0,
                let second = bytes[(first + 1)...].firstIndex(of: dot), second > first + 1,
                let payload = Base64URL.decode(UnsafeBufferPointer(rebasing: bytes[(first + 1)..<second])),
                let signature = Base64URL.decode(UnsafeBufferPointer(rebasing: bytes[(second + 1)...]))
            else { throw .invalidDPoPProof("proof") }
            let parsed: Result<JSONValue, JSONParser.Failure> = payload.withUnsafeBufferPointer { buffer in
                do throws(JSONParser.Failure) {
                    return .success(try JSONParser.parse(buffer, rejectingDuplicateNames: true))
                } catch {
                    return .failure(error)
                }
            }
            guard case .success(.object(let claims)) = parsed else { throw .invalidDPoPProof("proof") }
            headerSegment = String(decoding: UnsafeBufferPointer(rebasing: bytes[..<first]), as: UTF8.self)
            self.claims = claims
            self.signature = signature
            signingInputCount = second
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
