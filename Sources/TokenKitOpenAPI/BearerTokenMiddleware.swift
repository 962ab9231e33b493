// Compiled only with the `OpenAPIMiddleware` package trait.
#if OpenAPIMiddleware
import AuthToken
public import Foundation
public import HTTPTypes
public import NetworkRetry
public import OpenAPIRuntime

/// A swift-openapi-runtime `ClientMiddleware` that does what ``/NetworkRetry/AuthenticatedClient`` does:
/// attaches `Authorization: Bearer` from a ``/NetworkRetry/TokenProvider`` and, after a 401 that a refresh can
/// fix, refreshes once and replays the request once.
///
/// ```swift
/// let client = Client(
///     serverURL: URL(string: "https://api.example.com")!, transport: URLSessionTransport(),
///     middlewares: [BearerTokenMiddleware(tokenProvider: refreshClient,
///                                         allowedOrigins: [HTTPOrigin(string: "https://api.example.com")!])])
/// ```
///
/// The decisions are those of ``/NetworkRetry/RetryDecision``. The server URL's origin must be allowed and be `https`
/// (or `http` to loopback), and the request's path must start with `/`, else the request is not sent. How a body is
/// replayed, and whose business redirects are: <doc:BearerTokenMiddlewareBodiesAndRedirects>.
public struct BearerTokenMiddleware: ClientMiddleware {
    /// Where tokens come from.
    package let tokenProvider: any TokenProvider
    /// The origins a token may be sent to.
    package let allowedOrigins: Set<HTTPOrigin>
    /// The largest single-pass request body collected for a replay.
    public let maximumBufferedBodySize: Int

    /// Creates the middleware.
    ///
    /// - Parameters:
    ///   - tokenProvider: Hands out and refreshes tokens.
    ///   - allowedOrigins: The origins a token may be sent to.
    ///   - maximumBufferedBodySize: The limit for collecting a single-pass body; defaults to 4 MiB.
    public init(
        tokenProvider: any TokenProvider, allowedOrigins: some Sequence<HTTPOrigin>,
        maximumBufferedBodySize: Int = 4 << 20
    ) {
        self.tokenProvider = tokenProvider
        self.allowedOrigins = Set(allowedOrigins)
        self.maximumBufferedBodySize = maximumBufferedBodySize
    }

    /// Attaches the token, sends, and after a 401 that a refresh can fix, refreshes and replays once.
    ///
    /// - Parameters:
    ///   - request: The request; its path is relative to `baseURL`.
    ///   - body: The request body.
    ///   - baseURL: The server URL; its origin must be allowed.
    ///   - operationID: The OpenAPI operation (unused).
    ///   - next: The next middleware or the transport.
    /// - Returns: The response and its body; never a 401.
    /// - Throws: ``/NetworkRetry/NetworkRetryError``, an error of the token provider, or whatever `next` throws.
    public func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard let origin = HTTPOrigin(baseURL) else { throw NetworkRetryError.invalidRequest }
        guard allowedOrigins.contains(origin) else { throw NetworkRetryError.originNotAllowed }
        guard origin.allowsCredentials else { throw NetworkRetryError.insecureTransport }
        // A path that does not start with "/" would change the server URL's authority once joined to it.
        guard HTTPOrigin.isValidRequestTarget(request.path ?? "/", method: request.method.rawValue) else {
            throw NetworkRetryError.invalidRequest
        }
        let replayable = try await replayableBody(body)

        var token = try await tokenProvider.validToken()
        var refreshed = false
        while true {
            guard !token.accessToken.isEmpty else { throw NetworkRetryError.noToken }
            var outgoing = request
            outgoing.headerFields[.authorization] = "Bearer " + token.accessToken
            let (response, responseBody) = try await next(outgoing, replayable, baseURL)
            switch RetryDecision(response: response, requestCarriedToken: true, alreadyRefreshed: refreshed) {
            case .deliver:
                return (response, responseBody)
            case .fail(let error):
                throw error
            case .refreshAndRetry:
                token = try await tokenProvider.refreshToken(afterRejectionOf: token.accessToken)
                refreshed = true
            }
        }
    }

    /// Returns a body that can be sent twice: the same one if it can be iterated several times, otherwise its
    /// bytes collected up to the limit.
    func replayableBody(_ body: HTTPBody?) async throws -> HTTPBody? {
        guard let body, body.iterationBehavior == .single else { return body }
        if case .known(let length) = body.length, length > maximumBufferedBodySize {
            throw NetworkRetryError.bodyTooLarge
        }
        var bytes: [UInt8] = []
        do {
            for try await chunk in body {
                guard bytes.count + chunk.count <= maximumBufferedBodySize else { throw NetworkRetryError.bodyTooLarge }
                bytes += chunk
            }
        } catch let error as NetworkRetryError {
            throw error
        } catch {
            throw NetworkRetryError.bodyNotReplayable.with(underlying: error)
        }
        return HTTPBody(bytes)
    }
}
#endif
