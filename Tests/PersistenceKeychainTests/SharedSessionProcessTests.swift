import AuthToken
import Foundation
import Persistence
import PersistenceKeychain
import Testing
import TokenKitKeychainTesting
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting

/// An app and two extensions, three real processes, share one session through the Keychain simulator's file,
/// a lock file and notifications in a shared directory, against a token server that rotates refresh tokens and
/// revokes the family on reuse.
@Suite(.serialized, .logLeakCheck()) struct SharedSessionProcessTests {
    static func probeURL() throws -> URL { try ChildProcess.executable(named: "KeychainSessionProbe") }

    /// The app and its extensions as probe processes, on a clock starting at 1_800_000_000; what goes wrong in a
    /// process is an issue. The watchdog is a safety net, not a wait: alone a test takes a second; inside a whole
    /// loaded `swift test` one has taken 80 s (the other suites keep the cooperative pool busy), hence the bound,
    /// which stays within the tests' time limit.
    static func processes(
        watchdog: Duration = .seconds(240), onWatchdog: @escaping @Sendable () -> Void = {}
    ) throws -> SharedSessionProcesses {
        try SharedSessionProcesses(
            executable: probeURL(), start: 1_800_000_000, watchdog: watchdog,
            report: { Issue.record(Comment(rawValue: $0)) }, onWatchdog: onWatchdog)
    }

    /// The app signed in earlier (its pair is in the shared Keychain item, generation 1); then the app and two
    /// extensions start and restore it.
    static func launchSignedIn(
        _ processes: SharedSessionProcesses, server: SimulatedTokenServer, port: Int
    ) async throws -> (store: KeychainTokenStore, children: [SharedSessionProcess]) {
        let first = TestSecrets.shared.register(await server.issueSession(userID: "user-1"))
        let keychain = KeychainSimulator(
            file: processes.keychainFile, configuration: .init(accessGroups: ["ABCDE12345.com.example.shared"]))
        let store = KeychainTokenStore(
            configuration: .init(service: "com.example.fitiq.tokens", accessGroup: "ABCDE12345.com.example.shared"),
            keychain: keychain)
        try await store.save(
            StoredSession(token: first, userID: "user-1", generation: 1), account: "default", condition: .absent)
        let children = try ["app", "widget", "share"].map {
            try processes.launch($0, arguments: ["http://127.0.0.1:\(port)"])
        }
        for child in children {
            child.send("restore")
            #expect(await child.next("state") == "signedIn(user-1)", "\(child.name)")
        }
        return (store, children)
    }

    /// Holds the first response the server has answered (a refresh it has already rotated) until released.
    final class Gate: Sendable {
        let entered = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        private let armed = Locked(true)

        func pass() {
            guard
                armed.withLock({ armed in
                    defer { armed = false }; return armed
                })
            else { return }
            entered.signal()
            release.wait()
        }

        /// Returns once a response is held.
        func waitUntilEntered() async {
            await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    self.entered.wait()
                    continuation.resume()
                }
            }
        }
    }

    @Test(.timeLimit(.minutes(5)))
    func anAppAndTwoExtensionsRefreshOncePerExpiryAndAllEndWithTheNewestPair() async throws {
        let processes = try Self.processes {
            Issue.record("an expected line did not come within 240 s; the children were killed")
        }
        defer { processes.stop() }

        let server = SimulatedTokenServer(
            configuration: .init(apiKey: "probe-api-key-51c", accessTokenLifetime: 600, detectsReuse: true),
            now: processes.now)
        let loopback = try serveOverLoopback(server)
        defer { loopback.stop() }

        let (store, children) = try await Self.launchSignedIn(processes, server: server, port: loopback.port)
        let (widget, share) = (children[1], children[2])

        // Expiry 1: all three need a token at once.
        try processes.setClock(1_800_000_000 + 601)
        children.forEach { $0.send("use") }
        var tokens: [String?] = []
        for child in children { tokens.append(await child.next("token")) }
        #expect(Set(tokens).count == 1, "every process uses the one refreshed pair: \(tokens)")
        #expect(await server.refreshCount == 1)

        // Expiries 2 and 3: one extension is awake and refreshes; the two asleep adopt its pair when notified.
        for (round, awake) in [(2, widget), (3, share)] {
            try processes.setClock(1_800_000_000 + 601 * Double(round))
            awake.send("use")
            let refreshed = try #require(await awake.next("token"), "round \(round)")
            for asleep in children where asleep !== awake {
                // Adoptions from an earlier round may come first (a notification that crossed its own refresh).
                #expect(await asleep.waitFor("adopted", refreshed), "round \(round): \(asleep.name)")
            }
            #expect(await server.refreshCount == round)
        }

        #expect(await server.refreshCount == 3)
        #expect(await server.reuseDetections == 0)
        let newest = try #require(await store.load(account: "default").session)
        #expect(newest.generation == 4)
        for child in children {
            child.send("show")
            #expect(await child.next("holding") == newest.token.fingerprint, "\(child.name)")
        }
    }

    @Test(.timeLimit(.minutes(5)))
    func extensionsThatReadTheOldPairWhileTheAppHoldsTheLockAndHasRotatedAdoptTheNewPairWithoutReuse() async throws {
        let gate = Gate()
        let processes = try Self.processes {
            Issue.record("an expected line did not come within 240 s; the children were killed")
            gate.release.signal()
        }
        defer { processes.stop() }

        let server = SimulatedTokenServer(
            configuration: .init(apiKey: "probe-api-key-51c", accessTokenLifetime: 600, detectsReuse: true),
            now: processes.now)
        let loopback = try serveOverLoopback(server) { point, _ in
            if point == .afterAnswer { gate.pass() }
            return false
        }
        defer {
            gate.release.signal()
            loopback.stop()
        }

        let (_, children) = try await Self.launchSignedIn(processes, server: server, port: loopback.port)
        let (app, widget, share) = (children[0], children[1], children[2])

        // The app takes the lock and the server rotates the pair; its answer is held, so nothing is saved yet.
        try processes.setClock(1_800_000_000 + 601)
        app.send("use")
        await gate.waitUntilEntered()
        // Now both extensions find the old pair expired and ask for the lock the app holds.
        for child in [widget, share] {
            child.send("use")
            #expect(await child.waitFor("lock-wait", String(1_800_000_000.0 + 601)), "\(child.name)")
        }
        gate.release.signal()
        let token = try #require(await app.next("token"))
        for child in [widget, share] {
            #expect(await child.next("token") == token, "\(child.name) uses the app's pair")
        }
        #expect(await server.refreshCount == 1)
        #expect(await server.reuseDetections == 0)
    }
}
