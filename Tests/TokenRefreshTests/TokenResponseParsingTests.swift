import Foundation
import HTTPTypes
import Testing
import TokenKitLogCheck
import TokenKitTestSupport

@testable import TokenRefresh

@Suite(.logLeakCheck()) struct TokenResponseParsingTests {
    @Test func anRFC6749SuccessBodyIsParsed() throws {
        let body =
            #"{"access_token":"2YotnFZFEjr1zCsicMWpAA","token_type":"example","expires_in":3600,"#
            + #""refresh_token":"tGzv3JOkF0XG5Qx2TlKWIA","example_parameter":"example_value"}"#
        let response = try TokenResponse.parse(Data(body.utf8))
        #expect(response.tokenType == "example")
        #expect(response.expiresIn == 3600)
        #expect(response.refreshToken == "tGzv3JOkF0XG5Qx2TlKWIA")
    }

    /// The seed decodes `TokenResponse` with `.convertFromSnakeCase`, so its backends may answer in either style.
    @Test(arguments: [
        #"{"accessToken":"fitiq-access-token","refreshToken":"fitiq-refresh-token","expiresIn":900}"#,
        #"{"access_token":"fitiq-access-token","refresh_token":"fitiq-refresh-token","expires_in":900}"#,
        #"{"data":{"accessToken":"fitiq-access-token","refreshToken":"fitiq-refresh-token","expiresIn":"900"}}"#,
        #"{"data":{"access_token":"fitiq-access-token","refresh_token":"fitiq-refresh-token","expires_in":900}}"#,
    ])
    func camelCaseAndSnakeCaseAnswersBothParse(_ body: String) throws {
        let response = try TokenResponse.parse(Data(body.utf8))
        #expect(response.accessToken == "fitiq-access-token")
        #expect(response.refreshToken == "fitiq-refresh-token")
        #expect(response.expiresIn == 900)
    }

    @Test func camelCaseUserAndTypeFieldsAreRead() throws {
        let body = #"{"accessToken":"camel-access-token","tokenType":"bearer","userId":"user-7"}"#
        let response = try TokenResponse.parse(Data(body.utf8))
        #expect(response.tokenType == "Bearer" && response.userID == "user-7")
        #expect(response.refreshToken == nil)
    }

    @Test(arguments: [
        #"{"accessToken":5}"#, #"{"accessToken":"malformed-case-token","expiresIn":"soon"}"#,
        #"{"accessToken":"malformed-case-token","refreshToken":7}"#,
    ])
    func malformedCamelCaseBodiesAreATypedError(_ body: String) {
        #expect(throws: TokenRefreshError.malformedResponse) { try TokenResponse.parse(Data(body.utf8)) }
    }

    @Test(arguments: [
        "", "null", "[]", "\"text\"", "{}", #"{"access_token":""}"#, #"{"access_token":5}"#,
        #"{"access_token":"malformed-case-token","expires_in":true}"#,
        #"{"access_token":"malformed-case-token","expires_in":-1}"#,
        #"{"access_token":"malformed-case-token","expires_in":"soon"}"#,
        #"{"access_token":"malformed-case-token","refresh_token":7}"#,
        #"{"access_token":"malformed-case-token","token_type":""}"#, "<html>captive portal</html>",
        "{\"access_token\": ",
        String(repeating: "[", count: 100_000),
    ])
    func malformedBodiesAreATypedErrorNotACrash(_ body: String) {
        #expect(throws: TokenRefreshError.malformedResponse) { try TokenResponse.parse(Data(body.utf8)) }
    }

    @Test func randomBytesNeverCrashTheParser() {
        var generator = SeededGenerator(seed: 0x70_6b_63_65)
        let alphabet = Array(#"{}[]":,0123456789.-eE truefalsnul\access_tokenexpires_in"#.utf8)
        for _ in 0..<2000 {
            let length = Int(generator.next() % 96)
            let bytes = (0..<length).map { _ in
                generator.next() % 4 == 0
                    ? UInt8(truncatingIfNeeded: generator.next())
                    : alphabet[Int(generator.next() % UInt64(alphabet.count))]
            }
            _ = try? TokenResponse.parse(Data(bytes))
            _ = TokenResponse.oauthErrorCode(Data(bytes))
        }
    }

    @Test(arguments: [
        (400, #"{"error":"invalid_grant"}"#, TokenRefreshError.refreshTokenRejected),
        (400, #"{"error":"invalid_client"}"#, .configuration),
        (401, #"{"error":"invalid_client"}"#, .configuration),
        (400, #"{"error":"unauthorized_client"}"#, .configuration),
        (400, #"{"error":"unsupported_grant_type"}"#, .configuration),
        (401, "", .configuration),
        (500, "", .transient),
        (502, "<html>", .transient),
        (503, "", .transient),
        (429, "", .transient),
        (408, "", .transient),
        (400, #"{"error":"temporarily_unavailable"}"#, .transient),
        (400, #"{"error":"something_new"}"#, .unexpectedResponse),
        (404, "", .unexpectedResponse),
    ])
    func answersAreClassified(_ status: Int, _ body: String, _ expected: TokenRefreshError) {
        let error = TokenEndpoint.classify(
            HTTPResponse(status: .init(code: status)), body: Data(body.utf8), isSignIn: false, now: { Date() })
        #expect(error == expected)
        #expect(error.status == status)
    }

    @Test func retryAfterIsReadAsSecondsOrAnHTTPDate() {
        let now = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(RetryAfter.parse("120", now: now) == .seconds(120))
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:51:37 GMT", now: now) == .seconds(120))
        #expect(RetryAfter.parse("Sun, 06 Nov 1994 08:40:00 GMT", now: now) == .zero)
        #expect(RetryAfter.parse("soon", now: now) == nil)
        #expect(RetryAfter.parse("99999999999999999999", now: now) == .seconds(86_400))
    }

    @Test func anOAuthErrorCodeThatCouldCarryASecretIsDropped() {
        #expect(TokenResponse.oauthErrorCode(Data(#"{"error":"invalid_grant"}"#.utf8)) == "invalid_grant")
        #expect(TokenResponse.oauthErrorCode(Data(#"{"error":"Bearer eyJhbGciOi.x.y"}"#.utf8)) == nil)
    }
}
