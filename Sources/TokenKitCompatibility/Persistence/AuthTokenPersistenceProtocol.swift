public import AuthToken
public import Foundation

/// The FitIQ apps' synchronous token persistence (`AuthTokenPersistencePortProtocol` in FitIQ, the protocol
/// FitIQCore keeps), with whole-token methods.
///
/// An app's existing conformer with only the seven FitIQ methods still conforms: ``saveToken(_:)``, ``fetchToken()``
/// and ``deleteToken()`` have default implementations over them. Use it with
/// `NetworkClientProtocol.executeWithAutoRetry(request:tokenRefreshClient:authTokenPersistence:retryCount:)`, or let it
/// back a `TokenRefreshClient` through ``AuthTokenPersistenceStore``; any ``/Persistence/TokenStore`` serves it through
/// ``TokenStoreAuthTokenPersistence``. Conformers must be `Sendable` (the FitIQ and Lume apps' protocol is not); a
/// complete conformance: <doc:AnAppsOwnTokenPersistence>.
public protocol AuthTokenPersistenceProtocol: Sendable {
    /// Stores the whole token (Option A).
    ///
    /// The default implementation calls ``save(accessToken:refreshToken:)``, with an empty refresh token when
    /// the token has none; the expiry is not stored (it is parsed from the JWT when read back).
    ///
    /// - Parameter token: The token.
    /// - Throws: When the token cannot be stored.
    func saveToken(_ token: AuthToken) throws

    /// Reads the whole token (Option A), or `nil` when none is stored.
    ///
    /// The default implementation rebuilds it from ``fetchAccessToken()`` and ``fetchRefreshToken()`` with
    /// `AuthToken.withParsedExpiration(accessToken:refreshToken:)`: the expiry is the JWT's `exp` against the
    /// clock, and an `exp` in the past is expired.
    ///
    /// - Returns: The token, or `nil`.
    /// - Throws: When the storage cannot be read.
    func fetchToken() throws -> AuthToken?

    /// Deletes the stored token (Option A). The default implementation calls ``deleteTokens()``.
    ///
    /// - Throws: When the token cannot be deleted.
    func deleteToken() throws

    /// Stores the access and refresh tokens.
    ///
    /// - Parameters:
    ///   - accessToken: The access token.
    ///   - refreshToken: The refresh token.
    /// - Throws: When they cannot be stored.
    func save(accessToken: String, refreshToken: String) throws

    /// Reads the stored access token.
    ///
    /// - Returns: The access token, or `nil` when none is stored.
    /// - Throws: When the storage cannot be read.
    func fetchAccessToken() throws -> String?

    /// Reads the stored refresh token.
    ///
    /// - Returns: The refresh token, or `nil` when none is stored.
    /// - Throws: When the storage cannot be read.
    func fetchRefreshToken() throws -> String?

    /// Deletes the access and refresh tokens.
    ///
    /// - Throws: When they cannot be deleted.
    func deleteTokens() throws

    /// Stores the signed-in user's profile ID.
    ///
    /// - Parameter userID: The user profile ID.
    /// - Throws: When it cannot be stored.
    func saveUserProfileID(_ userID: UUID) throws

    /// Reads the signed-in user's profile ID.
    ///
    /// - Returns: The user profile ID, or `nil` when none is stored.
    /// - Throws: When the storage cannot be read.
    func fetchUserProfileID() throws -> UUID?

    /// Deletes the user profile ID.
    ///
    /// - Throws: When it cannot be deleted.
    func deleteUserProfileID() throws
}

extension AuthTokenPersistenceProtocol {
    /// Stores the token's access and refresh tokens through ``save(accessToken:refreshToken:)``.
    ///
    /// - Parameter token: The token; an absent refresh token is stored as an empty string.
    /// - Throws: What ``save(accessToken:refreshToken:)`` throws.
    public func saveToken(_ token: AuthToken) throws {
        try save(accessToken: token.accessToken, refreshToken: token.refreshToken ?? "")
    }

    /// Stores a pair whose refresh token may be absent, such as `newToken.refreshToken` of the token
    /// `refreshToken(_:)` returns: `try authTokenPersistence.save(accessToken: newToken.accessToken,
    /// refreshToken: newToken.refreshToken)`.
    ///
    /// A refresh always keeps a refresh token (the one it was given, when the server sends no new one), so the pair
    /// `refreshToken(_:)` returns has one. An absent refresh token is stored as an empty string, as
    /// ``saveToken(_:)`` stores it, and ``fetchToken()`` reads it back as none.
    ///
    /// - Parameters:
    ///   - accessToken: The access token.
    ///   - refreshToken: The refresh token, if any.
    /// - Throws: What ``save(accessToken:refreshToken:)`` throws.
    public func save(accessToken: String, refreshToken: String?) throws {
        try save(accessToken: accessToken, refreshToken: refreshToken ?? "")
    }

    /// Rebuilds the token from the two stored strings, its expiry parsed from the JWT's `exp`.
    ///
    /// - Returns: The token, or `nil` when no (non-empty) access token is stored.
    /// - Throws: What the fetch methods throw.
    public func fetchToken() throws -> AuthToken? {
        guard let accessToken = try fetchAccessToken(), !accessToken.isEmpty else { return nil }
        let refreshToken = try fetchRefreshToken().flatMap { $0.isEmpty ? nil : $0 }
        return AuthToken.withParsedExpiration(accessToken: accessToken, refreshToken: refreshToken)
    }

    /// Deletes the tokens through ``deleteTokens()``.
    ///
    /// - Throws: What ``deleteTokens()`` throws.
    public func deleteToken() throws {
        try deleteTokens()
    }
}
