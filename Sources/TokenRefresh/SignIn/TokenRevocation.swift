public import Foundation
import HTTPTypes

/// Revokes a refresh token (RFC 7009): at sign-out, when set as ``TokenRefreshClient/Configuration/revocation``
/// (best effort: a failure never keeps a session alive), or when the app calls ``revoke(_:)`` itself.
///
/// ```swift
/// let revocation = TokenRevocation.rfc7009(url: revokeURL, using: endpoint)
/// try await revocation.revoke(refreshToken)
/// ```
public struct TokenRevocation: Sendable {
    private let body: @Sendable (String) async throws -> Void

    /// Revokes through a closure.
    ///
    /// - Parameter body: Revokes the given refresh token.
    public init(_ body: @escaping @Sendable (String) async throws -> Void) {
        self.body = body
    }

    /// RFC 7009: a form POST of `token` and `token_type_hint=refresh_token` with client authentication.
    ///
    /// - Parameters:
    ///   - url: The revocation endpoint URL.
    ///   - endpoint: The token endpoint whose client and transport to use.
    /// - Returns: The revocation.
    public static func rfc7009(url: URL, using endpoint: TokenEndpoint) -> TokenRevocation {
        let revocationEndpoint = TokenEndpoint(
            url: url, client: endpoint.client, transport: endpoint.transport,
            additionalHeaders: endpoint.additionalHeaders, now: endpoint.now)
        return TokenRevocation { refreshToken in
            let (response, _) = try await revocationEndpoint.post([
                ("token", refreshToken), ("token_type_hint", "refresh_token"),
            ])
            // RFC 7009 section 2.2: 200 for success, also for an already invalid token.
            guard response.status.code == 200 else {
                throw TokenRefreshError.unexpectedResponse.with(status: response.status.code)
            }
        }
    }

    /// Revokes `refreshToken` now. RFC 7009 answers 200 also for a token the server no longer knows.
    ///
    /// - Parameter refreshToken: The refresh token (sent once, never logged).
    /// - Throws: For ``rfc7009(url:using:)``: ``TokenRefreshError/unexpectedResponse`` with the status when the
    ///   server did not answer 200, and the transport's errors; otherwise what the closure throws.
    public func revoke(_ refreshToken: String) async throws { try await body(refreshToken) }
}
