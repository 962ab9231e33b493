import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenVerification

/// The fetching key source: one shared fetch, the unknown-kid cooldown, cache lifetimes, stale serving,
/// the timeout and discovery, all on a manual clock.
@Suite(.logLeakCheck()) struct RemoteJWKSSourceTests {
    /// A token valid for the whole test, whatever the clock does.
    static func longLived(_ kid: String = "rsa-1", key: JWSAlgorithm = .rs256) -> String {
        TestKeys.token(key, kid: kid, payload: TestKeys.claims(exp: "1800090000"))
    }

    /// A token of a sound shape with an unknown `kid` and a junk signature. Not registered with the log leak
    /// check: it carries no credential, and 10,000 registered values would slow every later search.
    static func junk(kid: String) -> String {
        let header = TestKeys.base64URL(#"{"alg":"RS256","kid":"\#(kid)"}"#)
        let payload = TestKeys.base64URL(TestKeys.claims(exp: "1800090000"))
        return header + "." + payload + "." + TestKeys.base64URL([UInt8](repeating: 7, count: 256))
    }

    static func setUp(
        _ fetcher: ScriptedFetcher, configuration: RemoteJWKSSource.Configuration = .init()
    ) -> (RemoteJWKSSource, TokenVerifier, ManualClock) {
        let clock = ManualClock()
        let source = RemoteJWKSSource(
            jwksURL: ScriptedFetcher.url, configuration: configuration, clock: clock, fetch: fetcher.fetch)
        var verifierConfiguration = TokenVerifier.Configuration(
            issuer: TestKeys.issuer, audience: TestKeys.noAudience, algorithms: JWSAlgorithm.asymmetric)
        verifierConfiguration.tokenCacheCapacity = 0
        return (source, TestKeys.verifier(verifierConfiguration, source: source, clock: clock), clock)
    }

    @Test func concurrentVerifiersShareOneFetch() async throws {
        let fetcher = ScriptedFetcher([TestKeys.allJWKS])
        let (_, verifier, _) = Self.setUp(fetcher)
        fetcher.hold()
        let token = Self.longLived()
        let results = Task {
            await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<200 { group.addTask { (try? await verifier.verify(token)) != nil } }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
        }
        #expect(await eventually { fetcher.count == 1 })
        for _ in 0..<1_000 { await Task.yield() }
        fetcher.release()
        #expect(await results.value == 200)
        #expect(fetcher.count == 1)
    }

    @Test func tenThousandRandomUnknownKidsCauseAtMostOneFetch() async throws {
        let fetcher = ScriptedFetcher([TestKeys.allJWKS])
        let (source, verifier, clock) = Self.setUp(fetcher)
        let valid = Self.longLived()
        _ = try await verifier.verify(valid)
        #expect(fetcher.count == 1)
        clock.advance(by: .seconds(31))  // past the cooldown: one refetch is allowed
        let tokens = (0..<10_000).map { _ in Self.junk(kid: "kid-\(UInt64.random(in: 0...UInt64.max))") }
        let (refused, verified) = await withTaskGroup(of: (Int, Int).self) { group in
            for (index, token) in tokens.enumerated() {
                group.addTask {
                    do {
                        _ = try await verifier.verify(token)
                        return (0, 0)
                    } catch {
                        guard (error as? TokenVerificationError) == .unknownKeyID else { return (0, 0) }
                        // Interleave valid tokens: they keep verifying.
                        if index % 100 == 0 { return (1, (try? await verifier.verify(valid)) != nil ? 1 : 0) }
                        return (1, 0)
                    }
                }
            }
            return await group.reduce((0, 0)) { ($0.0 + $1.0, $0.1 + $1.1) }
        }
        #expect(refused == 10_000)
        #expect(verified == 100)
        #expect(fetcher.count <= 2)
        #expect(source.fetchCount == fetcher.count)
    }

    @Test func anUnknownKidRefetchesOncePerCooldown() async throws {
        let fetcher = ScriptedFetcher([TestKeys.allJWKS])
        let (_, verifier, clock) = Self.setUp(fetcher)
        _ = try await verifier.verify(Self.longLived())
        clock.advance(by: .seconds(1))
        await #expect(throws: TokenVerificationError.unknownKeyID) { try await verifier.verify(Self.junk(kid: "a")) }
        #expect(fetcher.count == 1)
        clock.advance(by: .seconds(30))
        await #expect(throws: TokenVerificationError.unknownKeyID) { try await verifier.verify(Self.junk(kid: "b")) }
        #expect(fetcher.count == 2)
        await #expect(throws: TokenVerificationError.unknownKeyID) { try await verifier.verify(Self.junk(kid: "c")) }
        #expect(fetcher.count == 2)
    }

    @Test func aNewKeyIsPickedUpByTheRefetch() async throws {
        let rotated = TestKeys.jwks([TestKeys.rsaJWK(alg: nil), TestKeys.rsaJWK(TestKeys.rsa2, kid: "rsa-2", alg: nil)])
        let fetcher = ScriptedFetcher([TestKeys.allJWKS, rotated])
        let (_, verifier, clock) = Self.setUp(fetcher)
        _ = try await verifier.verify(Self.longLived())
        clock.advance(by: .seconds(31))
        let input =
            TestKeys.base64URL(#"{"alg":"RS256","kid":"rsa-2"}"#) + "."
            + TestKeys.base64URL(TestKeys.claims(exp: "1800090000"))
        let token = TestKeys.register(
            input + "." + TestKeys.base64URL(TestKeys.sign(Array(input.utf8), algorithm: .rs256, rsaKey: TestKeys.rsa2))
        )
        #expect(try await verifier.verify(token).keyID == "rsa-2")
        #expect(fetcher.count == 2)
    }

    @Test func aKnownKidNeverWaitsBehindARefetch() async throws {
        let fetcher = ScriptedFetcher([TestKeys.allJWKS])
        let (_, verifier, clock) = Self.setUp(fetcher)
        let valid = Self.longLived()
        _ = try await verifier.verify(valid)
        clock.advance(by: .seconds(31))
        fetcher.hold()
        let unknown = Task { try await verifier.verify(Self.junk(kid: "new")) }
        #expect(await eventually { fetcher.count == 2 })
        // The refetch is held: known kids verify meanwhile, and other unknown ones join the refetch.
        for _ in 0..<10 { #expect(try await verifier.verify(valid).subject == "user_2abc") }
        fetcher.release()
        await #expect(throws: TokenVerificationError.unknownKeyID) { try await unknown.value }
        #expect(fetcher.count == 2)
    }

    @Test func maxAgeIsHonouredWithinBoundsAndRefreshedAhead() async throws {
        // max-age 5 s is raised to the 60 s minimum; the background refresh starts 30 s in (half the lifetime).
        let fetcher = ScriptedFetcher([TestKeys.allJWKS], maxAge: .seconds(5))
        let (source, verifier, clock) = Self.setUp(fetcher)
        let valid = Self.longLived()
        _ = try await verifier.verify(valid)
        clock.advance(by: .seconds(29))
        _ = try await verifier.verify(valid)
        #expect(fetcher.count == 1)
        clock.advance(by: .seconds(2))
        _ = try await verifier.verify(valid)
        #expect(await eventually { fetcher.count == 2 })
        #expect(await eventually { source.currentKeySet != nil })
        #expect(RemoteJWKSSource.maxAge(cacheControl: "public, max-age=300, must-revalidate") == .seconds(300))
        #expect(RemoteJWKSSource.maxAge(cacheControl: "no-store") == .zero)
        #expect(RemoteJWKSSource.maxAge(cacheControl: "public") == nil)
        #expect(RemoteJWKSSource.maxAge(cacheControl: "max-age=-1") == nil)
    }

    @Test func aLongMaxAgeIsCappedAtTheMaximum() async throws {
        // max-age of ten days is cut to the 24-hour maximum; the refresh starts a minute before that.
        let fetcher = ScriptedFetcher([TestKeys.allJWKS], maxAge: .seconds(864_000))
        let (_, verifier, clock) = Self.setUp(fetcher)
        let valid = TestKeys.token(.es256, payload: TestKeys.claims(exp: "1800200000"))
        _ = try await verifier.verify(valid)
        clock.advance(by: .seconds(86_400 - 61))
        _ = try await verifier.verify(valid)
        #expect(fetcher.count == 1)
        clock.advance(by: .seconds(2))
        _ = try await verifier.verify(valid)
        #expect(await eventually { fetcher.count == 2 })
    }

    @Test func theLastGoodKeysServeWhileTheEndpointIsDownForABoundedTime() async throws {
        let fetcher = ScriptedFetcher(steps: [.document(TestKeys.allJWKS, maxAge: nil), .failure])
        let (source, verifier, clock) = Self.setUp(fetcher)
        let valid = Self.longLived()
        _ = try await verifier.verify(valid)
        clock.advance(by: .seconds(601))  // stale: a background refresh starts, and fails
        _ = try await verifier.verify(valid)
        #expect(await eventually { fetcher.count == 2 })
        #expect(await eventually { source.fetchCount == 2 && source.currentKeySet != nil })
        clock.advance(by: .seconds(3_000))  // still inside the hour of staleness
        _ = try await verifier.verify(valid)
        clock.advance(by: .seconds(700))  // past it
        await #expect(throws: TokenVerificationError.keySetUnavailable) { try await verifier.verify(valid) }
        #expect(source.currentKeySet == nil)
    }

    @Test func aColdFailureIsNotRetriedOnEveryRequest() async throws {
        let fetcher = ScriptedFetcher(steps: [.failure, .failure, .document(TestKeys.allJWKS, maxAge: nil)])
        let (_, verifier, clock) = Self.setUp(fetcher)
        let valid = Self.longLived()
        await #expect(throws: TokenVerificationError.keySetUnavailable) { try await verifier.verify(valid) }
        await #expect(throws: TokenVerificationError.keySetUnavailable) { try await verifier.verify(valid) }
        #expect(fetcher.count == 1)
        clock.advance(by: .seconds(5))
        await #expect(throws: TokenVerificationError.keySetUnavailable) { try await verifier.verify(valid) }
        clock.advance(by: .seconds(5))
        _ = try await verifier.verify(valid)
        #expect(fetcher.count == 3)
    }

    @Test func aSlowFetchTimesOut() async throws {
        let fetcher = ScriptedFetcher([TestKeys.allJWKS])
        let (_, verifier, clock) = Self.setUp(fetcher)
        fetcher.hold()
        let valid = Self.longLived()
        let attempt = Task { try await verifier.verify(valid) }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(5))
        await #expect(throws: TokenVerificationError.fetchTimedOut) { try await attempt.value }
        fetcher.release()
    }

    @Test func skippedKeysDoNotSpoilTheSet() async throws {
        let document = TestKeys.jwks([#"{"kty":"RSA","kid":"bad","n":"AQAB","e":"AQAB"}"#, TestKeys.rsaJWK()])
        let (source, verifier, _) = Self.setUp(ScriptedFetcher([document]))
        _ = try await verifier.verify(Self.longLived())
        #expect(source.currentKeySet?.skipped.map(\.reason) == ["rsaModulusTooSmall"])
    }

    @Test func aTooLargeDocumentIsRefused() async {
        var configuration = RemoteJWKSSource.Configuration()
        configuration.limits.maximumBytes = 100
        let (_, verifier, _) = Self.setUp(ScriptedFetcher([TestKeys.allJWKS]), configuration: configuration)
        await #expect(throws: TokenVerificationError.keySetTooLarge) { try await verifier.verify(Self.longLived()) }
    }

    static func discovery(
        issuer: String = TestKeys.issuer, jwksURI: String = ScriptedFetcher.url.absoluteString
    ) -> Data {
        Data(
            #"{"issuer":"\#(issuer)","jwks_uri":"\#(jwksURI)","id_token_signing_alg_values_supported":["RS256"]}"#.utf8)
    }

    static func discoveringVerifier(_ fetcher: ScriptedFetcher) -> TokenVerifier {
        let clock = ManualClock()
        let source = RemoteJWKSSource(
            location: .openIDDiscovery(issuer: URL(string: TestKeys.issuer)!), clock: clock, fetch: fetcher.fetch)
        return TestKeys.verifier(source: source, clock: clock)
    }

    @Test func openIDDiscoveryFindsTheJWKS() async throws {
        let fetcher = ScriptedFetcher(steps: [.document(TestKeys.allJWKS, maxAge: nil)], discovery: Self.discovery())
        let verifier = Self.discoveringVerifier(fetcher)
        _ = try await verifier.verify(Self.longLived())
        _ = try await verifier.verify(Self.longLived("ec-1", key: .es256))
        #expect(fetcher.discoveryCount == 1)
        #expect(fetcher.count == 1)
    }

    @Test(arguments: [
        discovery(issuer: "https://evil.example"), discovery(jwksURI: "http://evil.example/jwks.json"),
        discovery(jwksURI: "file:///etc/passwd"), Data("{}".utf8),
    ])
    func aDiscoveryDocumentThatDoesNotFitIsRefused(_ document: Data) async {
        let fetcher = ScriptedFetcher(steps: [.document(TestKeys.allJWKS, maxAge: nil)], discovery: document)
        await #expect(throws: TokenVerificationError.keySetInvalid) {
            try await Self.discoveringVerifier(fetcher).verify(Self.longLived())
        }
        #expect(fetcher.count == 0)
    }
}
