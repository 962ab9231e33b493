import AuthToken
import Foundation
import Testing
import TokenKitCompatibility
import TokenKitLogCheck

@Suite(.logLeakCheck()) struct AuthTokenExpiryTests {
    let received = Date(timeIntervalSince1970: 1_000_000)

    @Test func lifetimeIsMeasuredFromReceiptNotFromTheDeviceClockAgainstExp() {
        // The server's clock says exp is at 2_000_060, but the device received the token at 1_000_000 (its
        // clock runs 1_000_000 s behind). exp - iat = 60 s, so the token lives until received + 60.
        let jwt = JWTFixtures.token(iat: 2_000_000, exp: 2_000_060)
        let token = AuthToken.withParsedExpiration(
            accessToken: jwt, refreshToken: "refresh-token-r", receivedAt: received)
        #expect(token.lifetime == 60)
        #expect(token.expiresAt == received.addingTimeInterval(60))
        #expect(token.expirationClaim == Date(timeIntervalSince1970: 2_000_060))
        #expect(!token.isExpired(at: received.addingTimeInterval(30)))
        #expect(token.isExpired(at: received.addingTimeInterval(60)))
    }

    @Test func expiresInWinsOverTheJWTClaims() {
        let jwt = JWTFixtures.token(iat: 0, exp: 3600)
        let token = AuthToken.withParsedExpiration(
            accessToken: jwt, refreshToken: nil, expiresIn: 120, receivedAt: received)
        #expect(token.expiresAt == received.addingTimeInterval(120))
    }

    @Test func aJWTWithExpOnlyComparesExpWithTheLocalClock() {
        let token = AuthToken.withParsedExpiration(
            accessToken: JWTFixtures.token(exp: 1_003_600), refreshToken: nil, receivedAt: received)
        #expect(token.lifetime == nil)
        #expect(token.expiresAt == Date(timeIntervalSince1970: 1_003_600))
        #expect(token.secondsUntilExpiration(at: received) == 3600)
    }

    /// Option B of the analysis: two stored strings, `exp` parsed when needed. The receipt time is unknown, so
    /// `exp - iat` must not start a fresh lifetime now: a JWT that expired in 2023 is expired.
    @Test func aTokenRebuiltFromStoredStringsTakesItsExpiryFromExpAgainstTheClock() {
        let expiredIn2023 = JWTFixtures.token(iat: 1_690_000_000, exp: 1_690_003_600)
        let rebuilt = AuthToken.withParsedExpiration(accessToken: expiredIn2023, refreshToken: "refresh-token-r")
        #expect(rebuilt.lifetime == nil)
        #expect(rebuilt.expiresAt == Date(timeIntervalSince1970: 1_690_003_600))
        #expect(rebuilt.isExpired)
        #expect(!rebuilt.isValid)
        #expect(rebuilt.validate().contains(.expired))

        let restored = AuthToken.withParsedExpiration(
            accessToken: JWTFixtures.token(iat: 999_000, exp: 1_000_600), refreshToken: "refresh-token-r",
            restoredAt: received)
        #expect(restored.expiresAt == Date(timeIntervalSince1970: 1_000_600))
        #expect(!restored.isExpired(at: received))
        #expect(restored.isExpired(at: received.addingTimeInterval(600)))
        #expect(restored.validate(now: received.addingTimeInterval(601)) == [.expired])
        #expect(restored.validate(now: received).isEmpty)
    }

    @Test func aTokenFreshFromAnEndpointKeepsItsReceiptRelativeLifetime() {
        // The same JWT, received now from an endpoint: exp - iat from receipt, whatever the device clock says.
        let jwt = JWTFixtures.token(iat: 1_690_000_000, exp: 1_690_003_600)
        let fresh = AuthToken.withParsedExpiration(accessToken: jwt, refreshToken: nil, receivedAt: received)
        #expect(fresh.lifetime == 3600)
        #expect(!fresh.isExpired(at: received.addingTimeInterval(60)))
    }

    @Test func anOpaqueTokenWithExpiresInWorksTheSameWay() {
        let token = AuthToken.withParsedExpiration(
            accessToken: "opaque-abc", refreshToken: "refresh-token-r", expiresIn: 3600, receivedAt: received)
        #expect(token.secondsUntilExpiration(at: received.addingTimeInterval(600)) == 3000)
        #expect(token.isValid(at: received.addingTimeInterval(600)))
        #expect(!token.willExpireSoon(at: received.addingTimeInterval(600)))
        #expect(token.willExpireSoon(at: received.addingTimeInterval(3600 - 309)))
        #expect(token.isExpired(at: received.addingTimeInterval(3600 - 10)))
        #expect(!token.isExpired(at: received.addingTimeInterval(3600 - 11)))
    }

    @Test func aTokenWithNoExpiryIsNeverExpiredAndValidateSaysSo() {
        let token = AuthToken(accessToken: "opaque-access-token", refreshToken: "refresh-token-r", receivedAt: received)
        let farFuture = received.addingTimeInterval(10 * 365 * 86_400)
        #expect(token.expiresAt == nil)
        #expect(!token.isExpired(at: farFuture))
        #expect(!token.willExpireSoon(at: farFuture))
        #expect(token.secondsUntilExpiration(at: farFuture) == nil)
        #expect(token.isValid(at: farFuture))
        #expect(token.validate(now: farFuture) == [.expirationUnknown])
    }

    /// A 5-minute threshold on a 60-second token would mean "refresh on every call".
    @Test(arguments: [60.0, 300.0, 3600.0, 86_400.0])
    func aShortLivedTokenIsNotExpiringSoonForItsFirstHalf(lifetime: TimeInterval) {
        let token = AuthToken(accessToken: "access-token-a", receivedAt: received, lifetime: lifetime)
        #expect(!token.willExpireSoon(at: received))
        #expect(!token.willExpireSoon(at: received.addingTimeInterval(lifetime * 0.5)))
        #expect(token.willExpireSoon(at: received.addingTimeInterval(lifetime - min(lifetime * 0.1, 100))))
        #expect(!token.isExpired(at: received.addingTimeInterval(lifetime * 0.85)))
    }

    @Test func theMarginsScaleWithLifetime() {
        let policy = ExpiryPolicy()
        #expect(policy.effectiveLeeway(lifetime: 60) == 6)
        #expect(policy.effectiveRefreshThreshold(lifetime: 60) == 20)
        #expect(policy.effectiveRefreshThreshold(lifetime: 900) == 300)
        #expect(policy.effectiveLeeway(lifetime: 3600) == 10)
        #expect(policy.effectiveRefreshThreshold(lifetime: 3600) == 300)
        #expect(policy.effectiveLeeway(lifetime: nil) == 10)
        #expect(policy.effectiveRefreshThreshold(lifetime: nil) == 300)
        #expect(ExpiryPolicy.fixed.effectiveRefreshThreshold(lifetime: 60) == 300)
        #expect(ExpiryPolicy.fixed.effectiveLeeway(lifetime: 60) == 10)
    }

    /// Restored from storage, the receipt time is unknown: the margins must not be scaled by the time left
    /// (which made a token rebuilt 4 minutes before expiry "not soon" until its last seconds).
    @Test(arguments: [240.0, 60.0, 5.0])
    func aTokenWithAnUnknownLifetimeGetsTheFixedMargins(secondsLeft: TimeInterval) {
        let now = received
        let expiry = Int(now.timeIntervalSince1970 + secondsLeft)
        let rebuilt = [
            AuthToken.withParsedExpiration(
                accessToken: JWTFixtures.token(exp: expiry), refreshToken: "refresh-token-r", restoredAt: now),
            AuthToken(
                accessToken: "opaque-access-token", refreshToken: "refresh-token-r",
                expiresAt: now.addingTimeInterval(secondsLeft), receivedAt: now),
        ]
        for token in rebuilt {
            #expect(token.willExpireSoon(at: now))
            #expect(token.isExpired(at: now) == (secondsLeft <= 10))
        }
    }

    /// `exp - iat` is the whole lifetime even when the receipt time is unknown: a 60-second JWT rebuilt from
    /// storage gets the scaled margins, and the fixed policy turns scaling off.
    @Test func aRestoredJWTWithIssuedAtKeepsItsScaledMarginsUnlessThePolicyIsFixed() {
        let token = AuthToken.withParsedExpiration(
            accessToken: JWTFixtures.token(iat: 1_000_000, exp: 1_000_060), refreshToken: "refresh-token-r",
            restoredAt: received)
        #expect(token.lifetime == nil)
        #expect(!token.willExpireSoon(at: received.addingTimeInterval(30)))
        #expect(token.willExpireSoon(at: received.addingTimeInterval(40)))
        #expect(token.willExpireSoon(at: received, policy: .fixed))
        #expect(!token.isExpired(at: received.addingTimeInterval(50)))
        #expect(token.isExpired(at: received.addingTimeInterval(50), policy: .fixed))
    }

    /// A JWT with `exp` alone, fresh from an endpoint: from receipt to `exp` is its lifetime for the margins,
    /// also after a round trip through TokenKit's encoding (a store), so a 60-second token is not refreshed on
    /// every call.
    @Test func aFreshJWTWithExpOnlyScalesItsMarginsAlsoAfterARoundTrip() throws {
        let token = AuthToken.withParsedExpiration(
            accessToken: JWTFixtures.token(exp: 1_000_060), refreshToken: nil, receivedAt: received)
        let decoded = try JSONDecoder().decode(AuthToken.self, from: JSONEncoder().encode(token))
        for token in [token, decoded] {
            #expect(token.lifetime == nil)
            #expect(!token.willExpireSoon(at: received))
            #expect(!token.willExpireSoon(at: received.addingTimeInterval(30)))
            #expect(token.willExpireSoon(at: received.addingTimeInterval(40)))
        }
    }

    @Test func negativeOrNonFiniteLifetimesAreIgnored() {
        #expect(AuthToken(accessToken: "access-token-a", receivedAt: received, lifetime: -1).lifetime == nil)
        #expect(AuthToken(accessToken: "access-token-a", receivedAt: received, lifetime: .infinity).lifetime == nil)
        #expect(AuthToken(accessToken: "access-token-a", receivedAt: received, lifetime: .nan).lifetime == nil)
    }
}

