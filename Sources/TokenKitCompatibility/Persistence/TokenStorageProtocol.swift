public import AuthToken

/// The Lume app's asynchronous token storage, kept so that Lume's call sites compile unchanged.
///
/// Any ``/Persistence/TokenStore`` serves it through ``TokenStoreTokenStorage``, and a conformer (Lume's own Keychain
/// storage) backs a `TokenRefreshClient` through ``TokenStorageStore``.
///
/// A complete small conformance:
///
/// ```swift
/// actor MemoryTokenStorage: TokenStorageProtocol {
///     private var token: AuthToken?
///     func saveToken(_ token: AuthToken) async throws { self.token = token }
///     func getToken() async throws -> AuthToken? { token }
///     func deleteToken() async throws { token = nil }
/// }
/// ```
public protocol TokenStorageProtocol: Sendable {
    /// Stores the token, replacing any stored one.
    ///
    /// - Parameter token: The token.
    /// - Throws: When it cannot be stored.
    func saveToken(_ token: AuthToken) async throws

    /// Reads the stored token.
    ///
    /// - Returns: The token, or `nil` when none is stored.
    /// - Throws: When the storage cannot be read (that is not "signed out").
    func getToken() async throws -> AuthToken?

    /// Deletes the stored token. Deleting when none is stored succeeds.
    ///
    /// - Throws: When it cannot be deleted.
    func deleteToken() async throws
}
