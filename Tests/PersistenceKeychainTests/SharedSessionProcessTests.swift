import AuthToken
import Foundation
import HTTPTypes
import Persistence
import PersistenceKeychain
import Testing
import TokenKitKeychainTesting
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An app and two extensions, three real processes, share one session through the Keychain simulator's file,
/// a lock file and notifications in a shared directory, against a token server that rotates refresh tokens and
/// revokes the family on reuse.
@Suite(.serialized, .logLeakCheck()) struct SharedSessionProcessTests {
    /// A child process speaking the probe's line protocol.
    final class Child: @unchecked Sendable {
        let name: String
        let process = Process()
        private let input = Pipe()
        private let output = Pipe()
        private let lock = NSLock()
        private var buffer: [UInt8] = []  // protected by `lock`
        private let exited = DispatchSemaphore(value: 0)

        init(name: String, probe: URL, arguments: [String]) throws {
            // A child that died (killed by the watchdog, say) must fail the test, not end the test run: writing to
            // its stdin then fails with EPIPE instead of raising SIGPIPE in this process.
            signal(SIGPIPE, SIG_IGN)
            self.name = name
            process.executableURL = probe
            process.arguments = arguments + [name]
            process.standardInput = input
            process.standardOutput = output
            process.terminationHandler = { [exited] _ in exited.signal() }
            try process.run()
        }

        func send(_ command: String) {
            guard process.isRunning else { return }
            try? input.fileHandleForWriting.write(contentsOf: Data((command + "\n").utf8))
        }

        /// Whether a line `<prefix> <value>` comes (earlier lines are skipped), before the child's output ends.
        func waitFor(_ prefix: String, _ value: String) async -> Bool {
            while let line = await next(prefix) {
                if line == value { return true }
            }
            return false
        }

        /// The next line starting with `prefix` (other lines are skipped), read on a thread of its own; `nil` when
        /// the child's output ends or it answers a command with an error (recorded as an issue, so a failure says
        /// why instead of waiting for the watchdog).
        func next(_ prefix: String) async -> String? {
            let line: String? = await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    while let line = self.readLine() {
                        if line.hasPrefix(prefix + " ") || line.hasPrefix("error ") {
                            continuation.resume(returning: line)
                            return
                        }
                    }
                    continuation.resume(returning: nil)
                }
            }
            guard let line else { return nil }
            if line.hasPrefix("error ") && !prefix.hasPrefix("error") {
                Issue.record("\(name) answered \(line) while \(prefix) was expected")
                return nil
            }
            return String(line.dropFirst(prefix.count + 1))
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

        /// Asks the child to quit and waits for it at most 30 s, then kills it: a hung child never holds up the run.
        func stop() {
            send("quit")
            if exited.wait(timeout: .now() + 30) == .timedOut {
                Issue.record("\(name) did not quit within 30 s; killed")
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }
    }

    static func probeURL() throws -> URL {
        #if os(Linux)
            let products = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        #else
            let bundle = Bundle.allBundles.first { $0.bundlePath.hasSuffix(".xctest") } ?? Bundle.main
            let products = bundle.bundleURL.deletingLastPathComponent()
        #endif
        let probe = products.appendingPathComponent("KeychainSessionProbe")
        try #require(FileManager.default.isExecutableFile(atPath: probe.path), "KeychainSessionProbe was not built")
        return probe
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

    /// Serves the simulated token server over HTTP on loopback; the server's clock is `clock`.
    static func serve(_ server: SimulatedTokenServer, gate: Gate? = nil) throws -> LoopbackServer {
        try LoopbackServer { request, port in
            var fields = HTTPFields()
            for (name, values) in request.headers {
                guard let fieldName = HTTPField.Name(name) else { continue }
                for value in values { fields.append(HTTPField(name: fieldName, value: value)) }
            }
            let httpRequest = HTTPRequest(
                method: HTTPRequest.Method(request.method) ?? .get, scheme: "http", authority: "127.0.0.1:\(port)",
                path: request.path, headerFields: fields)
            let answer = Locked<(HTTPResponse, Data)?>(nil)
            let done = DispatchSemaphore(value: 0)
            Task {
                let result = try? await server.send(httpRequest, body: request.body)
                answer.withLock { $0 = result }
                done.signal()
            }
            done.wait()
            gate?.pass()
            guard let (response, body) = answer.withLock({ $0 }) else { return .init(status: 502) }
            return .init(
                status: response.status.code,
                headers: response.headerFields.map { ($0.name.canonicalName, $0.value) }, body: body)
        }
    }

    @Test(.timeLimit(.minutes(5)))
    func anAppAndTwoExtensionsRefreshOncePerExpiryAndAllEndWithTheNewestPair() async throws {
        let probe = try Self.probeURL()
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let container = scratch.url.appendingPathComponent("group.com.example.shared", isDirectory: true)
        try FileManager.default.createDirectory(at: container, withIntermediateDirectories: true)
        let keychainFile = scratch.url.appendingPathComponent("keychain.json")
        let clockFile = container.appendingPathComponent("clock")
        let clock = Locked(1_800_000_000.0)
        func setClock(_ seconds: Double) throws {
            clock.withLock { $0 = seconds }
            try String(seconds).write(to: clockFile, atomically: true, encoding: .utf8)
        }
        try setClock(1_800_000_000)

        let server = SimulatedTokenServer(
            configuration: .init(apiKey: "probe-api-key-51c", accessTokenLifetime: 600, detectsReuse: true),
            now: { Date(timeIntervalSince1970: clock.withLock { $0 }) })
        let loopback = try Self.serve(server)
        defer { loopback.stop() }

        // The app signed in earlier: its pair is in the shared Keychain item, generation 1.
        let first = TestSecrets.shared.register(await server.issueSession(userID: "user-1"))
        let keychain = KeychainSimulator(
            file: keychainFile, configuration: .init(accessGroups: ["ABCDE12345.com.example.shared"]))
        let store = KeychainTokenStore(
            configuration: .init(service: "com.example.fitiq.tokens", accessGroup: "ABCDE12345.com.example.shared"),
            keychain: keychain)
        try await store.save(
            StoredSession(token: first, userID: "user-1", generation: 1), account: "default", condition: .absent)

        let arguments = [keychainFile.path, container.path, "http://127.0.0.1:\(loopback.port)"]
        let app = try Child(name: "app", probe: probe, arguments: arguments)
        let widget = try Child(name: "widget", probe: probe, arguments: arguments)
        let share = try Child(name: "share", probe: probe, arguments: arguments)
        let children = [app, widget, share]
        // A safety net, not a wait: if an expected line never comes, the children are killed, their output ends,
        // and the test fails (saying so) instead of hanging. Alone the test takes a second; inside a whole loaded
        // `swift test` it has taken 80 s (the other suites keep the cooperative pool busy), hence the bound, which
        // stays within the test's time limit.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(240))
            Issue.record("an expected line did not come within 240 s; the children were killed")
            for child in children { kill(child.process.processIdentifier, SIGKILL) }
        }
        defer {
            watchdog.cancel()
            children.forEach { $0.stop() }
        }

        for child in children {
            child.send("restore")
            #expect(await child.next("state") == "signedIn(user-1)", "\(child.name)")
        }

        // Expiry 1: all three need a token at once.
        try setClock(1_800_000_000 + 601)
        children.forEach { $0.send("use") }
        var tokens: [String?] = []
        for child in children { tokens.append(await child.next("token")) }
        #expect(Set(tokens).count == 1, "every process uses the one refreshed pair: \(tokens)")
        #expect(await server.refreshCount == 1)

        // Expiries 2 and 3: one extension is awake and refreshes; the two asleep adopt its pair when notified.
        for (round, awake) in [(2, widget), (3, share)] {
            try setClock(1_800_000_000 + 601 * Double(round))
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
        let probe = try Self.probeURL()
        let scratch = try ScratchDirectory()
        defer { scratch.remove() }
        let container = scratch.url.appendingPathComponent("group.com.example.shared", isDirectory: true)
        try FileManager.default.createDirectory(at: container, withIntermediateDirectories: true)
        let keychainFile = scratch.url.appendingPathComponent("keychain.json")
        let clockFile = container.appendingPathComponent("clock")
        let clock = Locked(1_800_000_000.0)
        func setClock(_ seconds: Double) throws {
            clock.withLock { $0 = seconds }
            try String(seconds).write(to: clockFile, atomically: true, encoding: .utf8)
        }
        try setClock(1_800_000_000)

        let server = SimulatedTokenServer(
            configuration: .init(apiKey: "probe-api-key-51c", accessTokenLifetime: 600, detectsReuse: true),
            now: { Date(timeIntervalSince1970: clock.withLock { $0 }) })
        let gate = Gate()
        let loopback = try Self.serve(server, gate: gate)
        defer {
            gate.release.signal()
            loopback.stop()
        }

        let first = TestSecrets.shared.register(await server.issueSession(userID: "user-1"))
        let keychain = KeychainSimulator(
            file: keychainFile, configuration: .init(accessGroups: ["ABCDE12345.com.example.shared"]))
        let store = KeychainTokenStore(
            configuration: .init(service: "com.example.fitiq.tokens", accessGroup: "ABCDE12345.com.example.shared"),
            keychain: keychain)
        try await store.save(
            StoredSession(token: first, userID: "user-1", generation: 1), account: "default", condition: .absent)

        let arguments = [keychainFile.path, container.path, "http://127.0.0.1:\(loopback.port)"]
        let app = try Child(name: "app", probe: probe, arguments: arguments)
        let widget = try Child(name: "widget", probe: probe, arguments: arguments)
        let share = try Child(name: "share", probe: probe, arguments: arguments)
        let children = [app, widget, share]
        // A safety net, not a wait (see the test above).
        let watchdog = Task {
            try await Task.sleep(for: .seconds(240))
            Issue.record("an expected line did not come within 240 s; the children were killed")
            gate.release.signal()
            for child in children { kill(child.process.processIdentifier, SIGKILL) }
        }
        defer {
            watchdog.cancel()
            children.forEach { $0.stop() }
        }
        for child in children {
            child.send("restore")
            #expect(await child.next("state") == "signedIn(user-1)", "\(child.name)")
        }

        // The app takes the lock and the server rotates the pair; its answer is held, so nothing is saved yet.
        try setClock(1_800_000_000 + 601)
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