@Suite(.logLeakCheck()) struct AuthTokenValidationTests {
    let now = Date(timeIntervalSince1970: 1_000_000)

    @Test func aGoodTokenHasNoProblems() {
        let token = AuthToken.withParsedExpiration(
            accessToken: JWTFixtures.token(iat: 1_000_000, exp: 1_003_600, nbf: 1_000_000),
            refreshToken: "refresh-token-r",
            receivedAt: now)
        #expect(token.validate(now: now, requireRefreshToken: true).isEmpty)
    }

    @Test func everyProblemIsReportedAtOnce() {
        let jwt = JWTFixtures.token(payloadJSON: #"{"iat":1000100,"nbf":1000100}"#)
        let token = AuthToken(accessToken: jwt, refreshToken: "", receivedAt: now)
        #expect(token.validate(now: now) == [.missingExpiration, .notYetValid, .issuedInFuture, .emptyRefreshToken])
    }

    @Test func iatAndNbfWithinTheLeewayAreAccepted() {
        let jwt = JWTFixtures.token(iat: 1_000_005, exp: 1_003_600, nbf: 1_000_005)
        let token = AuthToken.withParsedExpiration(accessToken: jwt, refreshToken: "refresh-token-r", receivedAt: now)
        #expect(token.validate(now: now).isEmpty)
    }

    @Test func reportsExpiredEmptyAndMissingRefresh() {
        #expect(AuthToken(accessToken: "", receivedAt: now).validate(now: now) == [.emptyAccessToken])
        let expired = AuthToken(accessToken: "opaque-access-token", receivedAt: now, lifetime: 60)
        #expect(
            expired.validate(now: now.addingTimeInterval(61), requireRefreshToken: true) == [
                .expired, .missingRefreshToken,
            ])
    }

    @Test func aNonNumericExpIsNamed() {
        let jwt = JWTFixtures.token(payloadJSON: #"{"exp":"tomorrow"}"#)
        let token = AuthToken(accessToken: jwt, receivedAt: now)
        #expect(token.validate(now: now) == [.invalidClaim("exp")])
    }
}
