import Foundation
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The FitIQ retry's own body, as the shared package's `executeWithAutoRetry` was first written, compiled against
/// TokenKit: its refresh token is optional there, and the pair is saved as written.
@Suite(.logLeakCheck()) struct FitIQRetryBodyTests {
    @Test func theRetrysRefreshAndSaveCompileAsWrittenAndSaveTheRotatedPair() async throws {
        let (backend, persistence, dependencies, clock) = try FitIQCallSiteTests.app()
        clock.advance(by: .seconds(1000))
        let authTokenPersistence: AuthTokenPersistenceProtocol = persistence
        let tokenRefreshClient = dependencies.tokenRefreshClient

        // Get refresh token
        guard let refreshToken = try authTokenPersistence.fetchRefreshToken() else {
            throw APIError.unauthorized
        }

        // Refresh token (synchronized)
        let newToken = try await tokenRefreshClient.refreshToken(refreshToken)

        // Save new tokens
        try authTokenPersistence.save(
            accessToken: newToken.accessToken,
            refreshToken: newToken.refreshToken
        )

        #expect(backend.snapshot.refreshes == 1)
        #expect(try persistence.fetchAccessToken() == backend.snapshot.access)
        #expect(try persistence.fetchRefreshToken() == backend.snapshot.refresh)
    }

    @Test func aPairWithoutARefreshTokenIsSavedAsSaveTokenSavesIt() throws {
        let persistence = KeychainAuthTokenAdapter()
        let missing: String? = nil
        try persistence.save(accessToken: "access-token-without-refresh", refreshToken: missing)
        #expect(try persistence.fetchRefreshToken() == "")
        #expect(try persistence.fetchToken()?.refreshToken == nil)
        #expect(try persistence.fetchToken()?.accessToken == "access-token-without-refresh")
    }
}
