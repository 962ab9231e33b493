// Compiled only with the `AsyncHTTPClientTransport` package trait.
#if AsyncHTTPClientTransport
public import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
public import TokenVerification

extension RemoteJWKSSource {
    /// A fetch through AsyncHTTPClient, the transport for a Linux backend: a GET with `Accept: application/json`
    /// whose body is read with a hard cap, so an endpoint that answers with a huge document costs at most
    /// `maximumBytes` of memory before the fetch fails.
    ///
    /// ```swift
    /// let http = HTTPClient(eventLoopGroupProvider: .singleton)
    /// let keys = RemoteJWKSSource(
    ///     location: .openIDDiscovery(issuer: URL(string: "https://clerk.example.com")!),
    ///     fetch: RemoteJWKSSource.asyncHTTPClientFetch(http))
    /// ```
    ///
    /// Redirects are accepted only within the URL's origin (scheme, host and port): an answer reached through a
    /// redirect to another origin, an `https` to `http` downgrade included, throws
    /// ``AsyncHTTPClientFetchError/crossOriginRedirect``, so whoever controls a redirect target cannot serve
    /// their own keys. A client configured with `redirectConfiguration: .disallow` does not even make the second
    /// request (a 3xx then throws ``AsyncHTTPClientFetchError/status(_:)``).
    ///
    /// Any status but 200 throws ``AsyncHTTPClientFetchError/status(_:)``; the `Cache-Control` header's
    /// `max-age` is passed on. The source's own `fetchTimeout` bounds the whole fetch; `timeout` here bounds the
    /// request inside AsyncHTTPClient too, so a cancelled fetch does not keep a connection busy.
    ///
    /// - Parameters:
    ///   - client: The client; it is not shut down by the source.
    ///   - timeout: The deadline per request. Default 5 seconds, the source's default `fetchTimeout`.
    ///   - maximumBytes: The largest body read. Default 256 KiB, `JWKSet.Limits`' default.
    /// - Returns: The fetch function.
    public static func asyncHTTPClientFetch(
        _ client: HTTPClient, timeout: Duration = .seconds(5), maximumBytes: Int = 256 * 1024
    ) -> Fetch {
        { url in
            var request = HTTPClientRequest(url: url.absoluteString)
            request.headers.add(name: "Accept", value: "application/json")
            let response = try await client.execute(request, timeout: TimeAmount(timeout))
            // Every hop AsyncHTTPClient followed must stay on the origin asked for.
            for hop in response.history {
                guard let hopURL = URL(string: hop.request.url), isSameOrigin(hopURL, url) else {
                    throw AsyncHTTPClientFetchError.crossOriginRedirect
                }
            }
            guard response.status == .ok else { throw AsyncHTTPClientFetchError.status(Int(response.status.code)) }
            let body: ByteBuffer
            do {
                body = try await response.body.collect(upTo: maximumBytes)
            } catch is NIOTooManyBytesError {
                throw AsyncHTTPClientFetchError.bodyTooLarge(maximumBytes: maximumBytes)
            }
            return Response(
                body: Data(body.readableBytesView),
                maxAge: maxAge(cacheControl: response.headers.first(name: "cache-control")))
        }
    }
}

/// Why `RemoteJWKSSource.asyncHTTPClientFetch(_:timeout:maximumBytes:)` failed. It carries no
/// response text, only the status or the limit.
public enum AsyncHTTPClientFetchError: Error, Hashable, Sendable {
    /// The endpoint answered with this status instead of 200.
    case status(Int)
    /// The body was longer than this many bytes; reading stopped there.
    case bodyTooLarge(maximumBytes: Int)
    /// A redirect led to another origin (or from `https` to `http`); the answer was not used.
    case crossOriginRedirect
}
#endif
