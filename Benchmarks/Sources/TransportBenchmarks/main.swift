import AsyncHTTPClient
import AuthToken
import BenchmarkSupport
import Foundation
import HTTPTypes
import NIOPosix
import NetworkRetry
import TokenKitAsyncHTTPClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// AsyncHTTPClient against URLSession for 1,000 authenticated requests, 50 concurrent, reported as a
// ratio. Both go through the same `AuthenticatedClient` (a fixed valid token, so no refresh) to the same
// loopback server, in alternating rounds; each transport with its defaults, as a user would first configure it.

/// Hands out one fixed, valid token: the cost measured is the transport's, not a refresh's.
struct FixedTokenProvider: TokenProvider {
    let token: AuthToken
    func validToken() async throws -> AuthToken { token }
    func refreshToken(afterRejectionOf accessToken: String) async throws -> AuthToken { token }
}

/// One round's figures.
struct Round {
    var seconds: Double
    var latencies: [Double]
    var failures: Int
}

/// `total` requests through `client`, `concurrency` at a time (each worker sends its share one after another).
func round(
    _ client: AuthenticatedClient, _ request: HTTPRequest, total: Int, concurrency: Int
) async -> Round {
    let start = DispatchTime.now().uptimeNanoseconds
    let results = await withTaskGroup(of: ([Double], Int).self) { group in
        for worker in 0..<concurrency {
            let share = total / concurrency + (worker < total % concurrency ? 1 : 0)
            group.addTask {
                var latencies: [Double] = []
                var failures = 0
                for _ in 0..<share {
                    let sent = DispatchTime.now().uptimeNanoseconds
                    do {
                        let (response, _) = try await client.executeWithAutoRetry(request)
                        if response.status != .ok { failures += 1 }
                    } catch {
                        failures += 1
                    }
                    latencies.append(Double(DispatchTime.now().uptimeNanoseconds - sent))
                }
                return (latencies, failures)
            }
        }
        var all: ([Double], Int) = ([], 0)
        for await (latencies, failures) in group {
            all.0 += latencies
            all.1 += failures
        }
        return all
    }
    return Round(
        seconds: Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9, latencies: results.0,
        failures: results.1)
}

func percentile(_ values: [Double], _ fraction: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
}

func milliseconds(_ nanoseconds: Double) -> String { String(format: "%.2f ms", nanoseconds / 1e6) }

func runBenchmarks() async throws -> Bool {
    let token = AuthToken(
        accessToken: "transport-benchmark-token-" + UUID().uuidString, receivedAt: Date(), lifetime: 3600)
    let group = MultiThreadedEventLoopGroup.singleton
    let server = try await LoopbackHTTPServer(group: group, expectedAuthorization: "Bearer \(token.accessToken)")
    let authority = "127.0.0.1:\(server.port)"
    let configuration = AuthenticatedClient.Configuration(
        allowedOrigins: [HTTPOrigin(string: "http://\(authority)")!])
    let request = HTTPRequest(method: .get, scheme: "http", authority: authority, path: "/users/me")
    let provider = FixedTokenProvider(token: token)

    let http = HTTPClient(
        eventLoopGroupProvider: .shared(group), configuration: .init(redirectConfiguration: .disallow))
    let clients = [
        (
            "URLSession",
            AuthenticatedClient(
                transport: URLSessionTransport(), tokenProvider: provider, configuration: configuration)
        ),
        (
            "AsyncHTTPClient",
            AuthenticatedClient(
                transport: AsyncHTTPClientTransport(client: http), tokenProvider: provider, configuration: configuration
            )
        ),
    ]
    let total = 1_000
    let concurrency = 50
    var rounds: [String: [Round]] = [:]
    for (_, client) in clients { _ = await round(client, request, total: 100, concurrency: 10) }  // warm up
    for _ in 0..<3 {
        for (name, client) in clients {
            rounds[name, default: []].append(await round(client, request, total: total, concurrency: concurrency))
        }
    }
    try await http.shutdown()
    try await server.close()

    var passed = true
    var medians: [String: Double] = [:]
    for (name, _) in clients {
        let mine = rounds[name] ?? []
        let latencies = mine.flatMap(\.latencies)
        let failures = mine.map(\.failures).reduce(0, +)
        medians[name] = Harness.median(mine.map(\.seconds))
        print(
            "\(name): \(total) requests, \(concurrency) concurrent: "
                + String(format: "%.3f s", medians[name] ?? .nan) + " (median of \(mine.count) rounds), p50 "
                + "\(milliseconds(percentile(latencies, 0.5))), p99 \(milliseconds(percentile(latencies, 0.99))), "
                + "\(failures) failed")
        passed =
            Harness.report(
                "\(name): every request answered 200", "\(failures) failed of \(total * mine.count)",
                target: "0 failed", passed: failures == 0) && passed
    }
    let ratio = (medians["URLSession"] ?? .nan) / (medians["AsyncHTTPClient"] ?? .nan)
    print(
        "info  URLSession takes " + String(format: "%.2fx", ratio)
            + " the time of AsyncHTTPClient for the same 1,000 requests (above 1: AsyncHTTPClient is faster)")
    return passed
}

exit(try await runBenchmarks() ? 0 : 1)
