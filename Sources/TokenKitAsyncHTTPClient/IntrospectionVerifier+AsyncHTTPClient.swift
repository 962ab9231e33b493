// Compiled only with the `AsyncHTTPClientTransport` package trait.
#if AsyncHTTPClientTransport
package import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
public import TokenVerification

extension IntrospectionVerifier {
    /// A send through AsyncHTTPClient, the transport for a Linux backend: the same form and client authentication
    /// as ``/TokenVerification/IntrospectionVerifier/urlSessionSend(configuration:)``, over a client that never
    /// follows a redirect, with the answer's body read under a hard bound.
    ///
    /// ```swift
    /// let introspection = IntrospectionVerifier(
    ///     configuration: .init(
    ///         endpoint: URL(string: "https://auth.example.com/o/introspect/")!,
    ///         clientAuthentication: .clientSecretBasic(id: "orders-api", secret: secretFromYourStore),
    ///         audience: .notChecked(reason: "the server binds no audience to its tokens")),
    ///     send: IntrospectionVerifier.asyncHTTPClientSend())
    /// ```
    ///
    /// A redirect, an oversized answer or any other failure is answered as
    /// ``/TokenVerification/TokenVerificationError/introspectionUnavailable`` (<doc:IntrospectionOverAsyncHTTPClient>).
    ///
    /// - Parameter timeout: The deadline per request inside AsyncHTTPClient, so a call the verifier gave up on
    ///   (``/TokenVerification/IntrospectionVerifier/Configuration/requestTimeout``) does not keep a connection busy.
    ///   Default 5 seconds, that timeout's default.
    /// - Returns: The send function.
    public static func asyncHTTPClientSend(timeout: Duration = .seconds(5)) -> Send {
        asyncHTTPClientSend(NonRedirectingHTTPClient.shared, timeout: timeout)
    }

    /// The send over `client`: the tests' way to set the client's connection pool, or to check what happens with a
    /// client that follows redirects. Such a client has already sent the form to the redirect's target when the
    /// answer comes back; the answer is then not used (the send returns the first redirect's status).
    ///
    /// - Parameters:
    ///   - client: The client; it is not shut down by the send.
    ///   - timeout: The deadline per request inside AsyncHTTPClient.
    /// - Returns: The send function.
    package static func asyncHTTPClientSend(_ client: HTTPClient, timeout: Duration = .seconds(5)) -> Send {
        { request in
            var outgoing = HTTPClientRequest(url: request.url.absoluteString)
            outgoing.method = .POST
            for field in request.headerFields { outgoing.headers.add(name: field.name, value: field.value) }
            outgoing.body = .bytes(ByteBuffer(bytes: request.body))
            let response = try await client.execute(outgoing, timeout: TimeAmount(timeout))
            if let first = response.history.first, response.history.count > 1 {
                return Response(status: Int(first.responseHead.status.code), body: Data())
            }
            let body = try await collect(response, upTo: request.maximumResponseBytes)
            return Response(status: Int(response.status.code), body: Data(body.readableBytesView))
        }
    }

    /// The body of `response`, at most `maximumBytes`; a declared or streamed length over it throws
    /// `URLError(.dataLengthExceedsMaximum)`.
    private static func collect(_ response: HTTPClientResponse, upTo maximumBytes: Int) async throws -> ByteBuffer {
        if let declared = response.headers.first(name: "content-length").flatMap({ Int($0) }), declared > maximumBytes {
            throw URLError(.dataLengthExceedsMaximum)
        }
        do {
            return try await response.body.collect(upTo: maximumBytes)
        } catch is NIOTooManyBytesError {
            throw URLError(.dataLengthExceedsMaximum)
        }
    }
}

extension TimeAmount {
    /// `duration` in nanoseconds, for AsyncHTTPClient's deadlines.
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .seconds(seconds) + .nanoseconds(attoseconds / 1_000_000_000)
    }
}

#endif
