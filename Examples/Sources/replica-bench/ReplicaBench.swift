import ArgumentParser
import AsyncHTTPClient
import DemoAppSupport
import DemoAuthServer
import Foundation
import Logging
import PostgresNIO
import TokenKit
import TokenKitAsyncHTTPClient
import TokenKitPostgres

/// `replica-bench`: what coordinating a refresh through PostgreSQL adds over a single process (issue 18: at most
/// 5 ms on loopback).
///
/// Against the demo server in this process, one client refreshes its session over an `InMemoryTokenStore`, another
/// over a `PostgresTokenStore` (advisory lock, re-read, generation-conditional write), in alternating batches of
/// the same run. It prints the median milliseconds per refresh of each, the difference, and whether it is within
/// the bound. A miss is printed, not an error: the figure depends on the machine.
@main
struct ReplicaBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replica-bench",
        abstract: "Milliseconds a PostgreSQL-coordinated refresh adds over a single-process refresh.")

    @Option(help: ArgumentHelp("The PostgreSQL server, such as postgres://user@127.0.0.1:5432/db.", valueName: "url"))
    var postgresURL: String

    @Option(help: "Refreshes per store, in batches that alternate between the stores.")
    var refreshes = 200

    @Option(help: "Refreshes per batch.")
    var batch = 20

    @Option(help: "The bound on the difference, in milliseconds.")
    var boundMilliseconds = 5.0

    func validate() throws {
        guard (10...10_000).contains(refreshes) else { throw ValidationError("--refreshes must be 10...10000") }
        guard (1...refreshes).contains(batch) else { throw ValidationError("--batch must be 1...--refreshes") }
    }

    func run() async throws {
        var serverLogger = Logger(label: "demo-auth-server")
        serverLogger.logLevel = .warning
        let server = DemoAuthServer(
            configuration: .init(reuseDetection: true, graceWindow: .zero), logger: serverLogger)
        let baseURL = try await server.start()
        let http = HTTPClient(
            eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
        let postgres = PostgresClient(configuration: try Self.postgresConfiguration(postgresURL))
        let table = "tokenkit_bench_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let outcome: Result<(Double, Double), any Error>
        do {
            outcome = .success(
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask { await postgres.run() }
                    defer { group.cancelAll() }
                    let transport = AsyncHTTPClientTransport(client: http, timeout: .seconds(10))
                    let local = try await signedInClient(
                        store: InMemoryTokenStore(), baseURL: baseURL, transport: transport)
                    let coordinated = try await signedInClient(
                        store: PostgresTokenStore(client: postgres, configuration: .init(tableName: table)),
                        baseURL: baseURL, transport: transport)
                    // Warm up both paths (connections, the table, the first JIT-free rounds) before measuring.
                    _ = try await timedRefreshes(local, count: batch)
                    _ = try await timedRefreshes(coordinated, count: batch)
                    var localTimes: [Double] = []
                    var coordinatedTimes: [Double] = []
                    for _ in 0..<(refreshes / batch) {
                        localTimes += try await timedRefreshes(local, count: batch)
                        coordinatedTimes += try await timedRefreshes(coordinated, count: batch)
                    }
                    _ = try? await postgres.query("DROP TABLE IF EXISTS \(unescaped: table)")
                    return (Self.median(localTimes), Self.median(coordinatedTimes))
                })
        } catch {
            outcome = .failure(error)
        }
        try? await http.shutdown()
        await server.stop()
        let (local, coordinated) = try outcome.get()
        let added = coordinated - local
        let stats = server.stats
        let verdict = added <= boundMilliseconds ? "within" : "MISS"
        print(
            "replica-bench: single-process refresh \(Self.ms(local)) ms, PostgreSQL-coordinated "
                + "\(Self.ms(coordinated)) ms (median of \(refreshes / batch * batch) each)")
        print(
            "replica-bench: PostgreSQL coordination adds \(Self.ms(added)) ms per refresh "
                + "(bound \(Self.ms(boundMilliseconds)) ms): \(verdict)")
        print("replica-bench: server counted \(stats.refreshes) refreshes, \(stats.reuseDetections) reuse detections")
    }

    /// A client over `store`, signed in to the demo server, whose breaker allows a refresh loop.
    private func signedInClient(
        store: any TokenStore, baseURL: URL, transport: any HTTPTransport
    ) async throws -> TokenRefreshClient {
        let client = TokenRefreshClient(
            strategy: JSONEndpointRefreshStrategy(baseURL: baseURL, apiKey: "demo-api-key", transport: transport),
            store: store,
            configuration: .init(maximumRefreshes: 1_000_000, breakerWindow: .seconds(1)))
        try await client.signIn(
            fitIQLogin(
                baseURL: baseURL, email: "demo@example.com", password: "password123", apiKey: "demo-api-key",
                transport: transport))
        return client
    }

    /// Milliseconds of each of `count` forced refreshes in a row.
    private func timedRefreshes(_ client: TokenRefreshClient, count: Int) async throws -> [Double] {
        var times: [Double] = []
        let clock = ContinuousClock()
        for _ in 0..<count {
            let current = try await client.validToken()
            let elapsed = try await clock.measure {
                _ = try await client.refreshToken(afterRejectionOf: current.accessToken)
            }
            times.append(Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1e3)
        }
        return times
    }

    /// Milliseconds with two decimals.
    private static func ms(_ value: Double) -> String { String(format: "%.2f", value) }

    private static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    /// The pool's configuration from a `postgres://` URL (no TLS: the server is on loopback).
    private static func postgresConfiguration(_ text: String) throws -> PostgresClient.Configuration {
        guard let url = URLComponents(string: text), let host = url.host, let user = url.user else {
            throw ValidationError("--postgres-url must look like postgres://USER[:PASSWORD]@HOST:PORT/DATABASE")
        }
        let database = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        return PostgresClient.Configuration(
            host: host, port: url.port ?? 5432, username: user, password: url.password,
            database: database.isEmpty ? nil : database, tls: .disable)
    }
}
