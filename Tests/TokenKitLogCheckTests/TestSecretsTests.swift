import Foundation
import HTTPTypes
import Testing
import TokenKitLogCheck
import TokenKitTesting

@Suite(.logLeakCheck()) struct TestSecretsTests {
    private func kinds(_ secrets: TestSecrets) -> [String: TestSecrets.Kind] {
        Dictionary(secrets.all.map { ($0.value, $0.kind) }, uniquingKeysWith: { first, _ in first })
    }

    @Test func aRequestsCredentialsAreRegisteredByKind() {
        let secrets = TestSecrets()
        var request = HTTPRequest(
            method: .post, scheme: "https", authority: "id.example.com", path: "/token?code=auth-code-in-query")
        request.headerFields[.authorization] = "Basic " + Data("my+app:s3cr%26t-value".utf8).base64EncodedString()
        request.headerFields[HTTPField.Name("X-API-Key")!] = "api-key-in-header"
        let body = "grant_type=password&username=alice&password=correct+horse+battery&refresh_token=rt%2F1-long"
        secrets.registerCredentials(in: request, body: Data(body.utf8), origin: "test")
        let found = kinds(secrets)
        #expect(found["s3cr&t-value"] == .clientSecret)
        #expect(found[Data("my+app:s3cr%26t-value".utf8).base64EncodedString()] == .credential)
        #expect(found["api-key-in-header"] == .credential)
        #expect(found["auth-code-in-query"] == .credential)
        #expect(found["correct horse battery"] == .password)
        #expect(found["rt/1-long"] == .refreshToken)
        #expect(found["alice"] == nil && found["password"] == nil, "user names and grant types are no secrets")
    }

    @Test func aBearerHeaderIsAnAccessToken() {
        let secrets = TestSecrets()
        secrets.registerHeader(name: "Authorization", value: "Bearer header-access-token", origin: "test")
        #expect(kinds(secrets) == ["header-access-token": .accessToken])
    }

    @Test func aSchemeWithoutACredentialRegistersNothingButABareValueDoes() {
        let secrets = TestSecrets()
        secrets.registerHeader(name: "Authorization", value: "Bearer ", origin: "test")
        secrets.registerHeader(name: "Authorization", value: "basic", origin: "test")
        #expect(secrets.count == 0)
        secrets.registerHeader(name: "Authorization", value: "raw-api-token-value", origin: "test")
        #expect(kinds(secrets) == ["raw-api-token-value": .credential])
    }

    @Test func aResponseBodysTokensAreRegisteredAtAnyDepth() {
        let secrets = TestSecrets()
        let body =
            #"{"data":{"access_token":"nested-access","refreshToken":"camel-refresh","user":"alice"},"id_token":"oidc-id-token"}"#
        secrets.registerTokens(inResponseBody: Data(body.utf8), origin: "test")
        #expect(
            kinds(secrets) == [
                "nested-access": .accessToken, "camel-refresh": .refreshToken, "oidc-id-token": .idToken,
            ])
        secrets.registerTokens(inResponseBody: Data("<html>not a token</html>".utf8), origin: "test")
        secrets.registerTokens(inResponseBody: Data(), origin: "test")
        #expect(secrets.count == 3)
    }

    @Test func anErrorBodysCodeIsNoSecretButARequestsCodeIs() {
        let secrets = TestSecrets()
        secrets.registerTokens(
            inResponseBody: Data(
                #"{"code":"invalid_request","token":"not-a-token-here","password":"not-a-password-here"}"#.utf8),
            origin: "test")
        #expect(secrets.count == 0)
        secrets.registerCredentials(
            inRequestBody: Data("grant_type=authorization_code&code=auth-code-99".utf8), origin: "test")
        #expect(kinds(secrets) == ["auth-code-99": .credential])
    }

    @Test func aBasicSecretIsRegisteredAsSentAndFormDecoded() {
        let secrets = TestSecrets()
        let value = "Basic " + Data("app:plain+secret%41".utf8).base64EncodedString()
        secrets.registerHeader(name: "authorization", value: value, origin: "test")
        let clientSecrets = secrets.all.filter { $0.kind == .clientSecret }.map(\.value)
        #expect(clientSecrets == ["plain+secret%41", "plain secretA"])
    }

    @Test func theMockTransportRegistersWhatCrossesIt() async throws {
        let transport = MockTransport(script: [
            .response(status: .ok, body: Data(#"{"access_token":"mock-answered-access","token_type":"Bearer"}"#.utf8))
        ])
        var request = HTTPRequest(method: .post, scheme: "https", authority: "id.example.com", path: "/token")
        request.headerFields[.authorization] = "Bearer mock-presented-access"
        _ = try await transport.send(request, body: Data("refresh_token=mock-presented-refresh".utf8))
        let found = kinds(TestSecrets.shared)
        #expect(found["mock-presented-access"] == .accessToken)
        #expect(found["mock-presented-refresh"] == .refreshToken)
        #expect(found["mock-answered-access"] == .accessToken)
    }

    @Test func aShortSecretOrAPasswordIsDescribedWithoutFingerprint() {
        let secrets = TestSecrets()
        secrets.register("abc", as: .accessToken, origin: "Short.swift:1")
        secrets.register("long-enough-password", as: .password, origin: "Pass.swift:2")
        #expect(
            secrets.all.map(\.description) == ["access token (from Short.swift:1)", "password (from Pass.swift:2)"])
    }

    @Test func aSecretsDescriptionIsItsKindFingerprintAndOrigin() {
        let secrets = TestSecrets()
        secrets.register("described-secret-value", as: .clientSecret, origin: "Here.swift:3")
        let text = "\(secrets.all[0])"
        #expect(text.hasPrefix("client secret "))
        #expect(text.hasSuffix("(from Here.swift:3)"))
        #expect(!text.contains("described-secret-value"))
    }
}
