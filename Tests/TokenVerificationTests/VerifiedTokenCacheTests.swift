import Foundation
import MetricsTestKit
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenVerification

/// A repeated token is answered from the cache (no key lookup, no signature check) until it expires or its
/// key leaves the set; the cache is bounded.
@Suite(.logLeakCheck()) struct VerifiedTokenCacheTests {
    @Test func aRepeatedTokenIsVerifiedOnce() async throws {
        let source = CountingSource(StaticJWKSSource(TestKeys.keySet()))
        let verifier = TestKeys.verifier(source: source)
        let token = TestKeys.token(.rs256)
        for _ in 0..<5 { #expect(try await verifier.verify(token).subject == "user_2abc") }
        #expect(source.lookups == 1)
        #expect(verifier.cachedTokenCount == 1)
        // A different token (same claims, another algorithm) is another entry.
        _ = try await verifier.verify(TestKeys.token(.es256))
        #expect(source.lookups == 2)
        #expect(verifier.cachedTokenCount == 2)
    }

    @Test func cacheHitsAndMissesAreCounted() async throws {
        let metrics = TestMetrics()
        let verifier = TokenVerifier(
            configuration: .init(
                issuer: TestKeys.issuer, audience: TestKeys.noAudience, algorithms: JWSAlgorithm.asymmetric),
            keySource: StaticJWKSSource(TestKeys.keySet()), now: ManualClock().wallClock, metricsFactory: metrics)
        for _ in 0..<4 { _ = try await verifier.verify(TestKeys.token(.rs256)) }
        let label = "tokenkit_verifier_cache_lookups_total"
        #expect(metrics.counterTotal(label: label, dimensions: [("result", "miss")]) == 1)
        #expect(metrics.counterTotal(label: label, dimensions: [("result", "hit")]) == 3)
    }

    @Test func aCachedTokenExpiresWithItsClaims() async throws {
        let clock = ManualClock()
        let source = CountingSource(StaticJWKSSource(TestKeys.keySet()))
        let verifier = TestKeys.verifier(source: source, clock: clock)
        let token = TestKeys.token(.rs256)
        _ = try await verifier.verify(token)
        clock.advance(by: .seconds(66))
        await #expect(throws: TokenVerificationError.expired) { try await verifier.verify(token) }
        #expect(verifier.cachedTokenCount == 0)
        #expect(source.lookups == 1)
    }

    @Test func aCachedTokenAgesOutWithTheMaximumAge() async throws {
        let clock = ManualClock()
        let source = CountingSource(StaticJWKSSource(TestKeys.keySet()))
        var configuration = TokenVerifier.Configuration(
            issuer: TestKeys.issuer, audience: TestKeys.noAudience, algorithms: JWSAlgorithm.asymmetric)
        configuration.maximumTokenAge = .seconds(30)
        let verifier = TestKeys.verifier(configuration, source: source, clock: clock)
        let token = TestKeys.token(.rs256)
        _ = try await verifier.verify(token)
        clock.advance(by: .seconds(30))
        _ = try await verifier.verify(token)  // 31 s old: inside the 5 s leeway
        clock.advance(by: .seconds(10))
        // Still before `exp` (60 s), but too old: refused from the cache, without a lookup.
        await #expect(throws: TokenVerificationError.tokenTooOld) { try await verifier.verify(token) }
        #expect(verifier.cachedTokenCount == 0)
        #expect(source.lookups == 1)
    }

    @Test func anHMACTokenIsCachedToo() async throws {
        let source = CountingSource(StaticJWKSSource(TestKeys.keySet()))
        let verifier = TestKeys.verifier(
            .init(
                issuer: TestKeys.issuer, audience: TestKeys.noAudience, algorithms: [.hs256],
                hmacSecrets: TestKeys.hmacSecrets), source: source)
        let token = TestKeys.token(.hs256)
        for _ in 0..<3 { #expect(try await verifier.verify(token).algorithm == .hs256) }
        #expect(verifier.cachedTokenCount == 1)
        #expect(source.lookups == 0)
    }

    @Test func theCacheIsBounded() async throws {
        var configuration = TokenVerifier.Configuration(
            issuer: TestKeys.issuer, audience: TestKeys.noAudience, algorithms: JWSAlgorithm.asymmetric)
        configuration.tokenCacheCapacity = 3
        let verifier = TestKeys.verifier(configuration)
        for index in 0..<10 {
            _ = try await verifier.verify(TestKeys.token(.edDSA, payload: TestKeys.claims(#","n":\#(index)"#)))
        }
        #expect(verifier.cachedTokenCount == 3)
    }

    @Test func theCacheCanBeTurnedOff() async throws {
        var configuration = TokenVerifier.Configuration(issuer: TestKeys.issuer, audience: TestKeys.noAudience)
        configuration.tokenCacheCapacity = 0
        let source = CountingSource(StaticJWKSSource(TestKeys.keySet()))
        let verifier = TestKeys.verifier(configuration, source: source)
        let token = TestKeys.token(.rs256)
        for _ in 0..<3 { _ = try await verifier.verify(token) }
        #expect(source.lookups == 3)
        #expect(verifier.cachedTokenCount == 0)
    }

    @Test func aCachedTokenWhoseKeyLeftTheSetIsVerifiedAgain() async throws {
        let clock = ManualClock()
        let fetcher = ScriptedFetcher([TestKeys.allJWKS, TestKeys.jwks([TestKeys.p256JWK()])])
        let source = RemoteJWKSSource(jwksURL: ScriptedFetcher.url, clock: clock, fetch: fetcher.fetch)
        let verifier = TestKeys.verifier(source: source, clock: clock)
        let rsaToken = TestKeys.token(.rs256)
        let ecToken = TestKeys.token(.es256)
        _ = try await verifier.verify(rsaToken)
        _ = try await verifier.verify(ecToken)
        await source.refresh()
        await #expect(throws: TokenVerificationError.unknownKeyID) { try await verifier.verify(rsaToken) }
        _ = try await verifier.verify(ecToken)
        #expect(verifier.cachedTokenCount == 1)
    }
}
