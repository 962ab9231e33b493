import AuthToken
import Foundation
import Testing
import TokenKitLogCheck

/// A parse scans the header and the payload without building their values, and reads a claim when it is asked for:
/// it must accept and refuse exactly what the full JSON parser does, and read every claim as the parser's dictionary
/// holds it.
@Suite(.logLeakCheck()) struct ClaimScanTests {
    static func token(payload: [UInt8], header: String = #"{"alg":"RS256"}"#) -> String {
        "\(JWTFixtures.base64URL(header)).\(JWTFixtures.base64URL(payload)).c2ln"
    }

    /// What the full parser makes of `payload`, as `JWT(parsing:)` reports it.
    static func expected(_ payload: [UInt8]) -> Result<[String: JSONValue], AuthTokenError> {
        if payload.isEmpty { return .failure(.malformedJWT(.payload, .emptySegment)) }
        let parsed: Result<JSONValue, JSONParser.Failure> = payload.withUnsafeBufferPointer { bytes in
            do throws(JSONParser.Failure) {
                return .success(try JSONParser.parse(bytes))
            } catch {
                return .failure(error)
            }
        }
        switch parsed {
        case .success(.object(let members)): return .success(members)
        case .success: return .failure(.malformedJWT(.payload, .notJSONObject))
        case .failure(.tooDeep): return .failure(.malformedJWT(.payload, .tooDeep))
        case .failure:
            let text = String(validating: payload, as: UTF8.self) != nil
            return .failure(.malformedJWT(.payload, text ? .notJSON : .notUTF8))
        }
    }

    static func check(_ payload: [UInt8]) {
        let token = token(payload: payload)
        let read: Result<JWTClaims, AuthTokenError> = Result { () throws(AuthTokenError) in
            try JWT(parsing: token).claims
        }
        switch (read, expected(payload)) {
        case (.success(let claims), .success(let members)):
            #expect(claims.members == members, "\(String(decoding: payload, as: UTF8.self))")
            for (name, value) in members { #expect(claims.object(name) == value.objectValue) }
        case (.failure(let error), .failure(let reason)):
            #expect(error == reason, "\(String(decoding: payload, as: UTF8.self))")
        default:
            Issue.record("the scan and the parser disagree on \(String(decoding: payload, as: UTF8.self))")
        }
    }

    static let samples = [
        #"{"iss":"https://auth.example.com/","sub":"user-1","aud":["a","b"],"exp":1763703600,"n":-1.5e3}"#,
        #"{ "a" : { "b" : [ true , false , null , { } , [ ] ] } , "c" : "x\"y\\z\u00e9\ud83d\ude00" }"#,
        #"{"nested":{"deep":{"deeper":[1,[2,[3,{"k":"v"}]]]}},"empty":"","zero":0,"neg":-0}"#,
        #"{"é":"è","cafe\u0301":1,"e\u0301":2,"tab\t":3}"#,
    ]

    @Test(arguments: 0..<4)
    func everyTruncationAndByteChangeOfAPayloadIsJudgedAsTheParserJudgesIt(sample: Int) {
        let bytes = Array(Self.samples[sample].utf8)
        Self.check(bytes)
        for end in 0..<bytes.count { Self.check(Array(bytes[..<end])) }
        let replacements: [UInt8] = [
            UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "{"), UInt8(ascii: "}"), UInt8(ascii: "["),
            UInt8(ascii: "]"), UInt8(ascii: ","), UInt8(ascii: ":"), UInt8(ascii: "1"), UInt8(ascii: "e"),
            UInt8(ascii: "u"), UInt8(ascii: " "), 0x0A, 0x01, 0xC3, 0xFF,
        ]
        for position in bytes.indices {
            for byte in replacements where byte != bytes[position] {
                var changed = bytes
                changed[position] = byte
                Self.check(changed)
            }
        }
    }

    @Test func payloadsThatAreNotOneObjectAreRefusedAsTheParserRefusesThem() {
        for text in [
            "[]", "\"sub\"", "1", "null", "{}", " {} ", "{} {}", "{}x", "", "{", "}",
            String(repeating: "{\"a\":", count: 70),
            String(repeating: "[", count: 70) + String(repeating: "]", count: 70),
            "{\"a\":" + String(repeating: "[", count: 63) + String(repeating: "]", count: 63) + "}",
            "{\"a\":" + String(repeating: "[", count: 64) + String(repeating: "]", count: 64) + "}",
        ] {
            Self.check(Array(text.utf8))
        }
    }

    @Test func aNameIsFoundWhateverWayTheTokenSpellsIt() throws {
        let claims = try JWT(
            parsing: Self.token(
                payload: Array(#"{"s\u0075b":"escaped","cafe\u0301":1,"a\"b":2,"x\\y":3,"naïve":4}"#.utf8))
        ).claims
        #expect(claims.subject == "escaped")
        // Canonically equivalent names are one name, as in a Swift dictionary.
        #expect(claims.integer("caf\u{E9}") == 1)
        #expect(claims.integer("cafe\u{301}") == 1)
        // An escape is read, not compared as text.
        #expect(claims.integer("a\"b") == 2)
        #expect(claims.integer(#"a\"b"#) == nil)
        #expect(claims.integer(#"x\y"#) == 3)
        #expect(claims.integer(#"x\\y"#) == nil)
        #expect(claims.integer("naïve") == 4)
        #expect(claims.integer("naive") == nil)
        #expect(claims.members.count == 5)
    }

    @Test func theLastOfTwoEqualNamesWinsAlsoWhenSpelledDifferently() throws {
        let claims = try JWT(parsing: Self.token(payload: Array(#"{"sub":"first","s\u0075b":"last","n":1}"#.utf8)))
            .claims
        #expect(claims.subject == "last")
        #expect(claims.members["sub"] == .string("last"))
    }

    @Test func twoHeadersWithTheSameParametersAreEqualHoweverTheyAreWritten() throws {
        let payload = Array(#"{"sub":"user-1"}"#.utf8)
        let tight = try JWT(parsing: Self.token(payload: payload, header: #"{"alg":"RS256","kid":"k1"}"#))
        let loose = try JWT(parsing: Self.token(payload: payload, header: #"{ "kid" : "k1", "alg" : "RS256" }"#))
        #expect(tight.header == loose.header)
        #expect(tight.header.hashValue == loose.header.hashValue)
        #expect(tight == loose)
        let other = try JWT(parsing: Self.token(payload: payload, header: #"{"alg":"RS256","kid":"k2"}"#))
        #expect(tight.header != other.header)
        // Claims are equal when their payloads are.
        let spaced = try JWT(parsing: Self.token(payload: Array(#"{ "sub":"user-1"}"#.utf8)))
        #expect(tight.claims != spaced.claims)
        #expect(tight.claims.subject == spaced.claims.subject)
        #expect(tight.claims == loose.claims)
        #expect(tight.claims.hashValue == loose.claims.hashValue)
    }
}
