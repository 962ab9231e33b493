import Foundation
import Testing
import TokenKitLogCheck

/// Every public error's `localizedDescription` follows the user's language on Linux too, where
/// `Locale.preferredLanguages` ignores the environment: a child process is started under each locale.
@Suite(.serialized, .logLeakCheck()) struct ErrorLanguageProcessTests {
    /// The probe executable in the build products directory, next to the test binary.
    static func probeURL() throws -> URL {
        if let path = ProcessInfo.processInfo.environment["TOKENKIT_PROBE"] { return URL(fileURLWithPath: path) }
        #if os(Linux)
            let products = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        #else
            let bundle = Bundle.allBundles.first { $0.bundlePath.hasSuffix(".xctest") } ?? Bundle.main
            let products = bundle.bundleURL.deletingLastPathComponent()
        #endif
        let probe = products.appendingPathComponent("TokenStoreProbe")
        try #require(
            FileManager.default.isExecutableFile(atPath: probe.path),
            "TokenStoreProbe was not built next to the tests (\(products.path))")
        return probe
    }

    /// The probe's lines under `locale` (`LANG`, with the other locale variables cleared, or set as given).
    static func messages(_ variables: [String: String]) throws -> [String] {
        let process = Process()
        process.executableURL = try probeURL()
        process.arguments = ["messages"]
        var environment = ProcessInfo.processInfo.environment
        for name in ["LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"] { environment[name] = nil }
        environment.merge(variables) { _, new in new }
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    static let english = [
        "Your session has expired. Please sign in again.",
        "Your saved session cannot be read right now. Unlock the device and try again.",
        "Your session has ended. Please sign in again.",
    ]

    @Test func aJapaneseLocaleGetsJapaneseMessages() throws {
        let lines = try Self.messages(["LANG": "ja_JP.UTF-8"])
        #expect(lines.count == 3)
        #expect(
            lines == [
                "セッションが期限切れです。再度ログインしてください。", "保存されたセッションを今は読み込めません。端末のロックを解除してから、もう一度お試しください。",
                "セッションが終了しました。再度ログインしてください。",
            ])
        #expect(try Self.messages(["LC_ALL": "ja_JP.UTF-8", "LANG": "en_US.UTF-8"]) == lines)
        #expect(try Self.messages(["LANGUAGE": "ja:en", "LANG": "en_US.UTF-8"]) == lines)
    }

    @Test func anEnglishOrUnknownLocaleGetsEnglishMessages() throws {
        #expect(try Self.messages(["LANG": "en_US.UTF-8"]) == Self.english)
        #expect(try Self.messages(["LANG": "C.UTF-8"]) == Self.english)
        #expect(try Self.messages(["LANG": "fr_FR.UTF-8"]) == Self.english)
        // gettext ignores LANGUAGE under the C locale.
        #expect(try Self.messages(["LANGUAGE": "ja", "LANG": "C"]) == Self.english)
    }
}
