import AuthToken
public import Foundation
public import Persistence

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

extension NetworkClientProtocol {
    /// Sends `request`; on ``APIError/unauthorized`` refreshes once, saves the new pair, and retries once.
    ///
    /// The unification analysis's extension, over TokenKit's core: concurrent 401s share one refresh (the
    /// ``TokenRefreshClient`` single flight); the rotated pair is saved through `authTokenPersistence` before
    /// the retry; a request that carried an older token than the one saved meanwhile is retried with the saved
    /// one without refreshing again; a second 401 is thrown, never looped on.
    ///
    /// ```swift
    /// let (data, response) = try await networkClient.executeWithAutoRetry(
    ///     request: request,
    ///     tokenRefreshClient: tokenRefreshClient,
    ///     authTokenPersistence: authTokenPersistence
    /// )
    /// ```
    ///
    /// - Parameters:
    ///   - request: The request, normally with `Authorization: Bearer <access token>`.
    ///   - tokenRefreshClient: The refresh client.
    ///   - authTokenPersistence: Where the app keeps the token pair.
    ///   - retryCount: How many retries happened already; a 401 at 1 or more is thrown.
    /// - Returns: The body and the response.
    /// - Throws: ``APIError/unauthorized`` when no refresh token is stored or the retry is rejected too; a
    ///   ``TokenRefreshError`` when the refresh fails; what ``executeRequest(request:)`` throws otherwise.
    public func executeWithAutoRetry(
        request: consuming URLRequest,
        tokenRefreshClient: TokenRefreshClient,
        authTokenPersistence: any AuthTokenPersistenceProtocol,
        retryCount: Int = 0
    ) async throws -> (Data, HTTPURLResponse) {
        do {
            return try await executeRequest(request: request)
        } catch let error as APIError where error == .unauthorized && retryCount < 1 {
            let token = try await tokenRefreshClient.tokenForRetry(
                rejecting: Self.bearerToken(of: request), persistence: authTokenPersistence)
            // Taken, not copied: a caller that is done with its request spares Foundation a copy of it.
            var retryRequest = consume request
            retryRequest.setValue("Bearer \(token.accessToken)", forHTTPHeaderField: "Authorization")
            return try await executeWithAutoRetry(
                request: retryRequest, tokenRefreshClient: tokenRefreshClient,
                authTokenPersistence: authTokenPersistence, retryCount: retryCount + 1)
        }
    }

    /// The bearer token `request` carries, if any (`Bearer` in any case, then spaces, then the token).
    private static func bearerToken(of request: URLRequest) -> String? {
        guard let value = request.value(forHTTPHeaderField: "Authorization") else { return nil }
        let utf8 = value.utf8
        guard utf8.count > 7, utf8.prefix(6).elementsEqual("bearer".utf8, by: { $0 | 0x20 == $1 }),
            utf8.dropFirst(6).first == UInt8(ascii: " ")
        else { return nil }
        let token = utf8.dropFirst(7).drop { $0 == UInt8(ascii: " ") }
        return token.isEmpty ? nil : String(Substring(token))
    }
}
