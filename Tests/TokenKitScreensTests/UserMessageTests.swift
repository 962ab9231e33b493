import Foundation
import HTTPTypes
import NetworkRetry
import Testing
import TokenKitLogCheck
import TokenKitScreens
import TokenKitTesting
import TokenRefresh

/// Seed 004's messages in English and Japanese, from the package's resources, and the server's error texts.
@Suite(.logLeakCheck()) struct UserMessageTests {
    @Test func everyMessageHasItsTextInBothLanguages() {
        for key in UserMessage.Key.allCases {
            for language in UserMessage.Language.allCases {
                let text = UserMessage(key, count: 3).text(in: language)
                #expect(text != key.rawValue, "\(key) has no \(language) text: the resources were not found")
                #expect(!text.isEmpty)
            }
        }
    }

    @Test func theSeedsJapaneseStringsAreShownAsWritten() {
        #expect(UserMessage(.reauthenticationRequiredTitle).text(in: .japanese) == "認証方式が更新されました")
        #expect(
            UserMessage(.reauthenticationRequired).text(in: .japanese)
                == "セキュリティ向上のため、ユーザー名とパスワードでの再ログインが必要です。")
        #expect(UserMessage(.sessionExpired).text(in: .japanese) == "セッションが期限切れです。再度ログインしてください。")
        #expect(UserMessage(for: URLError(.notConnectedToInternet)).text(in: .japanese) == "インターネット接続を確認してください")
        #expect(UserMessage(for: URLError(.timedOut)).text(in: .japanese) == "接続がタイムアウトしました。もう一度お試しください。")
        #expect(UserMessage(for: URLError(.badServerResponse)).text(in: .japanese) == "ネットワークエラーが発生しました")
    }

    @Test func networkFailuresInsideTokenKitErrorsMapLikeTheSeedsSwitch() {
        let offline = TokenRefreshError.transient
        #expect(UserMessage(for: offline).key == .networkError)
        #expect(UserMessage(for: NetworkRetryError.timedOut).key == .timedOut)
        #expect(UserMessage(for: NetworkRetryError.cannotConnect).key == .offline)
        #expect(UserMessage(for: TokenRefreshError.timeout).key == .timedOut)
        #expect(UserMessage(for: TokenRefreshError.signInRejected).key == .invalidCredentials)
        #expect(UserMessage(for: TokenRefreshError.sessionInvalidated).key == .sessionExpired)
        #expect(UserMessage(for: TokenRefreshError.refreshTokenRejected).key == .sessionExpired)
    }

    @Test func theServersKnownErrorTextsBecomeTypedErrors() throws {
        let cases: [(String, AuthServerError.Kind, String)] = [
            ("Username already exists", .usernameTaken, "このユーザー名は既に使用されています"),
            ("Invalid credentials", .invalidCredentials, "ユーザー名またはパスワードが正しくありません"),
            ("Session expired", .sessionExpired, "セッションが期限切れです"),
        ]
        for (text, kind, japanese) in cases {
            let body = try JSONSerialization.data(withJSONObject: ["error": text])
            let error = try #require(AuthServerError(status: 400, body: body))
            #expect(error.kind == kind)
            #expect(error.status == 400)
            #expect(error.message.text(in: .japanese) == japanese)
            #expect(UserMessage(for: error) == error.message)
        }
    }

    @Test func anUnknownServerTextIsNeverShownOrKept() throws {
        let secretish = "token eyJhbGciOiJIUzI1NiJ9.leaked-in-an-error"
        let body = try JSONSerialization.data(withJSONObject: ["error": secretish])
        let error = try #require(AuthServerError(status: 500, body: body))
        #expect(error.kind == .unrecognized)
        for language in UserMessage.Language.allCases {
            #expect(!error.message.text(in: language).contains("eyJ"))
        }
        #expect(!String(describing: error).contains("eyJ"))
        #expect(!(error.errorDescription ?? "").contains("eyJ"))
    }

    @Test func bodiesThatAreNotAnErrorObjectAreNotAServerError() {
        for body in ["", "null", "[]", #"{"error": 42}"#, #"{"message": "x"}"#, "<html>", "{\"error\":"] {
            #expect(AuthServerError(status: 400, body: Data(body.utf8)) == nil, "\(body)")
        }
        let huge = Data(#"{"error": ""#.utf8) + Data(repeating: 0x61, count: 100_000) + Data(#""}"#.utf8)
        #expect(AuthServerError(status: 400, body: huge) == nil)
    }

    @Test func signUpFieldProblemsHaveTheSeedsInlineMessages() {
        let short = CredentialRules.check(username: "ab")
        #expect(short.map { UserMessage(for: $0).text(in: .japanese) } == ["3文字以上入力してください"])
        let long = CredentialRules.check(username: String(repeating: "a", count: 21))
        #expect(long.map { UserMessage(for: $0).text(in: .japanese) } == ["20文字以内で入力してください"])
        let invalid = CredentialRules.check(username: "a b!")
        #expect(invalid.map { UserMessage(for: $0).text(in: .japanese) } == ["英数字、_、-のみ使用できます"])
        #expect(UserMessage(for: .tooShort(minimum: 8)).text(in: .english) == "Please enter at least 8 characters.")
    }

    @Test func a401ThatARefreshDidNotCureOnABearerAPIReadsAsAnExpiredSessionAsOnTheCookiePath() async throws {
        let issued = Locked(0)
        let client = TokenRefreshClient(
            strategy: ClosureRefreshStrategy { _ in
                let serial = issued.withLock { count in
                    count += 1
                    return count
                }
                return TokenResponse(accessToken: "bearer-api-access-token-\(serial)", expiresIn: 3600)
            })
        let unauthorized = MockTransport.Reply.response(
            status: .unauthorized, headers: [.wwwAuthenticate: #"Bearer error="invalid_token""#])
        let api = AuthenticatedClient(
            transport: MockTransport(script: [unauthorized, unauthorized]), tokenProvider: client,
            configuration: .init(allowedOrigins: [HTTPOrigin(string: "https://api.example.com")!]))
        let error = await #expect(throws: NetworkRetryError.unauthorizedAfterRefresh) {
            try await api.executeWithAutoRetry(
                HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/me"))
        }
        let message = UserMessage(for: try #require(error))
        #expect(message.key == .sessionExpired)
        // The cookie path's message for a 401 its check with the server confirmed.
        let cookiePath = UserMessage(for: TokenRefreshError.sessionInvalidated)
        #expect(message.text(in: .english) == cookiePath.text(in: .english))
        #expect(message.text(in: .japanese) == cookiePath.text(in: .japanese))
        #expect(message.text(in: .japanese) == "セッションが期限切れです。再度ログインしてください。")
    }
}
