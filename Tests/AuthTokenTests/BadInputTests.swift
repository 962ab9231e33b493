import AuthToken
import Foundation
import Testing
import TokenKitCompatibility
import TokenKitLogCheck

/// Every malformed input gives a typed error naming the part and the reason: never a crash or a hang.
@Suite(.logLeakCheck()) struct BadInputTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let token: String
        let expected: AuthTokenError
        var testDescription: String { name }
    }

    static let header = JWTFixtures.base64URL(#"{"alg":"HS256"}"#)
    static let payload = JWTFixtures.base64URL(#"{"sub":"x"}"#)

    static let cases: [Case] = [
        Case(name: "no dots", token: "abc", expected: .malformedJWT(.structure, .segmentCount)),
        Case(name: "one dot", token: "\(header).\(payload)", expected: .malformedJWT(.structure, .segmentCount)),
        Case(
            name: "four segments", token: "\(header).\(payload).s.x", expected: .malformedJWT(.structure, .segmentCount)
        ),
        Case(name: "empty string", token: "", expected: .malformedJWT(.structure, .segmentCount)),
        Case(name: "only dots", token: "..", expected: .malformedJWT(.header, .emptySegment)),
        Case(name: "empty payload", token: "\(header)..sig", expected: .malformedJWT(.payload, .emptySegment)),
        Case(
            name: "invalid base64url in header", token: "e$J.\(payload).sig",
            expected: .malformedJWT(.header, .invalidBase64URL)),
        Case(
            name: "impossible base64 length", token: "\(header).abcde.sig",
            expected: .malformedJWT(.payload, .invalidBase64URL)),
        Case(
            name: "misplaced padding", token: "\(header).a=bc.sig", expected: .malformedJWT(.payload, .invalidBase64URL)
        ),
        Case(
            name: "invalid signature characters", token: "\(header).\(payload).s!g",
            expected: .malformedJWT(.signature, .invalidBase64URL)),
        Case(
            name: "payload not UTF-8", token: "\(header).\(JWTFixtures.base64URL([0xFF, 0xFE, 0x7B])).sig",
            expected: .malformedJWT(.payload, .notUTF8)),
        Case(
            name: "payload not JSON", token: "\(header).\(JWTFixtures.base64URL("hello")).sig",
            expected: .malformedJWT(.payload, .notJSON)),
        Case(
            name: "payload JSON array", token: "\(header).\(JWTFixtures.base64URL("[1,2]")).sig",
            expected: .malformedJWT(.payload, .notJSONObject)),
        Case(
            name: "header JSON string", token: "\(JWTFixtures.base64URL(#""x""#)).\(payload).sig",
            expected: .malformedJWT(.header, .notJSONObject)),
        Case(
            name: "trailing garbage after JSON", token: "\(header).\(JWTFixtures.base64URL(#"{"a":1}x"#)).sig",
            expected: .malformedJWT(.payload, .notJSON)),
        Case(
            name: "NaN literal", token: "\(header).\(JWTFixtures.base64URL(#"{"exp":NaN}"#)).sig",
            expected: .malformedJWT(.payload, .notJSON)),
        Case(
            name: "leading zero number", token: "\(header).\(JWTFixtures.base64URL(#"{"exp":012}"#)).sig",
            expected: .malformedJWT(.payload, .notJSON)),
        Case(
            name: "lone surrogate escape", token: "\(header).\(JWTFixtures.base64URL(#"{"a":"\ud800"}"#)).sig",
            expected: .malformedJWT(.payload, .notJSON)),
        Case(
            name: "raw control character in string",
            token: "\(header).\(JWTFixtures.base64URL("{\"a\":\"\u{01}\"}")).sig",
            expected: .malformedJWT(.payload, .notJSON)),
        Case(
            name: "unterminated string", token: "\(header).\(JWTFixtures.base64URL(#"{"a":"b}"#)).sig",
            expected: .malformedJWT(.payload, .notJSON)),
        Case(
            name: "deep nesting",
            token: "\(header).\(JWTFixtures.base64URL("{\"a\":" + String(repeating: "[", count: 1_000))).sig",
            expected: .malformedJWT(.payload, .tooDeep)),
        Case(
            name: "1 MB token", token: "\(header).\(String(repeating: "A", count: 1 << 20)).sig",
            expected: .malformedJWT(.structure, .tooLong)),
    ]

    @Test(arguments: cases)
    func malformedTokensGiveTypedErrors(_ testCase: Case) {
        #expect(throws: testCase.expected) { try JWT(parsing: testCase.token) }
    }

    @Test(arguments: cases)
    func theSeedAPIReturnsNilInsteadOfThrowing(_ testCase: Case) {
        let token = AuthToken(accessToken: testCase.token, receivedAt: Date(timeIntervalSince1970: 0))
        #expect(token.parseExpirationFromJWT() == nil)
        #expect(token.parseUserIdFromJWT() == nil)
    }

    @Test func hugeIntegersBecomeDoublesAndAreRejectedAsDates() throws {
        let claims = try JWT(parsing: JWTFixtures.token(payloadJSON: #"{"exp":123456789012345678901234567890}"#)).claims
        #expect(claims["exp"] == .number(1.234_567_890_123_456_8e29))
        #expect(throws: AuthTokenError.invalidClaim("exp")) { try claims.date("exp") }
    }

    @Test func validateNamesTheMalformedPart() {
        let token = AuthToken(accessToken: "eyJhbGciOiJIUzI1NiJ9.!!!.sig", receivedAt: Date(timeIntervalSince1970: 0))
        #expect(
            token.validate(now: Date(timeIntervalSince1970: 0)).contains(.malformedJWT(.payload, .invalidBase64URL)))
    }
}
