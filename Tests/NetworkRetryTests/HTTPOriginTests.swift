import Foundation
import HTTPTypes
import NetworkRetry
import Testing
import TokenKitLogCheck

@Suite(.logLeakCheck()) struct HTTPOriginTests {
    @Test(arguments: [
        ("https", "api.example.com", "/v1/me?page=2", "https://api.example.com/v1/me?page=2"),
        ("https", "api.example.com:443", "/a%2Fb/%3F?q=%26", "https://api.example.com/a%2Fb/%3F?q=%26"),
        ("http", "127.0.0.1:8080", "/x y#z\\", "http://127.0.0.1:8080/x%20y%23z%5C"),
        ("https", "[::1]:8443", "//other.example/x", "https://[::1]:8443//other.example/x"),
        ("https", "api.example.com", "/%zz", "https://api.example.com/%25zz"),
    ])
    func requestURLsKeepThePathEncodedAndTheOrigin(
        scheme: String, authority: String, target: String, expected: String
    ) throws {
        let origin = try #require(HTTPOrigin(scheme: scheme, authority: authority))
        let url = try #require(origin.requestURL(target: target, method: "GET"))
        #expect(url.absoluteString == expected)
        #expect(HTTPOrigin(url) == origin)
    }

    @Test(arguments: ["@evil.example/x", ".evil.example/x", ":8443/x", "", "x", "*"])
    func requestTargetsThatWouldChangeTheAuthorityBuildNoURL(target: String) throws {
        let origin = try #require(HTTPOrigin(string: "https://api.example.com"))
        #expect(!HTTPOrigin.isValidRequestTarget(target, method: "GET"))
        #expect(origin.requestURL(target: target, method: "GET") == nil)
    }

    @Test func anAsteriskIsATargetForOptionsOnly() throws {
        let origin = try #require(HTTPOrigin(string: "https://api.example.com:8443"))
        #expect(origin.requestURL(target: "*", method: "OPTIONS")?.absoluteString == "https://api.example.com:8443")
        #expect(origin.requestURL(target: "*", method: "GET") == nil)
    }

    @Test func defaultPortsAndCaseAreNormalised() throws {
        #expect(HTTPOrigin(string: "https://API.example.com") == HTTPOrigin(scheme: "https", host: "api.example.com"))
        #expect(
            HTTPOrigin(string: "https://api.example.com:443/x")
                == HTTPOrigin(scheme: "HTTPS", authority: "api.example.com"))
        #expect(HTTPOrigin(string: "http://a.example:80")?.port == 80)
        #expect(HTTPOrigin(string: "https://a.example:8443") != HTTPOrigin(string: "https://a.example"))
        #expect(HTTPOrigin(string: "http://a.example") != HTTPOrigin(string: "https://a.example"))
        #expect(HTTPOrigin(scheme: "https", authority: "[::1]:8443")?.description == "https://[::1]:8443")
        #expect(HTTPOrigin(scheme: "https", host: "::1") == HTTPOrigin(scheme: "https", authority: "[::1]"))
        #expect(HTTPOrigin(string: "http://[::1]:8080/x") == HTTPOrigin(scheme: "http", authority: "[::1]:8080"))
        #expect(HTTPOrigin(string: "https://user:pw@api.example.com") == nil)
        #expect(HTTPOrigin(string: "/relative") == nil)
    }

    @Test(arguments: [
        ("ftp", "a.example"), ("https", ""), ("https", "user@a.example"), ("https", "a.example:0"),
        ("https", "a.example:65536"), ("https", "a.example:12x"), ("https", "[::1"), ("https", "[::1]x"),
        ("https", "::1:80"), ("https", "a.example:+80"),
    ])
    func unusableAuthoritiesGiveNil(_ scheme: String, _ authority: String) {
        #expect(HTTPOrigin(scheme: scheme, authority: authority) == nil)
    }

    @Test(arguments: [
        ("localhost", true), ("127.0.0.1", true), ("127.255.0.9", true), ("[::1]", true),
        ("[0:0:0:0:0:0:0:1]", true), ("[::ffff:127.0.0.1]", true), ("128.0.0.1", false), ("10.0.0.1", false),
        ("127.0.0.1.nip.io", false), ("localhost.example.com", false), ("[::2]", false), ("127.1", false),
        ("[::ffff:10.0.0.1]", false),
    ])
    func loopbackIsRecognisedByAddressNotByName(_ host: String, _ loopback: Bool) throws {
        let origin = try #require(HTTPOrigin(scheme: "http", authority: host))
        #expect(origin.isLoopback == loopback)
        #expect(origin.allowsCredentials == loopback)
        #expect(HTTPOrigin(scheme: "https", authority: host)?.allowsCredentials == true)
    }
}
