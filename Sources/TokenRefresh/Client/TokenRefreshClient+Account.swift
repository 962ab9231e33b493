import AuthToken
public import Foundation
public import HTTPTypes
import Logging
public import NetworkRetry

extension TokenRefreshClient {
    /// Deletes the account: sends the app's authenticated request (`DELETE /users/me`) through `client`, and
    /// when the server answers 2xx, ends the session with ``AuthEvent/SignOutReason/accountDeleted`` (the
    /// refresh token is revoked where ``Configuration/revocation`` is set).
    ///
    /// ```swift
    /// try await auth.deleteAccount(
    ///     HTTPRequest(method: .delete, scheme: "https", authority: "api.example.com", path: "/users/me"),
    ///     through: api)
    /// ```
    ///
    /// - Parameters:
    ///   - request: The deletion request.
    ///   - body: Its body, if any.
    ///   - client: The authenticated client to send it with.
    /// - Returns: The server's answer.
    /// - Throws: ``TokenRefreshError/serverRefused`` (with the status) when the server did not answer 2xx, and
    ///   the session is kept; the errors of ``/NetworkRetry/AuthenticatedClient/executeWithAutoRetry(_:body:)``.
    @discardableResult
    public func deleteAccount(
        _ request: HTTPRequest, body: Data? = nil, through client: AuthenticatedClient
    ) async throws -> (HTTPResponse, Data) {
        try await endSessionOnServer(request, body: body, through: client, reason: .accountDeleted)
    }

    /// Revokes every session of the user where the server offers an endpoint for it, then ends this one with
    /// ``AuthEvent/SignOutReason/signedOutEverywhere``.
    ///
    /// - Parameters:
    ///   - request: The server's "revoke all sessions" request.
    ///   - body: Its body, if any.
    ///   - client: The authenticated client to send it with.
    /// - Returns: The server's answer.
    /// - Throws: As ``deleteAccount(_:body:through:)``.
    @discardableResult
    public func signOutEverywhere(
        _ request: HTTPRequest, body: Data? = nil, through client: AuthenticatedClient
    ) async throws -> (HTTPResponse, Data) {
        try await endSessionOnServer(request, body: body, through: client, reason: .signedOutEverywhere)
    }

    private func endSessionOnServer(
        _ request: HTTPRequest, body: Data?, through client: AuthenticatedClient, reason: AuthEvent.SignOutReason
    ) async throws -> (HTTPResponse, Data) {
        let (response, data) = try await client.executeWithAutoRetry(request, body: body)
        switch SessionMachine.serverAnswered(endingSession: response.status.code) {
        case .success:
            // The server has ended the session; a local store that cannot be cleared must not undo that.
            try? await signOut(reason: reason)
            return (response, data)
        case .failure(let error):
            logger.debug("the server refused", metadata: ["status": "\(response.status.code)", "reason": "\(reason)"])
            throw error
        }
    }
}
