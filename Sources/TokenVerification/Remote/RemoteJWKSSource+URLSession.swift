#if canImport(FoundationNetworking)
    package import Foundation
    public import FoundationNetworking
#else
    public import Foundation
#endif

extension RemoteJWKSSource {
    /// A fetch through `URLSession`: a GET with `Accept: application/json`; any status but 200 throws, and
    /// the `Cache-Control` header's `max-age` is passed on.
    ///
    /// Redirects are followed only within the URL's origin, and the body is read with a hard cap, `maximumBytes`, past
    /// which the fetch throws ``TokenVerificationError/keySetTooLarge`` (<doc:KeySetFetchingRules>). If you raise
    /// ``JWKSet/Limits/maximumBytes``, raise `maximumBytes` here too.
    ///
    /// - Parameters:
    ///   - configuration: The session's configuration; ephemeral by default.
    ///   - maximumBytes: The largest body read (key set or discovery document). Default 256 KiB,
    ///     ``JWKSet/Limits``' default.
    /// - Returns: The fetch function.
    public static func urlSessionFetch(
        configuration: URLSessionConfiguration = .ephemeral, maximumBytes: Int = 256 * 1024
    ) -> Fetch {
        let session = BoundedBodySession.session(configuration: configuration, redirects: .sameOrigin)
        return { url in
            var request = URLRequest(url: url)
            request.setValue("application/json", forHTTPHeaderField: "Accept")
            let data: Data
            let http: HTTPURLResponse
            do {
                (data, http) = try await BoundedBodySession.data(for: request, in: session, maximumBytes: maximumBytes)
            } catch let error as URLError where error.code == .dataLengthExceedsMaximum {
                throw TokenVerificationError.keySetTooLarge
            }
            return try answer(data, http, for: url)
        }
    }

    /// A fetch through a session of your own, as ``urlSessionFetch(configuration:maximumBytes:)`` does.
    ///
    /// On Linux (`FoundationNetworking`) the redirect rule is weaker with a session of your own: its delegate is
    /// yours, and the one this fetch gives the task is ignored, so a redirect to another origin is followed (that
    /// host is asked for the key set) before the answer is refused. Its keys are still never used.
    ///
    /// - Parameter session: The session; its delegate (TLS pinning, for example) stays in charge.
    /// - Returns: The fetch function.
    @available(
        *, deprecated,
        message:
            "Use urlSessionFetch(configuration:); on Linux a session of your own follows a redirect to another host"
    )
    package static func urlSessionFetch(_ session: URLSession) -> Fetch {
        { url in try await fetch(url, session: session, taskDelegate: SameOriginRedirects()) }
    }

    private static func fetch(
        _ url: URL, session: URLSession, taskDelegate: SameOriginRedirects?
    ) async throws -> Response {
        var request = URLRequest(url: url)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let (data, response) = try await session.data(for: request, delegate: taskDelegate)
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        return try answer(data, http, for: url)
    }

    /// The fetch's answer: any status but 200, or an answer from another origin, throws.
    private static func answer(_ data: Data, _ http: HTTPURLResponse, for url: URL) throws -> Response {
        guard http.statusCode == 200, http.url.map({ isSameOrigin($0, url) }) ?? true else {
            throw URLError(.badServerResponse)
        }
        return Response(body: data, maxAge: maxAge(cacheControl: http.value(forHTTPHeaderField: "Cache-Control")))
    }

    /// The `max-age` of a `Cache-Control` value: `nil` without one, zero for `no-store` or `no-cache`.
    ///
    /// - Parameter cacheControl: The header value.
    /// - Returns: The lifetime it allows, or `nil`.
    package static func maxAge(cacheControl: String?) -> Duration? {
        guard let cacheControl else { return nil }
        var result: Duration?
        for directive in cacheControl.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1)
            let name = parts[0].trimmingCharacters(in: .whitespaces).lowercased()
            if name == "no-store" || name == "no-cache" { return .zero }
            if name == "max-age", parts.count == 2,
                let seconds = Int64(parts[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: ["\""])),
                seconds >= 0
            {
                result = .seconds(seconds)
            }
        }
        return result
    }
}

/// Whether two URLs have the same scheme, host and port (RFC 6454), the port defaulting by scheme. Both key-set
/// fetches (URLSession here, AsyncHTTPClient in TokenKitAsyncHTTPClient) judge redirects with it.
package func isSameOrigin(_ lhs: URL, _ rhs: URL) -> Bool {
    func parts(_ url: URL) -> (String, String, Int?) {
        let scheme = url.scheme?.lowercased() ?? ""
        let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : nil)
        return (scheme, url.host?.lowercased() ?? "", port)
    }
    let (a, b) = (parts(lhs), parts(rhs))
    return !a.1.isEmpty && a.0 == b.0 && a.1 == b.1 && a.2 == b.2
}

/// Follows a redirect only within the original request's origin. `@unchecked Sendable`: no stored state.
final class SameOriginRedirects: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        guard let from = task.originalRequest?.url, let to = request.url, isSameOrigin(from, to) else {
            completionHandler(nil)
            return
        }
        completionHandler(request)
    }
}
