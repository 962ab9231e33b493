import Foundation
public import TokenKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The HTTP transport of every demo executable: URLSession with a bounded wait, so that a server that accepts
/// the connection and never answers costs `timeout` seconds and a clear message, not a minute of silence.
public enum DemoTransport: Sendable {
    /// The default wait for an answer, in seconds (`--timeout`).
    public static let defaultTimeout = 10

    /// A `URLSessionTransport` whose requests time out after `timeout` seconds without an answer.
    ///
    /// - Parameter timeout: Seconds to wait for an answer (and twice that for a whole request).
    /// - Returns: The transport.
    public static func urlSession(timeout: Int = defaultTimeout) -> URLSessionTransport {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = TimeInterval(timeout)
        configuration.timeoutIntervalForResource = TimeInterval(2 * timeout)
        return URLSessionTransport(configuration: configuration)
    }
}

/// The refresh client's options for the demo server's tokens.
public enum DemoRefreshConfiguration: Sendable {
    /// The default breaker (5 refreshes in 30 s) suits tokens that live minutes; the demo's live seconds, so
    /// `--expiries 8` would trip it. 30 in 30 s still stops a refresh loop.
    public static let shortLivedTokens = TokenRefreshClient.Configuration(
        maximumRefreshes: 30, breakerWindow: .seconds(30))
}
