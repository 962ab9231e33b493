#if canImport(FoundationNetworking)
    import Foundation
    public import FoundationNetworking
#else
    public import Foundation
#endif

extension IntrospectionVerifier {
    /// A send through `URLSession` that follows no redirect (so the token and the credentials go to the
    /// configured endpoint only; a redirect answer is a failure).
    ///
    /// The session is made here, with a delegate that refuses every redirect: a delegate given to one task alone
    /// is ignored by `FoundationNetworking` on Linux, which would then follow the redirect with the form.
    ///
    /// - Parameter configuration: The session's configuration; ephemeral by default.
    /// - Returns: The send function.
    public static func urlSessionSend(configuration: URLSessionConfiguration = .ephemeral) -> Send {
        let session = URLSession(configuration: configuration, delegate: NoRedirects(), delegateQueue: nil)
        return { request in
            var urlRequest = URLRequest(url: request.url)
            urlRequest.httpMethod = "POST"
            for field in request.headerFields { urlRequest.setValue(field.value, forHTTPHeaderField: field.name) }
            urlRequest.httpBody = request.body
            let (data, response) = try await session.data(for: urlRequest)
            guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
            return Response(status: http.statusCode, body: data)
        }
    }
}

/// Follows no redirect. `@unchecked Sendable`: no stored state.
final class NoRedirects: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }
}
