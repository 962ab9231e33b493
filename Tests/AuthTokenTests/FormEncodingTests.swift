import AuthToken
import Testing
import TokenKitLogCheck

/// The one `application/x-www-form-urlencoded` writer of the token requests and the introspection requests: the
/// WHATWG URL Standard's urlencoded serializer (the encoding RFC 6749 appendix B points to).
@Suite(.logLeakCheck()) struct FormEncodingTests {
    @Test(arguments: [
        ("az-AZ_09.*", "az-AZ_09.*"),
        ("a b", "a+b"),
        ("a+b", "a%2Bb"),
        ("~user", "%7Euser"),
        ("!'()", "%21%27%28%29"),
        ("a=b&c/d:e%f", "a%3Db%26c%2Fd%3Ae%25f"),
        ("é€", "%C3%A9%E2%82%AC"),
        ("", ""),
    ])
    func aValueKeepsOnlyTheURLStandardsUnencodedSet(text: String, encoded: String) {
        #expect(FormEncoding.encode(text) == encoded)
    }

    @Test func pairsAreJoinedWithEqualsAndAmpersands() {
        #expect(
            FormEncoding.encode([("grant_type", "refresh_token"), ("scope", "a b~")])
                == "grant_type=refresh_token&scope=a+b%7E")
    }

    @Test func basicAuthenticationWritesASpaceAsPercentTwenty() {
        #expect(FormEncoding.basicEncode("id with space+plus~") == "id%20with%20space%2Bplus%7E")
    }
}
