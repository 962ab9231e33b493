import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTestSupport

/// Every public error's `localizedDescription` follows the user's language on Linux too, where
/// `Locale.preferredLanguages` ignores the environment: a child process is started under each locale.
@Suite(.serialized, .logLeakCheck()) struct ErrorLanguageProcessTests {
    /// The probe executable in the build products directory, next to the test binary.
    static func probeURL() throws -> URL { try ChildProcess.executable(named: "TokenStoreProbe") }

    /// The probe's lines under `locale` (`LANG`, with the other locale variables cleared, or set as given).
    /// The child is waited for on a thread of its own, not on one of the cooperative pool the other tests need.
    static func messages(_ variables: [String: String]) async throws -> [String] {
        var environment = ProcessInfo.processInfo.environment
        for name in ["LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"] { environment[name] = nil }
        environment.merge(variables) { _, new in new }
        let (status, data) = try await ChildProcess.run(
            probeURL(), arguments: ["messages"], environment: environment)
        #expect(status == 0)
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    static let english = [
        "Your session has expired. Please sign in again.",
        "Your saved session cannot be read right now. Unlock the device and try again.",
        "Your session has ended. Please sign in again.",
    ]

    @Test func aJapaneseLocaleGetsJapaneseMessages() async throws {
        let lines = try await Self.messages(["LANG": "ja_JP.UTF-8"])
        #expect(lines.count == 3)
        #expect(
            lines == [
                "セッションが期限切れです。再度ログインしてください。", "保存されたセッションを今は読み込めません。端末のロックを解除してから、もう一度お試しください。",
                "セッションが終了しました。再度ログインしてください。",
            ])
        #expect(try await Self.messages(["LC_ALL": "ja_JP.UTF-8", "LANG": "en_US.UTF-8"]) == lines)
        #expect(try await Self.messages(["LANGUAGE": "ja:en", "LANG": "en_US.UTF-8"]) == lines)
    }

    @Test func anEnglishOrUnknownLocaleGetsEnglishMessages() async throws {
        #expect(try await Self.messages(["LANG": "en_US.UTF-8"]) == Self.english)
        #expect(try await Self.messages(["LANG": "C.UTF-8"]) == Self.english)
        #expect(try await Self.messages(["LANG": "fr_FR.UTF-8"]) == Self.english)
        // gettext ignores LANGUAGE under the C locale.
        #expect(try await Self.messages(["LANGUAGE": "ja", "LANG": "C"]) == Self.english)
    }
}
