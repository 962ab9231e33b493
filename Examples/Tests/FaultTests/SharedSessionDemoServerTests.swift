import DemoAppSupport
import DemoAuthServer
import Foundation
import PersistenceKeychain
import Testing
import TokenKit
import TokenKitKeychainTesting
import TokenKitLogCheck

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// TokenKit's `KeychainSessionProbe`: an app or extension sharing a session (built with the TokenKit package).
enum SharedSessionProbe {
    /// Its path: `KEYCHAIN_SESSION_PROBE`, or the TokenKit package's `.build/debug`; `nil` when not built.
    static func url() -> URL? {
        let environment = ProcessInfo.processInfo.environment["KEYCHAIN_SESSION_PROBE"]
        let url =
            environment.map { URL(fileURLWithPath: $0) }
            ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
            .appending(path: ".build/debug/KeychainSessionProbe")
        return FileManager.default.isExecutableFile(atPath: url.path) ? url : nil
    }

}

/// An app and two extensions, three real processes, share one session through the Keychain simulator's file, the
/// App Group container's lock file and change notifications, against the demo server (rotation with reuse
/// detection, no grace): the same processes as the TokenKit package's shared-session test, whose server is the
/// simulated one. The processes are TokenKit's `KeychainSessionProbe` (built with the TokenKit package: its
/// `.build/debug`, or the path in `KEYCHAIN_SESSION_PROBE`); the test is skipped when it is not built. The wall
/// clock of the server and of the processes is a file the test moves: nothing waits for a token to expire.
@Suite(
    .serialized, .logLeakCheck(),
    .enabled(
        if: SharedSessionProbe.url() != nil,
        "KeychainSessionProbe is not built: run `swift build` in the TokenKit package first"))
struct SharedSessionDemoServerTests {
    /// The API key the probe sends.
    static let apiKey = "probe-api-key-51c"
    static let lifetime = 600.0

    /// A value shared between the test and the server's clock.
    final class Shared<Value: Sendable>: @unchecked Sendable {
        private let lock = NSLock()
        private var value: Value  // protected by `lock`
        init(_ value: Value) { self.value = value }
        var current: Value {
            get { lock.withLock { value } }
            set { lock.withLock { value = newValue } }
        }
    }

    /// A child process speaking the probe's line protocol.
    final class Child: @unchecked Sendable {
        let name: String
        let process = Process()
        private let input = Pipe()
        private let output = Pipe()
        private let lock = NSLock()
        private var buffer: [UInt8] = []  // protected by `lock`

        init(name: String, probe: URL, arguments: [String]) throws {
            self.name = name
            process.executableURL = probe
            process.arguments = arguments + [name]
            process.standardInput = input
            process.standardOutput = output
            try process.run()
        }

        func send(_ command: String) { input.fileHandleForWriting.write(Data((command + "\n").utf8)) }

        /// Whether a line `<prefix> <value>` comes (earlier ones are skipped) before the output ends.
        func waitFor(_ prefix: String, _ value: String) async -> Bool {
            while let line = await next(prefix) {
                if line == value { return true }
            }
            return false
        }

