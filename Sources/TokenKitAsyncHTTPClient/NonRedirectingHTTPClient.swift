// Compiled only with the `AsyncHTTPClientTransport` package trait.
#if AsyncHTTPClientTransport
import AsyncHTTPClient

/// The client TokenKit sends over when it is given none: one for the process, following no redirect. A client that
/// follows redirects sends a request's body (a token, a refresh token, a client secret) again to a 307 or 308
/// target, also on another origin; this one hands every 3xx back as it came.
enum NonRedirectingHTTPClient {
    /// Made on first use and never shut down; a global is never deinitialized, so AsyncHTTPClient's check that a
    /// client is shut down before its deinit never runs for it.
    static let shared = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: .init(redirectConfiguration: .disallow))
}
#endif
