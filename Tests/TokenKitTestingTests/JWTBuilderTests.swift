import AuthToken
import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTesting

@Suite(.logLeakCheck()) struct JWTBuilderTests {
    @Test func aBuiltTokenCarriesItsClaimsForAClientToRead() throws {
        let jwt = JWTBuilder.token(claims: #"{"sub":"user-1","exp":1800000900,"iat":1800000000}"#)
        TestSecrets.shared.register(jwt, as: .accessToken)
        let token = AuthToken.withParsedExpiration(
            accessToken: jwt, refreshToken: nil, receivedAt: Date(timeIntervalSince1970: 1_800_000_000))
        let claims = try #require(token.claims)
        #expect(claims.subject == "user-1")
        #expect(token.expiresAt == Date(timeIntervalSince1970: 1_800_000_900))
    }

    @Test func theSegmentsAreBase64URLWithoutPadding() {
        let jwt = JWTBuilder.token(
            claims: #"{"a":"??>"}"#, header: #"{"alg":"HS256","typ":"JWT"}"#, signature: Data("signature".utf8))
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3)
        #expect(parts[0] == "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9")
        #expect(parts[1] == "eyJhIjoiPz8-In0")
        #expect(parts[2] == "c2lnbmF0dXJl")
        #expect(JWTBuilder.token(claims: "{}").hasSuffix("."), "no signature by default")
    }
}
