import AuthToken
import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTestSupport

/// The parser's fast paths read the same values as the plain ones: base64url by groups of four through
/// pre-shifted tables, strings that JWTs carry everywhere taken from a table of literals, integers accumulated while
/// scanned.
@Suite(.logLeakCheck()) struct ParsingFastPathTests {
    static func token(payload: String) -> String {
        "\(JWTFixtures.base64URL(#"{"alg":"RS256"}"#)).\(JWTFixtures.base64URL(Array(payload.utf8))).c2ln"
    }

    /// Foundation's base64, made base64url and unpadded.
    static func encoded(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ text: String, strict: Bool) -> [UInt8]? {
        Array(text.utf8).withUnsafeBufferPointer { Base64URLCodec.decode($0, strict: strict) }
    }

    @Test(arguments: 0..<40)
    func base64URLOfEveryLengthDecodesToFoundationsBytes(length: Int) {
        var generator = SeededGenerator(seed: UInt64(length) + 1)
        for _ in 0..<8 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let text = Self.encoded(bytes)
            #expect(Self.decode(text, strict: true) == bytes)
            #expect(Self.decode(text, strict: false) == bytes)
            let padded = Data(bytes).base64EncodedString()
            #expect(Self.decode(padded, strict: false) == bytes)
        }
    }

    @Test(arguments: 0..<24)
    func aByteOutsideTheAlphabetIsRefusedAtEveryPosition(position: Int) {
        let text = Array(Self.encoded((0..<24).map { UInt8(truncatingIfNeeded: $0 &* 37) }).utf8)  // 32 characters
        for bad in [UInt8(ascii: "!"), UInt8(ascii: "."), UInt8(ascii: "="), 0x80, 0xFF, 0x00] {
            var corrupted = text
            corrupted[position] = bad
            let string = String(decoding: corrupted, as: UTF8.self)
            #expect(Self.decode(string, strict: true) == nil)
            #expect(Self.decode(string, strict: false) == nil)
        }
        var standard = text
        standard[position] = UInt8(ascii: "+")
        #expect(Self.decode(String(decoding: standard, as: UTF8.self), strict: true) == nil)
        #expect(Self.decode(String(decoding: standard, as: UTF8.self), strict: false) != nil)
    }

    @Test(arguments: [
        "alg", "typ", "kid", "cty", "jku", "jwk", "x5u", "x5c", "x5t", "crit", "x5t#S256", "zip", "enc", "iss", "sub",
        "aud", "exp", "nbf", "iat", "jti", "scope", "scp", "azp", "email", "name", "nonce", "sid", "acr", "amr",
        "roles", "groups", "tid", "oid", "ver", "cid", "uid", "at_hash", "c_hash", "RS256", "RS384", "RS512", "ES256",
        "ES384", "ES512", "PS256", "PS384", "PS512", "HS256", "HS384", "HS512", "EdDSA", "ES256K", "none", "JWT",
        "at+jwt",
    ])
    func aCommonNameReadsTheSameAsAnyOtherString(name: String) throws {
        // As a name and as a value, in the middle of the text (a word is read past it) and at its very end.
        let claims = try JWT(parsing: Self.token(payload: #"{"\#(name)":"\#(name)","pad":"padding-padding"}"#)).claims
        #expect(claims.string(name) == name)
        #expect(claims.members.keys.contains(name))
        let atEnd = try JWT(parsing: Self.token(payload: #"{"v":"\#(name)"}"#)).claims
        #expect(atEnd.string("v") == name)
        // Near misses are ordinary strings: a prefix, a longer string, another case.
        let near = [
            String(name.dropLast()), name + "x", "x" + name,
            name.uppercased() == name ? name.lowercased() : name.uppercased(),
        ]
        for other in near where !other.isEmpty && other != name {
            let read = try JWT(parsing: Self.token(payload: #"{"\#(other)":"\#(other)","z":1}"#)).claims
            #expect(read.string(other) == other)
            #expect(read.string(name) == nil)
        }
    }

    @Test(arguments: [
        ("0", JSONValue.integer(0)), ("-0", .integer(0)), ("7", .integer(7)), ("-42", .integer(-42)),
        ("999999999999999999", .integer(999_999_999_999_999_999)),
        ("-99999999999999999", .integer(-99_999_999_999_999_999)),
        ("-999999999999999999", .number(-1e18)),
        ("1000000000000000000", .number(1e18)), ("1763703600", .integer(1_763_703_600)), ("1.5", .number(1.5)),
        ("2e3", .number(2000)), ("-1.25E-2", .number(-0.0125)),
    ])
    func aNumberReadsAsItsValue(text: String, expected: JSONValue) throws {
        let claims = try JWT(parsing: Self.token(payload: #"{"n":\#(text)}"#)).claims
        #expect(claims["n"] == expected)
    }

    @Test func anArrayOfAnyShortLengthKeepsEveryElement() throws {
        for count in 0..<10 {
            let elements = (0..<count).map { "\"a\($0)\"" }.joined(separator: ",")
            let claims = try JWT(parsing: Self.token(payload: #"{"aud":[\#(elements)]}"#)).claims
            #expect(claims.audience == (0..<count).map { "a\($0)" })
        }
    }
}
