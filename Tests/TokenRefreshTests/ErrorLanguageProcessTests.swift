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
    /// The child is waited for on a thread of its own, not on one of the cooperative pool the other tests need.
    static func messages(_ variables: [String: String]) async throws -> [String] {
        let probe = try probeURL()
        let (status, data) = try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try run(probe, variables) }) }
        }
        #expect(status == 0)
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    /// Runs the probe and waits for it: blocks the calling thread.
    private static func run(_ probe: URL, _ variables: [String: String]) throws -> (Int32, Data) {
        let process = Process()
        process.executableURL = probe
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
        return (process.terminationStatus, data)
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
