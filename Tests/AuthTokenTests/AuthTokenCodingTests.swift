import AuthToken
import Foundation
import Testing
import TokenKitCompatibility
import TokenKitLogCheck

@Suite(.logLeakCheck()) struct AuthTokenCodingTests {
    @Test func codableRoundTripsExactly() throws {
        let token = AuthToken(
            accessToken: JWTFixtures.token(iat: 1, exp: 61), refreshToken: "refresh-1", tokenType: "DPoP",
            scope: "read write", receivedAt: Date(timeIntervalSince1970: 1_763_700_000.123_456_7), lifetime: 60.25,
            expirationClaim: Date(timeIntervalSince1970: 61))
        let decoded = try JSONDecoder().decode(AuthToken.self, from: JSONEncoder().encode(token))
        #expect(decoded == token)
        #expect(decoded.hashValue == token.hashValue)
        #expect(decoded.receivedAt == token.receivedAt)
    }

    @Test func optionalFieldsRoundTripAsAbsent() throws {
        let token = AuthToken(accessToken: "opaque-access-token", receivedAt: Date(timeIntervalSince1970: 5))
        let decoded = try JSONDecoder().decode(AuthToken.self, from: JSONEncoder().encode(token))
        #expect(decoded == token)
        #expect(decoded.refreshToken == nil && decoded.lifetime == nil && decoded.scope == nil)
    }

    @Test func equalityComparesWhatATokenIsNotWhenItWasRead() {
        let expiry = Date(timeIntervalSince1970: 1_800_000_900)
        let readFirst = AuthToken(
            accessToken: "equal-access", refreshToken: "equal-refresh", expiresAt: expiry,
            receivedAt: Date(timeIntervalSince1970: 1_800_000_000))
        let readLater = AuthToken(
            accessToken: "equal-access", refreshToken: "equal-refresh", expiresAt: expiry,
            receivedAt: Date(timeIntervalSince1970: 1_800_000_100))
        #expect(readFirst == readLater)
        #expect(readFirst.hashValue == readLater.hashValue)
        // The same expiry learned from a lifetime counted from receipt.
        let fresh = AuthToken(
            accessToken: "equal-access", refreshToken: "equal-refresh", receivedAt: expiry.addingTimeInterval(-900),
            lifetime: 900)
        #expect(fresh == readFirst)
        #expect(fresh.hashValue == readFirst.hashValue)

        let differentExpiry = AuthToken(
            accessToken: "equal-access", refreshToken: "equal-refresh", expiresAt: expiry.addingTimeInterval(1))
        let differentRefresh = AuthToken(accessToken: "equal-access", refreshToken: "other-refresh", expiresAt: expiry)
        let differentScope = AuthToken(
            accessToken: "equal-access", refreshToken: "equal-refresh", scope: "read",
            receivedAt: expiry.addingTimeInterval(-900), lifetime: 900)
        #expect(differentExpiry != readFirst && differentRefresh != readFirst && differentScope != readFirst)
    }

    @Test func replacingTheRefreshTokenKeepsEverythingElse() {
        let token = AuthToken(
            accessToken: "coding-access", refreshToken: "old-refresh-token", receivedAt: Date(timeIntervalSince1970: 5),
            lifetime: 9)
        let replaced = token.replacingRefreshToken("new-refresh-token")
        #expect(replaced.refreshToken == "new-refresh-token")
        #expect(
            replaced.accessToken == "coding-access" && replaced.lifetime == 9 && replaced.receivedAt == token.receivedAt
        )
    }
}

/// No token text in any description, mirror, dump or error.
@Suite(.logLeakCheck()) struct RedactionTests {
    static let accessSecret = JWTFixtures.token(sub: "secret-subject", iat: 1, exp: 61)
    static let refreshSecret = "refresh-SECRET-value-123"
    let token = AuthToken.withParsedExpiration(
        accessToken: accessSecret, refreshToken: refreshSecret, receivedAt: Date(timeIntervalSince1970: 0))

    /// Distinctive pieces of each secret; none may appear in any rendering.
    func assertNoSecret(in text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let pieces = Self.accessSecret.split(separator: ".").map(String.init) + [Self.refreshSecret, "secret-subject"]
        for piece in pieces {
            #expect(!text.contains(piece), "a secret leaked into a rendering", sourceLocation: sourceLocation)
        }
    }

    @Test func everyRenderingIsRedacted() {
        var dumped = ""
        dump(token, to: &dumped)
        let renderings = [
            token.description, token.debugDescription, token.sanitizedDescription, "\(token)",
            String(reflecting: token),
            dumped, "\(Mirror(reflecting: token).children.map { "\($0.label ?? ""): \($0.value)" })",
            "\([token])", "\(Optional(token) as Any)",
        ]
        for text in renderings { assertNoSecret(in: text) }
        #expect(token.sanitizedDescription.contains(token.fingerprint))
        #expect(token.sanitizedDescription.contains("1970-01-01T00:01:00Z"))
    }

    @Test func errorsNeverContainTheToken() {
        let broken = AuthToken(
            accessToken: Self.accessSecret + "!", refreshToken: "", receivedAt: Date(timeIntervalSince1970: 99))
        let problems = broken.validate(now: Date(timeIntervalSince1970: 99))
        #expect(!problems.isEmpty)
        for error in problems {
            assertNoSecret(in: "\(error)")
            assertNoSecret(in: String(reflecting: error))
        }
    }

    @Test func fingerprintsAreStableShortAndDistinct() {
        #expect(AuthToken.fingerprint("abc") == AuthToken.fingerprint("abc"))
        #expect(AuthToken.fingerprint("abc") != AuthToken.fingerprint("abd"))
        #expect(AuthToken.fingerprint("").count == 8)
    }
}