        /// The next line starting with `prefix` (other lines are skipped), read on a thread of its own.
        func next(_ prefix: String) async -> String? {
            await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    while let line = self.readLine() {
                        if line.hasPrefix(prefix + " ") {
                            continuation.resume(returning: String(line.dropFirst(prefix.count + 1)))
                            return
                        }
                    }
                    continuation.resume(returning: nil)
                }
            }
        }

        private func readLine() -> String? {
            while true {
                let line: String? = lock.withLock {
                    guard let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
                    let line = String(decoding: buffer[..<newline], as: UTF8.self)
                    buffer.removeSubrange(...newline)
                    return line
                }
                if let line { return line }
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { return nil }
                lock.withLock { buffer.append(contentsOf: chunk) }
            }
        }

        func stop() {
            if process.isRunning { send("quit") }
            process.waitUntilExit()
        }
    }

    @Test(.timeLimit(.minutes(3)))
    func anAppAndTwoExtensionsRefreshOncePerExpiryAgainstTheDemoServerAndAllEndWithTheNewestPair() async throws {
        let probe = try #require(SharedSessionProbe.url())
        let scratch = FileManager.default.temporaryDirectory.appending(path: "shared-session-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let container = scratch.appending(path: "group.com.example.shared")
        try FileManager.default.createDirectory(at: container, withIntermediateDirectories: true)
        let keychainFile = scratch.appending(path: "keychain.json")
        let clockFile = container.appending(path: "clock")
        let start = 1_800_000_000.0
        let clock = Shared(start)
        func setClock(_ seconds: Double) throws {
            clock.current = seconds
            try String(seconds).write(to: clockFile, atomically: true, encoding: .utf8)
        }
        try setClock(start)

        let configuration = DemoAuthServer.Configuration(
            accessTokenLifetime: .seconds(Int(Self.lifetime)), reuseDetection: true, graceWindow: .zero,
            apiKey: Self.apiKey)
        Demo.registerSecrets(of: configuration)
        let server = DemoAuthServer(
            configuration: configuration, now: { Date(timeIntervalSince1970: clock.current) },
            logger: Demo.traceLogger)
        let baseURL = try await server.start()

        // The app signed in earlier: its pair is in the shared Keychain item.
        let keychain = KeychainSimulator(
            file: keychainFile, configuration: .init(accessGroups: ["ABCDE12345.com.example.shared"]))
        let store = KeychainTokenStore(
            configuration: .init(service: "com.example.fitiq.tokens", accessGroup: "ABCDE12345.com.example.shared"),
            keychain: keychain)
        let transport = Demo.transport()
        let now: @Sendable () -> Date = { Date(timeIntervalSince1970: clock.current) }
        let signIn = TokenRefreshClient(
            strategy: JSONEndpointRefreshStrategy(
                baseURL: baseURL, apiKey: Self.apiKey, transport: transport, now: now),
            store: store, now: now)
        try await signIn.signIn(
            fitIQLogin(
                baseURL: baseURL, email: "demo@example.com", password: "password123", apiKey: Self.apiKey,
                transport: transport))
        let signedIn = server.stats

        let arguments = [keychainFile.path, container.path, baseURL.absoluteString]
        let app = try Child(name: "app", probe: probe, arguments: arguments)
        let widget = try Child(name: "widget", probe: probe, arguments: arguments)
        let share = try Child(name: "share", probe: probe, arguments: arguments)
        let children = [app, widget, share]
        // A safety net, not a wait: if an expected line never comes, the children are killed, their output ends,
        // and the test fails instead of hanging.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(90))
            for child in children { kill(child.process.processIdentifier, SIGKILL) }
        }
        defer {
            watchdog.cancel()
            children.forEach { $0.stop() }
        }
        for child in children {
            child.send("restore")
            #expect(await child.next("state") == "signedIn(\(Demo.userID))", "\(child.name)")
        }

        // Expiry 1: all three need a token at once.
        try setClock(start + Self.lifetime + 1)
        children.forEach { $0.send("use") }
        var tokens: [String?] = []
        for child in children { tokens.append(await child.next("token")) }
        #expect(Set(tokens).count == 1, "every process uses the one refreshed pair: \(tokens)")
        #expect(server.stats.refreshes - signedIn.refreshes == 1)

        // Expiries 2 and 3: one extension is awake and refreshes; the two asleep adopt its pair when notified.
        for (round, awake) in [(2, widget), (3, share)] {
            try setClock(start + (Self.lifetime + 1) * Double(round))
            awake.send("use")
            let refreshed = try #require(await awake.next("token"), "round \(round)")
            for asleep in children where asleep !== awake {
                #expect(await asleep.waitFor("adopted", refreshed), "round \(round): \(asleep.name)")
            }
            #expect(server.stats.refreshes - signedIn.refreshes == round)
        }

        #expect(server.stats.refreshes - signedIn.refreshes == 3)
        #expect(server.stats.reuseDetections == 0)
        guard case .found(let newest) = await store.load(account: "default") else {
            Issue.record("the shared Keychain item holds no session")
            return
        }
        for child in children {
            child.send("show")
            #expect(await child.next("holding") == newest.token.fingerprint, "\(child.name)")
        }
        await server.stop()
    }
}
