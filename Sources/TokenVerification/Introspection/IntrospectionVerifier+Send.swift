#if canImport(FoundationNetworking)
    import Foundation
    public import FoundationNetworking
#else
    public import Foundation
#endif

extension IntrospectionVerifier {
    /// A send through `URLSession` that follows no redirect (so the token and the credentials go to the
    /// configured endpoint only; a redirect answer is a failure), and reads at most the request's
    /// ``Request/maximumResponseBytes`` of the answer: a longer `Content-Length` is refused at the head, a longer
    /// stream as it passes the bound, the connection is closed, and the send throws
    /// `URLError(.dataLengthExceedsMaximum)`.
    ///
    /// On Linux that bounds memory, not the read: `URLSession` there cannot pause a transfer, and the connection
    /// closes only when the server pauses, so an endpoint that streams without pause keeps sending until then. A
    /// Linux backend sends with `asyncHTTPClientSend(timeout:)` of `TokenKitAsyncHTTPClient`, which reads with
    /// back-pressure.
    ///
    /// The session is made here, with a delegate that refuses every redirect and counts the body: a delegate given
    /// to one task alone is ignored by `FoundationNetworking` on Linux, which would then follow the redirect with the
    /// form.
    ///
    /// - Parameter configuration: The session's configuration; ephemeral by default.
    /// - Returns: The send function.
    public static func urlSessionSend(configuration: URLSessionConfiguration = .ephemeral) -> Send {
        let session = BoundedBodySession.session(configuration: configuration, redirects: .none)
        return { request in
            var urlRequest = URLRequest(url: request.url)
            urlRequest.httpMethod = "POST"
            for field in request.headerFields { urlRequest.setValue(field.value, forHTTPHeaderField: field.name) }
            urlRequest.httpBody = request.body
            let (data, response) = try await BoundedBodySession.data(
                for: urlRequest, in: session, maximumBytes: request.maximumResponseBytes)
            return Response(status: response.statusCode, body: data)
        }
    }
}
