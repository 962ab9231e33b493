import AuthToken
import Foundation
import Testing
import TokenKitLogCheck

@Suite(.logLeakCheck()) struct JWTParsingTests {
    @Test func readsRegisteredAndCustomClaimsWithTheirTypes() throws {
        let payload = #"""
            {"sub":"u1","iss":"https://issuer.example","aud":["api","web"],"jti":"id-1","exp":1700000000.5,
             "iat":1699996400,"nbf":1699996400,"name":"Zo\u00eb \ud83d\ude00","admin":true,"level":3,
             "ratio":0.25,"roles":["a","b"],"org":{"id":7,"tags":[]},"nothing":null,"esc":"a\"b\\c\/d\n"}
            """#
        let claims = try JWT(parsing: JWTFixtures.token(payloadJSON: payload)).claims
        #expect(claims.subject == "u1")
        #expect(claims.issuer == "https://issuer.example")
        #expect(claims.audience == ["api", "web"])
        #expect(claims.jwtID == "id-1")
        #expect(claims.expiration == Date(timeIntervalSince1970: 1_700_000_000.5))
        #expect(claims.issuedAt == Date(timeIntervalSince1970: 1_699_996_400))
        #expect(claims.notBefore == Date(timeIntervalSince1970: 1_699_996_400))
        #expect(claims.string("name") == "Zoë 😀")
        #expect(claims.bool("admin") == true)
        #expect(claims.integer("level") == 3)
        #expect(claims.number("ratio") == 0.25)
        #expect(claims.integer("ratio") == nil)
        #expect(claims.array("roles") == [.string("a"), .string("b")])
        #expect(claims.object("org") == ["id": .integer(7), "tags": .array([])])
        #expect(claims["nothing"] == .null)
        #expect(claims.string("esc") == "a\"b\\c/d\n")
        #expect(claims.string("admin") == nil)
    }

    @Test func audienceMayBeASingleString() throws {
        let claims = try JWT(parsing: JWTFixtures.token(payloadJSON: #"{"aud":"api"}"#)).claims
        #expect(claims.audience == ["api"])
    }

    @Test func acceptsPaddedSegments() throws {
        let header = Data(#"{"alg":"none"}"#.utf8).base64EncodedString()  // padded, no URL-unsafe characters
        let payload = Data(#"{"sub":"ab"}"#.utf8).base64EncodedString()
        #expect(header.hasSuffix("=") || payload.hasSuffix("="))
        let jwt = try JWT(parsing: "\(header).\(payload).")
        #expect(jwt.claims.subject == "ab")
        #expect(jwt.header.algorithm == "none")
        #expect(jwt.hasEmptySignature)
    }

    @Test func decodesClaimsIntoYourOwnType() throws {
        struct Claims: Decodable { let sub: String; let level: Int }
        let claims = try JWT(parsing: JWTFixtures.token(payloadJSON: #"{"sub":"u","level":2}"#)).claims
        let decoded = try claims.decode(Claims.self)
        #expect(decoded.sub == "u" && decoded.level == 2)
    }

    @Test func duplicateClaimNamesKeepTheLastValue() throws {
        let claims = try JWT(parsing: JWTFixtures.token(payloadJSON: #"{"sub":"first","sub":"last"}"#)).claims
        #expect(claims.subject == "last")
    }

    @Test func dateClaimsOfTheWrongTypeAreErrorsNotCrashes() throws {
        let claims = try JWT(parsing: JWTFixtures.token(payloadJSON: #"{"exp":"NaN","iat":-5,"nbf":1e300}"#)).claims
        #expect(throws: AuthTokenError.invalidClaim("exp")) { try claims.date("exp") }
        #expect(throws: AuthTokenError.invalidClaim("iat")) { try claims.date("iat") }
        #expect(throws: AuthTokenError.invalidClaim("nbf")) { try claims.date("nbf") }
        #expect(claims.expiration == nil)
        #expect(try claims.date("missing") == nil)
    }
}
