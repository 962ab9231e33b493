import NetworkRetry
import Testing
import TokenKitLogCheck

@Suite(.logLeakCheck()) struct WWWAuthenticateTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let input: String
        let expected: [AuthenticationChallenge]?
        var testDescription: String { input.count > 60 ? "\(input.prefix(60))..." : input }
    }

    static func challenge(
        _ scheme: String, _ parameters: [(String, String)] = [], token68: String? = nil
    )
        -> AuthenticationChallenge
    {
        AuthenticationChallenge(
            scheme: scheme, token68: token68,
            parameters: parameters.map { AuthenticationChallenge.Parameter(name: $0.0, value: $0.1) })
    }

    static let valid: [Case] = [
        Case(input: "", expected: []),
        Case(input: " , ,", expected: []),
        Case(input: "Bearer", expected: [challenge("Bearer")]),
        Case(input: "Bearer,", expected: [challenge("Bearer")]),
        Case(input: #"bearer realm="example""#, expected: [challenge("bearer", [("realm", "example")])]),
        Case(
            input: #"Bearer realm="example", error="invalid_token", error_description="The access token expired""#,
            expected: [
                challenge(
                    "Bearer",
                    [
                        ("realm", "example"), ("error", "invalid_token"),
                        ("error_description", "The access token expired"),
                    ])
            ]),
        // RFC 9110 section 11.6.1's example: two challenges, an escaped quote.
        Case(
            input: #"Newauth realm="apps", type=1, title="Login to \"apps\"", Basic realm="simple""#,
            expected: [
                challenge("Newauth", [("realm", "apps"), ("type", "1"), ("title", #"Login to "apps""#)]),
                challenge("Basic", [("realm", "simple")]),
            ]),
        Case(input: "Basic dXNlcjpwYXNz", expected: [challenge("Basic", token68: "dXNlcjpwYXNz")]),
        // `name=` with no value is a token68 by the grammar.
        Case(input: "Bearer realm= ,", expected: [challenge("Bearer", token68: "realm=")]),
        Case(input: "Basic dXNlcg==", expected: [challenge("Basic", token68: "dXNlcg==")]),
        Case(input: "Newauth abc=, Bearer", expected: [challenge("Newauth", token68: "abc="), challenge("Bearer")]),
        Case(input: "Bearer error = invalid_token", expected: [challenge("Bearer", [("error", "invalid_token")])]),
        Case(input: "Bearer\terror=invalid_token", expected: [challenge("Bearer", [("error", "invalid_token")])]),
        Case(input: #"Bearer realm="a\"b\\c""#, expected: [challenge("Bearer", [("realm", #"a"b\c"#)])]),
        Case(input: #"Bearer realm="""#, expected: [challenge("Bearer", [("realm", "")])]),
        Case(input: "Bearer a=b,, c=d ,", expected: [challenge("Bearer", [("a", "b"), ("c", "d")])]),
        Case(
            input: #"Basic, Bearer error="invalid_token""#,
            expected: [
                challenge("Basic"), challenge("Bearer", [("error", "invalid_token")]),
            ]),
        Case(
            input: #"DPoP algs="ES256 PS256", Bearer realm="x""#,
            expected: [
                challenge("DPoP", [("algs", "ES256 PS256")]), challenge("Bearer", [("realm", "x")]),
            ]),
        Case(input: #"Bearer ERROR="invalid_token""#, expected: [challenge("Bearer", [("error", "invalid_token")])]),
        Case(input: #"Bearer realm="café""#, expected: [challenge("Bearer", [("realm", "café")])]),
        Case(input: "Bearer realm=!#$%&'*+-.^_`|~", expected: [challenge("Bearer", [("realm", "!#$%&'*+-.^_`|~")])]),
    ]

    static let malformed: [String] = [
        #"Bearer realm="unterminated"#,
        "Bearer realm=x=",
        "Bearer realm==x",
        "Bearer =x",
        #""Bearer""#,
        #"Bearer realm="x" error="y""#,
        "Bearer realm=\"x\u{01}\"",
        "Bearer realm=\"x\u{7F}\"",
        #"Bearer realm="x\"#,
        "Bearer abc=def=",
        "Bearer a=b c",
        "Bearer a=b, c=",
        "Bearer@ realm=x",
        "Bearer realm=a;b",
        "Basic abc=, realm=x",
        "Bearer\u{0}",
        "\u{1}",
        ";",
        String(repeating: "a", count: AuthenticationChallenge.maximumFieldLength + 1),
    ]

    @Test(arguments: valid)
    func validFieldValuesParseToTheirChallenges(_ testCase: Case) {
        #expect(AuthenticationChallenge.parse(testCase.input) == testCase.expected)
    }

    @Test(arguments: malformed)
    func malformedFieldValuesGiveNil(_ input: String) {
        #expect(AuthenticationChallenge.parse(input) == nil)
    }

    @Test func schemesAndParameterNamesAreCaseInsensitive() throws {
        let challenge = try #require(AuthenticationChallenge.parse(#"BEARER Realm="x""#)?.first)
        #expect(challenge.isScheme("bearer"))
        #expect(!challenge.isScheme("basic"))
        #expect(challenge[parameter: "REALM"] == "x")
        #expect(challenge[parameter: "scope"] == nil)
    }

    @Test func challengesAcrossSeveralLinesAreCollectedInOrder() {
        let lines = [#"Basic realm="a""#, #"Bearer error="invalid_token""#]
        #expect(
            AuthenticationChallenge.parse(fieldValues: lines) == [
                Self.challenge("Basic", [("realm", "a")]), Self.challenge("Bearer", [("error", "invalid_token")]),
            ])
        #expect(AuthenticationChallenge.parse(fieldValues: ["Bearer", #"Bearer realm="x"#]) == nil)
    }

    @Test func aLongButValidValueParses() {
        let value = "Bearer " + (0..<1000).map { "p\($0)=v" }.joined(separator: ", ")
        #expect(AuthenticationChallenge.parse(value)?.first?.parameters.count == 1000)
    }

    @Test func bearerParametersAreRead() throws {
        let header =
            #"Bearer realm="api", error="insufficient_user_authentication", error_description="Step up", "#
            + #"error_uri="https://e.example/err", scope="read write", acr_values="urn:mace:incommon:iap:silver", max_age=300"#
        let bearer = try #require(AuthenticationChallenge.parse(header).flatMap(BearerChallenge.init(firstIn:)))
        #expect(bearer.realm == "api")
        #expect(bearer.error == .insufficientUserAuthentication)
        #expect(bearer.errorDescription == "Step up")
        #expect(bearer.errorURI == "https://e.example/err")
        #expect(bearer.scope == "read write")
        #expect(bearer.acrValues == "urn:mace:incommon:iap:silver")
        #expect(bearer.maxAge == 300)
    }

    @Test func bearerChallengeSkipsOtherSchemesAndUnknownCodesAreKept() throws {
        let challenges = try #require(AuthenticationChallenge.parse(#"Basic realm="x", Bearer error="token_expired""#))
        let bearer = try #require(BearerChallenge(firstIn: challenges))
        #expect(bearer.error == BearerChallenge.ErrorCode(rawValue: "token_expired"))
        #expect(bearer.realm == nil)
        #expect(BearerChallenge(challenges[0]) == nil)
        #expect(BearerChallenge(firstIn: [challenges[0]]) == nil)
    }

    @Test(arguments: ["-1", "abc", "1.5", "99999999999999999999999"])
    func anUnusableMaxAgeIsNil(_ value: String) throws {
        let challenge = try #require(AuthenticationChallenge.parse("Bearer max_age=\(value)")?.first)
        #expect(BearerChallenge(challenge)?.maxAge == nil)
    }
}
