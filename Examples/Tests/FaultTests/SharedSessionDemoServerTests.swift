import DemoAppSupport
import DemoAuthServer
import Foundation
import PersistenceKeychain
import Testing
import TokenKit
import TokenKitKeychainTesting
import TokenKitLogCheck

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

    @Test(.timeLimit(.minutes(3)))
    func anAppAndTwoExtensionsRefreshOncePerExpiryAgainstTheDemoServerAndAllEndWithTheNewestPair() async throws {
        let start = 1_800_000_000.0
        // The watchdog is a safety net, not a wait: if an expected line never comes, the processes are killed, their
        // output ends, and the test fails instead of hanging.
        let processes = try SharedSessionProcesses(
            executable: try #require(SharedSessionProbe.url()), start: start, watchdog: .seconds(90),
            report: { Issue.record(Comment(rawValue: $0)) })
        defer { processes.stop() }

        let configuration = DemoAuthServer.Configuration(
            accessTokenLifetime: .seconds(Int(Self.lifetime)), reuseDetection: true, graceWindow: .zero,
            apiKey: Self.apiKey)
        Demo.registerSecrets(of: configuration)
        let server = DemoAuthServer(
            configuration: configuration, now: processes.now,
            logger: Demo.traceLogger)
        let baseURL = try await server.start()

        // The app signed in earlier: its pair is in the shared Keychain item.
        let keychain = KeychainSimulator(
            file: processes.keychainFile, configuration: .init(accessGroups: ["ABCDE12345.com.example.shared"]))
        let store = KeychainTokenStore(
            configuration: .init(service: "com.example.fitiq.tokens", accessGroup: "ABCDE12345.com.example.shared"),
            keychain: keychain)
        let transport = Demo.transport()
        let now = processes.now
        let signIn = TokenRefreshClient(
            strategy: JSONEndpointRefreshStrategy(
                baseURL: baseURL, apiKey: Self.apiKey, transport: transport, now: now),
            store: store, now: now)
        try await signIn.signIn(
            fitIQLogin(
                baseURL: baseURL, email: "demo@example.com", password: "password123", apiKey: Self.apiKey,
                transport: transport))
        let signedIn = server.stats

        let arguments = [baseURL.absoluteString]
        let app = try processes.launch("app", arguments: arguments)
        let widget = try processes.launch("widget", arguments: arguments)
        let share = try processes.launch("share", arguments: arguments)
        let children = [app, widget, share]
        for child in children {
            child.send("restore")
            #expect(await child.next("state") == "signedIn(\(Demo.userID))", "\(child.name)")
        }

        // Expiry 1: all three need a token at once.
        try processes.setClock(start + Self.lifetime + 1)
        children.forEach { $0.send("use") }
        var tokens: [String?] = []
        for child in children { tokens.append(await child.next("token")) }
        #expect(Set(tokens).count == 1, "every process uses the one refreshed pair: \(tokens)")
        #expect(server.stats.refreshes - signedIn.refreshes == 1)

        // Expiries 2 and 3: one extension is awake and refreshes; the two asleep adopt its pair when notified.
        for (round, awake) in [(2, widget), (3, share)] {
            try processes.setClock(start + (Self.lifetime + 1) * Double(round))
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
