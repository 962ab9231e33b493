import AuthToken
import Foundation
import Testing
import TokenKitLogCheck

/// The string scanner reads eight bytes at a time until a quote, a backslash, a control character or a non-ASCII
/// byte: every one of them must be found wherever it falls in the word, and long and short strings read alike.
@Suite(.logLeakCheck()) struct JSONStringScanTests {
    static func token(payload: [UInt8]) -> String {
        "\(JWTFixtures.base64URL(#"{"alg":"RS256"}"#)).\(JWTFixtures.base64URL(payload)).c2ln"
    }

    static func payload(name: String, value: [UInt8]) -> [UInt8] {
        Array(#"{""#.utf8) + Array(name.utf8) + Array(#"":""#.utf8) + value + Array(#""}"#.utf8)
    }

    @Test(arguments: 0..<20)
    func aStringOfAnyLengthReadsBackWhole(length: Int) throws {
        let text = String((0..<length).map { Character(UnicodeScalar(UInt8(ascii: "a") + UInt8($0 % 26))) })
        let claims = try JWT(parsing: Self.token(payload: Self.payload(name: "s", value: Array(text.utf8)))).claims
        #expect(claims.string("s") == text)
    }

    @Test(arguments: 0..<17)
    func anEscapeOrANonASCIICharacterIsFoundAtEveryOffset(offset: Int) throws {
        let prefix = String(repeating: "x", count: offset)
        let escaped = try JWT(
            parsing: Self.token(payload: Self.payload(name: "s", value: Array((prefix + #"\"y\u00e9"#).utf8))))
        #expect(escaped.claims.string("s") == prefix + "\"yé")
        let accented = try JWT(
            parsing: Self.token(payload: Self.payload(name: "s", value: Array((prefix + "éz").utf8))))
        #expect(accented.claims.string("s") == prefix + "éz")
    }

    @Test(arguments: 0..<17)
    func aControlCharacterOrBrokenUTF8IsRefusedAtEveryOffset(offset: Int) {
        let prefix = Array(String(repeating: "x", count: offset).utf8)
        #expect(throws: AuthTokenError.malformedJWT(.payload, .notJSON)) {
            try JWT(parsing: Self.token(payload: Self.payload(name: "s", value: prefix + [0x0A] + Array("tail".utf8))))
        }
        // 0x1F, the highest control character: the word test's threshold must be 0x20, not lower.
        #expect(throws: AuthTokenError.malformedJWT(.payload, .notJSON)) {
            try JWT(
                parsing: Self.token(payload: Self.payload(name: "s", value: prefix + [0x1F] + Array("tail-long".utf8))))
        }
        #expect(throws: AuthTokenError.malformedJWT(.payload, .notUTF8)) {
            try JWT(
                parsing: Self.token(
                    payload: Self.payload(name: "s", value: prefix + [0xC3, 0x28] + Array("tail".utf8))))
        }
        #expect(throws: AuthTokenError.malformedJWT(.payload, .notUTF8)) {
            try JWT(
                parsing: Self.token(payload: Self.payload(name: "s", value: prefix + [0xFF] + Array("tail-long".utf8))))
        }
    }

    @Test(arguments: 0..<17)
    func theBytesNextToTheSpecialOnesAreKeptAtEveryOffset(offset: Int) throws {
        // A space (0x20), DEL (0x7F) and the bytes either side of the quote and the backslash are plain characters.
        let prefix = String(repeating: "x", count: offset)
        let plain = prefix + " \u{7F}!#[]" + "tail-long"
        let claims = try JWT(parsing: Self.token(payload: Self.payload(name: "s", value: Array(plain.utf8)))).claims
        #expect(claims.string("s") == plain)
    }
}
