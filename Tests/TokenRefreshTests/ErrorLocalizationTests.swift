import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import Testing
import TokenKitCompatibility
import TokenKitLogCheck
import TokenKitScreens
import TokenKitTesting
import TokenRefresh
import TokenVerification

/// Every public error of every module reads in the user's language (English or Japanese) through
/// `localizedDescription`, and never carries a secret in either. The language is set per test task, so the
/// languages are checked side by side without touching the process's locale.
@Suite(.logLeakCheck()) struct ErrorLocalizationTests {
    /// A transport error whose own description carries a token, as a careless HTTP client's might.
    struct LeakyError: Error, CustomStringConvertible {
        let description = "failed sending Bearer access-token-in-cause-l10n-5c1d"
    }

    static let secrets = [
        "access-token-in-cause-l10n-5c1d", "refresh-token-in-detail-l10n-0b7e", "claim-value-l10n-93aa",
    ]

    /// One error per code of every module's error type (new codes join by themselves), with its message key and
    /// its English text (`nil` when the code has none of its own).
    static func everyError() -> [(key: String, error: any Error, english: String?)] {
        var all: [(key: String, error: any Error, english: String?)] = []
        all += AuthTokenError.everyCode.map { ($0.messageKey, $0, $0.englishDescription) }
        all += PersistenceError.everyCode.map { ($0.messageKey, $0, $0.englishDescription) }
        all += NetworkRetryError.everyCode.map { ($0.messageKey, $0, $0.englishDescription) }
        all += SetCookie.Refusal.everyRefusal.map { ($0.messageKey, $0, $0.englishDescription) }
        all += TokenRefreshError.everyCode.map { ($0.messageKey, $0, $0.englishDescription) }
        let offline = TokenRefreshError.transient.with(connectivityFailure: true)
        all.append((offline.messageKey, offline, offline.englishDescription))
        all += APIError.everyCode.map { ($0.messageKey, $0, $0.englishDescription) }
        all += TokenVerificationError.everyCode.map { ($0.messageKey, $0, $0.englishDescription) }
        all += [AuthServerError.Kind.usernameTaken, .invalidCredentials, .sessionExpired, .unrecognized].map {
            let error = AuthServerError(kind: $0)
            return ("AuthServerError.\($0)", error, error.message.text(in: .english))
        }
        return all
    }

    static func text(_ error: any Error, in language: MessageLanguage) -> String {
        MessageLanguage.$override.withValue(language) { error.localizedDescription }
    }

    static func isJapanese(_ text: String) -> Bool {
        text.unicodeScalars.contains { (0x3040...0x30FF).contains($0.value) || (0x4E00...0x9FFF).contains($0.value) }
    }

    @Test func everyErrorCodeOfEveryModuleHasAnEnglishAndAJapaneseText() {
        let all = Self.everyError()
        #expect(all.count >= 96)
        for (key, error, english) in all {
            let englishText = Self.text(error, in: .english)
            let japaneseText = Self.text(error, in: .japanese)
            #expect(english != nil, "\(key) has no English text of its own")
            #expect(englishText == english, "\(key)")
            #expect(!Self.isJapanese(englishText), "\(key)")
            #expect(Self.isJapanese(japaneseText), "\(key) has no Japanese text: \(japaneseText)")
            #expect(!japaneseText.contains("%d"), "\(key)")
        }
    }

    @Test func noSecretAnErrorCarriesReachesItsTextInEitherLanguage() async throws {
        for secret in Self.secrets { TestSecrets.shared.register(secret, as: .accessToken) }
        let leaky = LeakyError()
        var errors: [any Error] = [
            AuthTokenError.invalidClaim(Self.secrets[2]),
            TokenVerificationError.invalidClaim(Self.secrets[2]), TokenVerificationError.missingClaim(Self.secrets[2]),
            NetworkRetryError.transport(leaky), NetworkRetryError.timedOut.with(underlying: leaky),
            TokenRefreshError.transient.with(underlying: leaky).with(connectivityFailure: true),
            TokenRefreshError.signInRejected.with(oauthError: Self.secrets[2]).with(underlying: leaky),
            TokenRefreshError.storageUnavailable.with(
                underlying: PersistenceError.unavailable.with(detail: Self.secrets[1])),
            APIError.httpStatus(503),
        ]
        errors += PersistenceError.everyCode.map { $0.with(detail: "/var/lib/app " + Self.secrets[1]) }
        let exhausted = await #expect(throws: MockTransport.ScriptExhausted.self) {
            try await MockTransport().send(
                HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/"), body: nil)
        }
        let server = SimulatedTokenServer(now: { Date(timeIntervalSince1970: 1_800_000_000) })
        await server.enqueue(.connectionError)
        let dropped = await #expect(throws: SimulatedTokenServer.ConnectionError.self) {
            var request = HTTPRequest(
                method: .post, scheme: "https", authority: "auth.example.com", path: "/oauth/token")
            request.headerFields[.contentType] = "application/x-www-form-urlencoded"
            _ = try await server.send(request, body: Data("grant_type=client_credentials".utf8))
        }
        errors += [try #require(exhausted), try #require(dropped)]
        for error in errors {
            for language in MessageLanguage.allCases {
                let text = Self.text(error, in: language)
                #expect(!text.isEmpty)
                #expect(!text.contains("operation could not be completed"), "\(error)")
                for secret in Self.secrets { #expect(!text.contains(secret), "\(error)") }
            }
            #expect(Self.isJapanese(Self.text(error, in: .japanese)), "\(error)")
        }
        #expect(Self.text(try #require(exhausted), in: .japanese) == "モックトランスポートにはリクエスト 1 への応答がありません。")
        #expect(Self.text(APIError.httpStatus(503), in: .japanese) == "サーバーはリクエストを完了できませんでした（HTTP 503）。")
    }

    @Test func aRefusedSignUpReadsAsWhatTheServerSaidInEitherLanguage() {
        let taken = TokenRefreshError.signInRejected.with(status: 422)
            .with(underlying: AuthServerError(kind: .usernameTaken, status: 422))
        #expect(Self.text(taken, in: .english) == "This username is already taken.")
        #expect(Self.text(taken, in: .japanese) == "このユーザー名は既に使用されています")
        #expect(Self.text(TokenRefreshError.signInRejected, in: .japanese) == "ログインできませんでした。入力内容を確認して、もう一度お試しください。")
    }

    @Test func userMessagesFollowTheSameLanguage() {
        #expect(MessageLanguage.$override.withValue(.japanese) { UserMessage.Language.preferred } == .japanese)
        #expect(MessageLanguage.$override.withValue(.english) { UserMessage.Language.preferred } == .english)
        let expired = AuthServerError(kind: .sessionExpired)
        #expect(Self.text(expired, in: .japanese) == "セッションが期限切れです")
    }

    @Test(arguments: [
        (["LANG": "ja_JP.UTF-8"], MessageLanguage.japanese),
        (["LANG": "en_US.UTF-8"], .english),
        (["LC_ALL": "ja_JP.UTF-8", "LANG": "en_US.UTF-8"], .japanese),
        (["LC_MESSAGES": "ja_JP", "LANG": "en_US.UTF-8"], .japanese),
        (["LANGUAGE": "fr:ja:en", "LANG": "en_US.UTF-8"], .japanese),
        (["LANGUAGE": "ja", "LANG": "C.UTF-8"], .english),
        (["LANG": "POSIX"], .english),
        (["LANG": "fr_FR.UTF-8"], .english),
        ([:], .english),
    ])
    func theUsersLanguageComesFromTheLocaleVariablesOnLinux(environment: [String: String], expected: MessageLanguage) {
        #if !canImport(Darwin)
            #expect(
                (MessageLanguage.first(in: MessageLanguage.userLanguages(environment: environment)) ?? .english)
                    == expected)
        #endif
    }

    @Test func identifiersInEitherFormNameTheirLanguage() {
        #expect(MessageLanguage.first(in: ["ja-JP"]) == .japanese)
        #expect(MessageLanguage.first(in: ["ja_JP.UTF-8"]) == .japanese)
        #expect(MessageLanguage.first(in: ["de-DE", "en-001"]) == .english)
        #expect(MessageLanguage.first(in: ["zh-Hans", "fr"]) == nil)
        #expect(MessageLanguage.first(in: []) == nil)
    }
}
