import DemoAppSupport
import Foundation
import TokenKit

/// What the old Lume app version did: sign in with the password grant and keep the token as one JSON value
/// (`{accessToken, refreshToken, expiresAt}`, `expiresAt` as `JSONEncoder` writes a `Date`) under `authToken`.
enum OldLumeApp {
    /// The token as the old app encoded it.
    struct Token: Encodable {
        let accessToken: String
        let refreshToken: String?
        let expiresAt: Date
    }

    /// Signs in and stores the token in `source` the old way, with the user ID (the JWT's `sub`) beside it
    /// under `userID`.
    static func signInAndStore(
        endpoint: TokenEndpoint, email: String, password: String, into source: InMemoryLegacyKeyValueSource
    ) async throws {
        let response = try await endpoint.requestToken(
            [("grant_type", "password"), ("username", email), ("password", password)], isSignIn: true)
        let token = Token(
            accessToken: response.accessToken, refreshToken: response.refreshToken,
            expiresAt: Date().addingTimeInterval(response.expiresIn ?? 3600))
        await source.setValue(try JSONEncoder().encode(token), forKey: "authToken")
        let userID = response.userID ?? response.token(receivedAt: Date()).parseUserIdFromJWT()
        await source.setValue(userID.map { Data($0.utf8) }, forKey: "userID")
    }
}
