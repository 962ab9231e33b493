// Token verification: TokenVerification's TokenVerifier against vapor/jwt-kit 5's verify of the same token and
// key, against the bare swift-crypto signature check, and against the system OpenSSL (libcrypto, the design
// card's libssl-dev) doing the same signature check, for RS256 (2048-bit) and ES256, in one run.
// Targets: a first verification at least 2x faster than jwt-kit and within 1.25x of the bare
// swift-crypto check; a repeat through the verified-token cache at least 20x faster than jwt-kit.
import BenchmarkSupport
import COpenSSLCrypto
import Crypto
import Foundation
import JWTKit
import Synchronization
import TokenKitTesting
import TokenVerification
import _CryptoExtras

func base64URL<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
    Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}

/// The token's facts, as statics (not top-level variables, which would be main-actor isolated).
enum Fixture {
    static let issuer = "https://clerk.bench.example.com"
    static let now = Int(Date().timeIntervalSince1970)
    /// A Clerk session token's claims: issued now, valid for a day (so the run never crosses `exp`).
    static let payload = #"""
        {"azp":"https://app.example.com","exp":\#(now + 86_400),"iat":\#(now),"iss":"\#(issuer)",\#
        "nbf":\#(now - 10),"sid":"sess_2bench9xyzABCDEFGHIJKLMN","sub":"user_2benchABCDEFGHIJKLMNOPQ",\#
        "jti":"8f14e45fceea467a95756b3c2c8f1a2d","role":"member"}
        """#
}

struct BenchPayload: JWTPayload {
    var iss: IssuerClaim
    var sub: SubjectClaim
    var exp: ExpirationClaim
    var sid: String
    var azp: String
    // Fair to jwt-kit: it checks what TokenVerifier checks (exp and iss; the signature it checks itself).
    func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
        guard iss.value == Fixture.issuer else {
            throw JWTError.claimVerificationFailure(failedClaim: iss, reason: "iss")
        }
    }
}

struct Case {
    let name: String
    let algorithm: TokenVerification.JWSAlgorithm
    let token: String
    let jwks: String
    /// The signing input and the raw signature, decoded once: what the bare checks get.
    let signingInput: [UInt8]
    let signature: [UInt8]
    let swiftCryptoCheck: () -> Bool
    /// The same check through the system OpenSSL: SPKI DER and DER (ECDSA) or raw (RSA) signature.
    let publicKeyDER: [UInt8]
    let openSSLSignature: [UInt8]
    /// Tokens like `token` (same header, same claims but each its own `jti`, same length), each signed: a
    /// verifier whose cache is smaller than this list misses on every one of them, in a cycle.
    let freshTokens: [String]
}

/// `Fixture.payload` with the `jti` of token `index` (32 hex digits, as the fixture's).
func payload(jti index: Int) -> String {
    Fixture.payload.replacingOccurrences(
        of: "8f14e45fceea467a95756b3c2c8f1a2d", with: String(repeating: "0", count: 24) + String(format: "%08x", index))
}

func makeCase(_ algorithm: TokenVerification.JWSAlgorithm, freshTokens count: Int = 0) throws -> Case {
    let kid = algorithm == .rs256 ? "bench-rsa-2026" : "bench-ec-2026"
    let header = #"{"alg":"\#(algorithm.name)","typ":"JWT","kid":"\#(kid)"}"#
    let signingInput = base64URL(Array(header.utf8)) + "." + base64URL(Array(Fixture.payload.utf8))
    let input = Array(signingInput.utf8)
    let fresh = (0..<count).map { base64URL(Array(header.utf8)) + "." + base64URL(Array(payload(jti: $0).utf8)) }
    if algorithm == .rs256 {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let signature = try key.signature(for: input, padding: .insecurePKCS1v1_5)
        let primitives = try key.publicKey.getKeyPrimitives()
        let jwk =
            #"{"kty":"RSA","use":"sig","alg":"RS256","kid":"\#(kid)","n":"\#(base64URL(primitives.modulus))","#
            + #""e":"\#(base64URL(primitives.publicExponent))"}"#
        let publicKey = key.publicKey
        let raw = Array(signature.rawRepresentation)
        return Case(
            name: "RS256", algorithm: algorithm, token: signingInput + "." + base64URL(raw),
            jwks: #"{"keys":[\#(jwk)]}"#, signingInput: input, signature: raw,
            swiftCryptoCheck: {
                publicKey.isValidSignature(
                    _RSA.Signing.RSASignature(rawRepresentation: raw), for: input, padding: .insecurePKCS1v1_5)
            },
            publicKeyDER: Array(publicKey.derRepresentation), openSSLSignature: raw,
            freshTokens: try fresh.map {
                $0 + "."
                    + base64URL(try key.signature(for: Array($0.utf8), padding: .insecurePKCS1v1_5).rawRepresentation)
            })
    } else {
        let key = P256.Signing.PrivateKey()
        let signature = try key.signature(for: input)
        let point = Array(key.publicKey.x963Representation.dropFirst())
        let jwk =
            #"{"kty":"EC","crv":"P-256","use":"sig","alg":"ES256","kid":"\#(kid)","#
            + #""x":"\#(base64URL(point[..<32]))","y":"\#(base64URL(point[32...]))"}"#
        let publicKey = key.publicKey
        let raw = Array(signature.rawRepresentation)
        return Case(
            name: "ES256", algorithm: algorithm, token: signingInput + "." + base64URL(raw),
            jwks: #"{"keys":[\#(jwk)]}"#, signingInput: input, signature: raw,
            swiftCryptoCheck: {
                guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: raw) else { return false }
                return publicKey.isValidSignature(signature, for: input)
            },
            publicKeyDER: Array(publicKey.derRepresentation), openSSLSignature: Array(signature.derRepresentation),
            freshTokens: try fresh.map {
                $0 + "." + base64URL(try key.signature(for: Array($0.utf8)).rawRepresentation)
            })
    }
}

/// An EVP_PKEY from SPKI DER, and one EVP_DigestVerify per call (a fresh context each time, as a verifier does).
final class OpenSSLVerifier {
    let key: OpaquePointer

    init(der: [UInt8]) {
        key = der.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            return d2i_PUBKEY(nil, &pointer, buffer.count)!
        }
    }

    deinit { EVP_PKEY_free(key) }

    func verify(signature: [UInt8], input: [UInt8]) -> Bool {
        let context = EVP_MD_CTX_new()
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else { return false }
        return EVP_DigestVerify(context, signature, signature.count, input, input.count) == 1
    }
}

/// Measures one algorithm and prints its lines; returns whether every target was met.
///
/// `@concurrent` and with local state only: the loops run on the global executor, as a server's request
/// handlers do, so no figure includes a hop to the main actor (which top-level code and its closures are on).
@concurrent func measure(_ algorithm: TokenVerification.JWSAlgorithm, iterations: Int) async throws -> Bool {
    var sink = 0
    var allPassed = true
    let bench = try makeCase(algorithm, freshTokens: 1_500)
    let keySet = try JWKSet(json: Data(bench.jwks.utf8))
    let configuration = { (capacity: Int) in
        TokenVerifier.Configuration(
            issuer: Fixture.issuer, audience: .notChecked(reason: "Clerk-style session tokens"),
            algorithms: [algorithm], requiredClaims: ["exp", "sub"],
            tokenCacheCapacity: capacity)
    }
    // No cache: every call is a first verification (parse, header and claim checks, key lookup, signature).
    let uncached = TokenVerifier(configuration: configuration(0), keySource: StaticJWKSSource(keySet))
    let cached = TokenVerifier(configuration: configuration(1_000), keySource: StaticJWKSSource(keySet))
    // The cache on and every token new: the lookup that misses, the signature check, and the insert (evicting).
    let missing = TokenVerifier(configuration: configuration(1_000), keySource: StaticJWKSSource(keySet))
    var next = 0
    let keys = JWTKeyCollection()
    try await keys.add(jwksJSON: bench.jwks)
    let openSSL = OpenSSLVerifier(der: bench.publicKeyDER)

    // Every side must accept the token, or the comparison means nothing.
    for token in bench.freshTokens { _ = try await missing.verify(token) }
    let ours = try await uncached.verify(bench.token)
    let theirs = try await keys.verify(bench.token, as: BenchPayload.self)
    precondition(ours.subject == theirs.sub.value && ours.sessionID == theirs.sid)
    precondition(bench.swiftCryptoCheck())
    precondition(openSSL.verify(signature: bench.openSSLSignature, input: bench.signingInput))
    _ = try await cached.verify(bench.token)

    // Interleaved rounds: the machine's load drifts (CI shares its cores), so every variant is measured in
    // every round and each figure is the median over rounds; a ratio then compares like with like.
    var rounds: [[Double]] = []
    for _ in 0..<15 {
        let first = try await Harness.nanosecondsPerOperation(samples: 3, iterations: iterations) {
            sink &+= try await uncached.verify(bench.token).members.count
        }
        let repeated = try await Harness.nanosecondsPerOperation(samples: 3, iterations: iterations * 10) {
            sink &+= try await cached.verify(bench.token).members.count
        }
        let jwtKit = try await Harness.nanosecondsPerOperation(samples: 3, iterations: iterations) {
            sink &+= try await keys.verify(bench.token, as: BenchPayload.self).sid.utf8.count
        }
        let swiftCrypto = Harness.nanosecondsPerOperation(samples: 3, iterations: iterations) {
            sink &+= bench.swiftCryptoCheck() ? 1 : 0
        }
        let openSSLCheck = Harness.nanosecondsPerOperation(samples: 3, iterations: iterations) {
            sink &+= openSSL.verify(signature: bench.openSSLSignature, input: bench.signingInput) ? 1 : 0
        }
        let miss = try await Harness.nanosecondsPerOperation(samples: 3, iterations: iterations) {
            sink &+= try await missing.verify(bench.freshTokens[next]).members.count
            next = (next + 1) % bench.freshTokens.count
        }
        rounds.append([first, repeated, jwtKit, swiftCrypto, openSSLCheck, miss])
    }
    let figures = (0..<6).map { column in Harness.median(rounds.map { $0[column] }) }
    let (first, repeated, jwtKit, swiftCrypto, openSSLCheck, miss) = (
        figures[0], figures[1], figures[2], figures[3], figures[4], figures[5]
    )

    print("-- \(bench.name): token \(bench.token.utf8.count) bytes")
    print("TokenVerifier first verification (no cache)   \(Harness.format(first))")
    print("TokenVerifier cache miss (every token new)    \(Harness.format(miss))")
    print("TokenVerifier repeat (verified-token cache)   \(Harness.format(repeated))")
    print("jwt-kit 5 JWTKeyCollection.verify              \(Harness.format(jwtKit))")
    print("bare swift-crypto signature check              \(Harness.format(swiftCrypto))")
    print(
        "bare OpenSSL \(OPENSSL_VERSION_MAJOR).\(OPENSSL_VERSION_MINOR) EVP_DigestVerify        \(Harness.format(openSSLCheck))"
    )
    let versusJWTKit = jwtKit / first
    allPassed =
        Harness.report(
            "\(bench.name) first verification vs jwt-kit 5", String(format: "%.2fx faster", versusJWTKit),
            target: ">= 2x faster", passed: versusJWTKit >= 2) && allPassed
    let versusBare = first / swiftCrypto
    allPassed =
        Harness.report(
            "\(bench.name) first verification vs bare swift-crypto check", String(format: "%.2fx its time", versusBare),
            target: "<= 1.25x", passed: versusBare <= 1.25) && allPassed
    let missVersusJWTKit = jwtKit / miss
    allPassed =
        Harness.report(
            "\(bench.name) cache miss vs jwt-kit 5", String(format: "%.2fx faster", missVersusJWTKit),
            target: ">= 2x faster", passed: missVersusJWTKit >= 2) && allPassed
    let missVersusBare = miss / swiftCrypto
    allPassed =
        Harness.report(
            "\(bench.name) cache miss vs bare swift-crypto check", String(format: "%.2fx its time", missVersusBare),
            target: "<= 1.25x", passed: missVersusBare <= 1.25) && allPassed
    let cacheVersusJWTKit = jwtKit / repeated
    allPassed =
        Harness.report(
            "\(bench.name) cached repeat vs jwt-kit 5", String(format: "%.0fx faster", cacheVersusJWTKit),
            target: ">= 20x faster", passed: cacheVersusJWTKit >= 20) && allPassed
    print(
        String(
            format: "info  \(bench.name) OpenSSL signature check vs swift-crypto's: %.2fx its time (no target)",
            openSSLCheck / swiftCrypto))
    if sink == 42 { print("") }
    return allPassed
}

/// The `p`-quantile (0...1) of `values`, nearest rank.
func quantile(_ values: [Double], _ p: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
}

/// Sequential verifications of `token` for `time`; each one's latency in nanoseconds.
@concurrent func latencies(_ verifier: TokenVerifier, _ token: String, for time: Duration) async throws -> [Double] {
    var latencies: [Double] = []
    latencies.reserveCapacity(100_000)
    let end = ContinuousClock.now + time
    while ContinuousClock.now < end {
        let start = DispatchTime.now().uptimeNanoseconds
        _ = try await verifier.verify(token)
        latencies.append(Double(DispatchTime.now().uptimeNanoseconds - start))
    }
    return latencies
}

/// The third target: 10,000 tokens with random unknown `kid`s within one second cause at most one JWKS
/// fetch, while valid tokens' median and p99 latency stay within 2x of their baseline (the same loop, same
/// verifier, without the flood). Valid tokens are first verifications (no token cache), the costly path. The
/// unknown `kid`s arrive in 100 bursts of 100 concurrent requests, one burst every 10 ms, starting past the
/// refetch cooldown so one refetch is allowed; the fetch answers after 20 ms, as a network round trip would.
@concurrent func measureUnknownKidFlood(rounds: Int) async throws -> Bool {
    let bench = try makeCase(.rs256)
    let clock = ManualClock()
    let jwks = Data(bench.jwks.utf8)
    let source = RemoteJWKSSource(
        jwksURL: URL(string: "\(Fixture.issuer)/.well-known/jwks.json")!, clock: clock,
        fetch: { _ in
            try await Task.sleep(for: .milliseconds(20))
            return .init(body: jwks)
        })
    let verifier = TokenVerifier(
        configuration: .init(
            issuer: Fixture.issuer, audience: .notChecked(reason: "Clerk-style session tokens"), algorithms: [.rs256],
            requiredClaims: ["exp", "sub"], tokenCacheCapacity: 0),
        keySource: source)
    _ = try await verifier.verify(bench.token)  // the first fetch
    let parts = bench.token.split(separator: ".")
    let junkSignature = base64URL([UInt8](repeating: 7, count: 256))

    let token = bench.token

    var baseline: [Double] = []
    var flooded: [Double] = []
    var fetches: [Int] = []
    var refusedAll = true
    for _ in 0..<rounds {
        baseline += try await latencies(verifier, token, for: .seconds(1))
        clock.advance(by: .seconds(31))  // past the unknown-kid cooldown: one refetch is allowed
        let tokens = (0..<10_000).map { _ in
            base64URL(Array(#"{"alg":"RS256","typ":"JWT","kid":"kid-\#(UInt64.random(in: 0...UInt64.max))"}"#.utf8))
                + "." + parts[1] + "." + junkSignature
        }
        let fetchesBefore = source.fetchCount
        let valid = Task { try await latencies(verifier, token, for: .seconds(1)) }
        let start = ContinuousClock.now
        var refused = 0
        for burst in 0..<100 {
            try await Task.sleep(until: start + .milliseconds(10 * burst), clock: .continuous)
            refused += await withTaskGroup(of: Int.self) { group in
                for token in tokens[(burst * 100)..<(burst * 100 + 100)] {
                    group.addTask {
                        do {
                            _ = try await verifier.verify(token)
                            return 0
                        } catch {
                            return (error as? TokenVerificationError) == .unknownKeyID ? 1 : 0
                        }
                    }
                }
                return await group.reduce(0, +)
            }
        }
        flooded += try await valid.value
        fetches.append(source.fetchCount - fetchesBefore)
        refusedAll = refusedAll && refused == 10_000
    }
    let (baseMedian, baseP99) = (quantile(baseline, 0.5), quantile(baseline, 0.99))
    let (floodMedian, floodP99) = (quantile(flooded, 0.5), quantile(flooded, 0.99))
    print("-- unknown-kid flood (RS256, \(rounds) rounds of 1 s baseline + 1 s flood)")
    print("valid tokens alone:       median \(Harness.format(baseMedian)), p99 \(Harness.format(baseP99))")
    print("valid tokens in the flood: median \(Harness.format(floodMedian)), p99 \(Harness.format(floodP99))")
    var passed = Harness.report(
        "10,000 unknown kids in one second: JWKS fetches per round",
        "\(fetches)" + (refusedAll ? "" : " (not all refused)"),
        target: "<= 1 per round", passed: refusedAll && fetches.allSatisfy { $0 <= 1 })
    passed =
        Harness.report(
            "valid-token median latency in the flood vs alone", String(format: "%.2fx", floodMedian / baseMedian),
            target: "<= 2x", passed: floodMedian / baseMedian <= 2) && passed
    passed =
        Harness.report(
            "valid-token p99 latency in the flood vs alone", String(format: "%.2fx", floodP99 / baseP99),
            target: "<= 2x", passed: floodP99 / baseP99 <= 2) && passed
    return passed
}

/// Marks the start of the measured loop: `Benchmarks/callgrind` counts from here (`--dump-before`), so the random
/// key generation and signing before it, whose cost varies from run to run, stay out of the figure.
@inline(never) @_optimize(none) func callgrindMark() {}

/// `VerifyBenchmarks --loop <RS256|ES256> <first|miss|cached|bare|jwtkit> <count>`: one path in a loop, nothing printed
/// but the time, for `perf record -g` or callgrind (`Benchmarks/callgrind verify`) on the release executable.
@concurrent func loop(_ algorithm: TokenVerification.JWSAlgorithm, path: String, count: Int) async throws {
    let bench = try makeCase(algorithm, freshTokens: path == "miss" ? 1_500 : 0)
    let keySet = try JWKSet(json: Data(bench.jwks.utf8))
    let verifier = TokenVerifier(
        configuration: .init(
            issuer: Fixture.issuer, audience: .notChecked(reason: "Clerk-style session tokens"),
            algorithms: [algorithm], requiredClaims: ["exp", "sub"],
            tokenCacheCapacity: path == "cached" || path == "miss" ? 1_000 : 0),
        keySource: StaticJWKSSource(keySet))
    let keys = JWTKeyCollection()
    try await keys.add(jwksJSON: bench.jwks)
    var sink = 0
    /// The process's CPU time, which a loaded machine's descheduling does not inflate.
    func cpuNanoseconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
        return Double(time.tv_sec) * 1e9 + Double(time.tv_nsec)
    }
    // A miss fills the cache first, so that every measured call (up to 500 of them) misses and evicts.
    if path == "miss" {
        for token in bench.freshTokens[..<1_000] { sink &+= try await verifier.verify(token).members.count }
    }
    callgrindMark()
    let cpuStart = cpuNanoseconds()
    let start = DispatchTime.now().uptimeNanoseconds
    for index in 0..<count {
        if path == "bare" {
            sink &+= bench.swiftCryptoCheck() ? 1 : 0
        } else if path == "jwtkit" {
            sink &+= try await keys.verify(bench.token, as: BenchPayload.self).sid.utf8.count
        } else if path == "miss" {
            sink &+= try await verifier.verify(bench.freshTokens[(1_000 + index) % bench.freshTokens.count]).members
                .count
        } else {
            sink &+= try await verifier.verify(bench.token).members.count
        }
    }
    let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(count)
    let cpu = (cpuNanoseconds() - cpuStart) / Double(count)
    print("\(bench.name) \(path): \(Harness.format(elapsed)) per call, CPU \(Harness.format(cpu)) (\(sink % 2))")
}

/// Runs `body` on the global executor and blocks the main thread until it is done. The top-level code therefore has
/// no `await`, so `main` is synchronous and the main thread never parks in `dispatch_main`, whose `sigsuspend`
/// valgrind 3.19 cannot follow (callgrind aborted at start-up). Every measured path was `@concurrent` already.
func runBlocking(_ body: @escaping @Sendable () async throws -> Void) {
    let done = DispatchSemaphore(value: 0)
    let failure = Mutex<(any Error)?>(nil)
    Task.detached {
        do { try await body() } catch { failure.withLock { $0 = error } }
        done.signal()
    }
    done.wait()
    if let error = failure.withLock({ $0 }) { fatalError("VerifyBenchmarks: \(error)") }
}

let arguments = CommandLine.arguments
if arguments.count == 5, arguments[1] == "--loop", let count = Int(arguments[4]) {
    runBlocking { try await loop(arguments[2] == "ES256" ? .es256 : .rs256, path: arguments[3], count: count) }
    exit(0)
}

runBlocking {
    var allPassed = true
    for algorithm in [TokenVerification.JWSAlgorithm.rs256, .es256] {
        allPassed = try await measure(algorithm, iterations: 400) && allPassed
    }
    allPassed = try await measureUnknownKidFlood(rounds: 3) && allPassed
    if !allPassed { print("VerifyBenchmarks: at least one target missed (see MISS lines)") }
}
