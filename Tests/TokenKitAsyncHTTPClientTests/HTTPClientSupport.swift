// Compiled only with the `AsyncHTTPClientTransport` package trait.
#if AsyncHTTPClientTransport
import AsyncHTTPClient
import Logging

/// Runs `body` with an `HTTPClient` on the shared event loop group and shuts the client down afterwards, whether
/// `body` throws or not: the one client setup of the AsyncHTTPClient tests.
///
/// - Parameters:
///   - configuration: The client's configuration; redirects disallowed by default, as the documentation advises.
///   - logger: The client's background activity logger; AsyncHTTPClient's default when `nil`.
///   - body: What to do with the client.
@discardableResult
func withHTTPClient<Result>(
    configuration: HTTPClient.Configuration = .init(redirectConfiguration: .disallow), logger: Logger? = nil,
    _ body: (HTTPClient) async throws -> Result
) async throws -> Result {
    let http =
        if let logger {
            HTTPClient(
                eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration,
                backgroundActivityLogger: logger)
        } else {
            HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        }
    let result: Result
    do {
        result = try await body(http)
    } catch {
        try await http.shutdown()
        throw error
    }
    try await http.shutdown()
    return result
}
#endif
