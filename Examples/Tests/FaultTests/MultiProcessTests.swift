import DemoAuthServer
import Foundation
import Testing
import TokenKit
import TokenKitLogCheck

extension ChildProcessTests {
    /// Several app processes share one `FileTokenStore` directory and one demo server. The store's cross-process
    /// lock and the re-read before refreshing (rule 3) must make each expiry cost exactly one refresh, even with
    /// reuse detection on and no grace window, where a second refresh with the same token would revoke the session.
    @Suite("Several processes on one file store", .logLeakCheck())
    struct MultiProcessTests {
        static let processes = 4
        static let requests = 50
        static let expiries = 3
        /// Short enough to keep the test near 10 s, long enough that a process starting late still meets the first
        /// expiry with the others (its due time is 0.9 s before `exp`, so about 2 s after sign-in).
        static let accessTokenLifetime = 3

        /// The `session-worker` executable next to this test bundle in the build products directory (`swift test`
        /// builds every target), or the path in `SESSION_WORKER`.
        static func workerURL() throws -> URL {
            if let path = ProcessInfo.processInfo.environment["SESSION_WORKER"] { return URL(fileURLWithPath: path) }
            return try DemoRun.executable("session-worker")
        }

        @Test(.timeLimit(.minutes(1)))
        func fourProcessesMakeOneRefreshPerExpiryAndNoReuse() async throws {
            let worker = try Self.workerURL()
            let configuration = DemoAuthServer.Configuration(
                accessTokenLifetime: .seconds(Self.accessTokenLifetime), reuseDetection: true, graceWindow: .zero)
            Demo.registerSecrets(of: configuration)
            let server = DemoAuthServer(configuration: configuration, logger: Demo.traceLogger)
            let baseURL = try await server.start()
            let directory = FileManager.default.temporaryDirectory.appending(path: "multi-process-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }

            // Sign in once; the workers find the session in the store.
            let transport = Demo.transport()
            let signIn = TokenRefreshClient(
                strategy: JSONEndpointRefreshStrategy(baseURL: baseURL, apiKey: Demo.apiKey, transport: transport),
                store: FileTokenStore(directory: directory))
            try await signIn.signIn(Demo.login(baseURL: baseURL, transport: transport))
            let start = server.stats

            let arguments = [
                "--server", baseURL.absoluteString, "--store-dir", directory.path, "--requests", "\(Self.requests)",
                "--expiries", "\(Self.expiries)",
            ]
            let outcomes = try await withThrowingTaskGroup(of: WorkerOutcome.self) { group in
                for _ in 0..<Self.processes {
                    group.addTask { try await WorkerOutcome.run(worker, arguments: arguments) }
                }
                var outcomes: [WorkerOutcome] = []
                for try await outcome in group { outcomes.append(outcome) }
                return outcomes
            }
            await server.stop()

            for outcome in outcomes {
                #expect(outcome.status == 0, "a worker failed: \(outcome.output)")
            }
            let stats = server.stats
            #expect(stats.refreshes - start.refreshes == Self.expiries)
            #expect(stats.refreshAttempts - start.refreshAttempts == Self.expiries)
            #expect(stats.reuseDetections == 0)
            #expect(stats.rejectedRefreshes == 0)
            #expect(stats.logins == 1)
            #expect(stats.resourceRequests == Self.processes * Self.requests * Self.expiries)
            #expect(stats.rejectedResourceRequests == 0)
        }
    }
}

/// One finished worker process: its exit status and what it printed.
struct WorkerOutcome: Sendable {
    let status: Int32
    let output: String

    /// Launches `executable` and waits for it to exit (its output goes to a file, so a full pipe cannot stall it).
    static func run(_ executable: URL, arguments: [String]) async throws -> WorkerOutcome {
        let log = FileManager.default.temporaryDirectory.appending(path: "session-worker-\(UUID().uuidString).log")
        try #require(FileManager.default.createFile(atPath: log.path, contents: nil), "cannot create \(log.path)")
        defer { try? FileManager.default.removeItem(at: log) }
        let handle = try FileHandle(forWritingTo: log)
        defer { try? handle.close() }
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardOutput = handle
        process.standardError = handle
        let status = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<Int32, any Error>) in
            process.terminationHandler = { process in continuation.resume(returning: process.terminationStatus) }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        let output = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        return WorkerOutcome(status: status, output: output)
    }
}
