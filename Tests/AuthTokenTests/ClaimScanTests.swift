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

    /// Payloads shaped to make a claim reader see another `exp`, `aud`, `iss` or `sub` than the full parser sees.
    static let hostile: [[UInt8]] = [
        Array(#"{"exp":1,"exp":2}"#.utf8),
        Array(#"{"exp":1,"\u0065xp":2,"iss":"a","i\u0073s":"b"}"#.utf8),
        Array(#"{"\u0065xp":1,"exp":2,"\u0065\u0078\u0070":3}"#.utf8),
        Array(#"{"a":{"exp":1},"b":[{"exp":2}],"exp":3,"c":{"exp":{"exp":4}},"aud":"x"}"#.utf8),
        Array(#"{"x":"\"exp\":1,","exp":5,"y":"{\"exp\":6}","z":"\",\"aud\":\"evil\",\"q\":\""}"#.utf8),
        [0xEF, 0xBB, 0xBF] + Array(#"{"exp":1}"#.utf8),
        Array(#"{""#.utf8) + [0xEF, 0xBB, 0xBF] + Array(#"exp":1,"exp":2}"#.utf8),
        Array(" \t\r\n{ \t\"exp\" \r\n:\t 1 \n,\r\"iat\"\t:0 }\n\t ".utf8),
        Array("{\"exp\"\u{0B}:1}".utf8),
        Array("{\"exp\":1}\u{0}".utf8),
        Array(
            ("{\"a\":" + String(repeating: "{\"exp\":", count: 63) + "1" + String(repeating: "}", count: 63)
                + ",\"exp\":1}").utf8),
        Array(
            ("{\"a\":" + String(repeating: "{\"exp\":", count: 64) + "1" + String(repeating: "}", count: 64)
                + ",\"exp\":1}").utf8),
        Array("{\"caf\u{E9}\":1,\"cafe\u{301}\":2,\"\u{212A}\":3,\"K\":4,\"\u{37E}\":5,\";\":6}".utf8),
        Array(#"{"sub":"a","s\u0075b":"b","\ud83d\ude00":1,"aud":["x",1,null,["y"]],"aud":["z"]}"#.utf8),
        Array(#"{"exp":1e3,"iat":-0,"nbf":1.0,"a":123456789012345678,"b":1234567890123456789}"#.utf8),
        Array(#"{"exp":1E+400,"iat":-1,"nbf":253402300800,"x":-0.0,"y":1e-400}"#.utf8),
        Array(#"{"exp":null,"iat":true,"nbf":"1700000000","sub":1,"iss":["a"],"jti":{"a":1}}"#.utf8),
        Array(#"{"sub":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#""}"#.utf8),
        Array(#"{"exp":01}"#.utf8),
        Array(#"{"exp":1,}"#.utf8),
    ]

    /// A NumericDate as the dictionary holds it, by the rules `JWTClaims.date(_:)` documents.
    static func date(_ members: [String: JSONValue], _ name: String) -> Result<Date?, AuthTokenError> {
        guard let value = members[name] else { return .success(nil) }
        guard let seconds = value.doubleValue, seconds.isFinite, seconds >= 0, seconds <= 253_402_300_799 else {
            return .failure(.invalidClaim(name))
        }
        return .success(Date(timeIntervalSince1970: seconds))
    }

    @Test(arguments: 0..<20)
    func aHostilePayloadIsJudgedAndReadAsTheFullParserReadsIt(sample: Int) throws {
        let payload = Self.hostile[sample]
        Self.check(payload)
        guard case .success(let members) = Self.expected(payload) else { return }
        let claims = try JWT(parsing: Self.token(payload: payload)).claims
        #expect(claims.expiration == ((try? Self.date(members, "exp").get()) ?? nil), "sample \(sample)")
        #expect(claims.issuedAt == ((try? Self.date(members, "iat").get()) ?? nil), "sample \(sample)")
        #expect(claims.notBefore == ((try? Self.date(members, "nbf").get()) ?? nil), "sample \(sample)")
        #expect(claims.subject == members["sub"]?.stringValue, "sample \(sample)")
        #expect(claims.issuer == members["iss"]?.stringValue, "sample \(sample)")
        #expect(claims.jwtID == members["jti"]?.stringValue, "sample \(sample)")
        let audience: [String] =
            switch members["aud"] {
            case .string(let value): [value]
            case .array(let values): values.compactMap(\.stringValue)
            default: []
            }
        #expect(claims.audience == audience, "sample \(sample)")
        let names = ["exp", "iat", "nbf", "sub", "iss", "aud", "K", "\u{212A}", ";", "caf\u{E9}", "cafe\u{301}"]
        for name in names + Array(members.keys) {
            #expect(claims.string(name) == members[name]?.stringValue, "sample \(sample)")
            let date = Result { () throws(AuthTokenError) in try claims.date(name) }
            #expect(date == Self.date(members, name), "sample \(sample)")
        }
    }

    @Test func anExpSpelledWithEscapesOrHiddenInNestedValuesAndStringsIsReadAsTheParserKeepsIt() throws {
        let payload = #"{"exp":1,"a":{"exp":2},"s":"\",\"exp\":3,\"","e\u0078p":1700000000,"b":[{"exp":4}]}"#
        let claims = try JWT(parsing: Self.token(payload: Array(payload.utf8))).claims
        #expect(claims.expiration == Date(timeIntervalSince1970: 1_700_000_000))
        #expect(claims.members["exp"] == .integer(1_700_000_000))
        #expect(claims.members.count == 4)
    }
}
