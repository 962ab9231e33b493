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
    /// Redirects are accepted only within the URL's origin, and any status but 200 throws
    /// ``AsyncHTTPClientFetchError/status(_:)`` (<doc:RedirectsAndErrorsOverAsyncHTTPClient>).
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
