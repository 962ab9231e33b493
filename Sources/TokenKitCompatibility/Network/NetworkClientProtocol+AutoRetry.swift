import AuthToken
public import Foundation
import NetworkRetry
public import TokenRefresh

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

extension NetworkClientProtocol {
    /// Sends `request`; on a 401 refreshes once, saves the new pair, and retries once.
    ///
    /// Only a request that carried `Authorization: Bearer` is refreshed for; concurrent 401s share one refresh; the rotated
    /// pair is saved through `authTokenPersistence` before the retry; a second 401 is thrown, never looped on. What counts
    /// as a 401, and the rest of the rules: <doc:RetryingAfterA401>.
    ///
    /// - Parameters:
    ///   - request: The request, with `Authorization: Bearer <access token>` (a request without it is not refreshed
    ///     for).
    ///   - tokenRefreshClient: The refresh client.
    ///   - authTokenPersistence: Where the app keeps the token pair.
    ///   - retryCount: How many retries happened already; a 401 at 1 or more is passed on (thrown, or returned
    ///     as the client returned it).
    /// - Returns: The body and the response.
    /// - Throws: ``APIError/unauthorized`` when no refresh token is stored or the retry is rejected too; a
    ///   ``/TokenRefresh/TokenRefreshError`` when the refresh fails; `NetworkRetryError.insecureTransport`, with nothing
    ///   refreshed or sent again, when a 401 came from a plain `http` URL whose host is not loopback (the refreshed
    ///   token travels only over https, or http to loopback); what ``executeRequest(request:)`` throws otherwise.
    public func executeWithAutoRetry(
        request: consuming URLRequest,
        tokenRefreshClient: TokenRefreshClient,
        authTokenPersistence: any AuthTokenPersistenceProtocol,
        retryCount: Int = 0
    ) async throws -> (Data, HTTPURLResponse) {
        // A 401 is the client's thrown error (TokenKit's `APIError.unauthorized`, or an app's own error type as
        // `httpStatus(of:)` reads it) or the 401 response it returned. Only a request that carried a token is refreshed
        // for and sent again: the user's token is never attached to one the app built without it (another host, a
        // public endpoint), whose 401 is passed on as it came.
        let carried = Self.bearerToken(of: request)
        do {
            let answer = try await executeRequest(request: request)
            guard answer.1.statusCode == 401, retryCount < 1, carried != nil else { return answer }
        } catch let error where retryCount < 1 && carried != nil && httpStatus(of: error) == 401 {
            // Refreshed and retried below.
        } catch {
            ShadowedAPIErrorNotice.noteIfShadowed(
                error, status: httpStatus(of: error), logger: tokenRefreshClient.logger)
            throw error
        }
        // The retry carries the refreshed token: only over https, or plain http to loopback, as every TokenKit request.
        // Checked before the refresh, so a refresh token is not spent on a retry that will not be sent.
        guard Self.mayCarryToken(request.url) else { throw NetworkRetryError.insecureTransport }
        let token = try await tokenRefreshClient.tokenForRetry(
            rejecting: carried, persistence: authTokenPersistence.appPairStore)
        // Taken, not copied: a caller that is done with its request spares Foundation a copy of it.
        var retryRequest = consume request
        retryRequest.setValue("Bearer \(token.accessToken)", forHTTPHeaderField: "Authorization")
        return try await executeWithAutoRetry(
            request: retryRequest, tokenRefreshClient: tokenRefreshClient,
            authTokenPersistence: authTokenPersistence, retryCount: retryCount + 1)
    }

    /// Whether a token may travel to `url`: https, or plain http to a loopback host.
    private static func mayCarryToken(_ url: URL?) -> Bool {
        url.flatMap(HTTPOrigin.init)?.allowsCredentials ?? false
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
