import DemoAppSupport
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import TokenKit

/// What the old Lume version did, the code the migration deletes: `RemoteAuthService` signs in with JSON, and
/// `KeychainTokenStorage` keeps Lume's own `AuthToken` (`{accessToken, refreshToken, expiresAt}`, `expiresAt` as
/// `JSONEncoder` writes a `Date`) as one Keychain item. (Its manual `refreshToken(_:)` is not repeated here:
/// after the migration nothing calls it.)
enum OldLumeApp {
    /// The Keychain service and account Lume's `KeychainTokenStorage` used.
    static let service = "com.lume.auth"
    static let account = "authToken"

    /// Lume's `AuthToken` before the migration.
    struct AuthToken: Codable {
        let accessToken: String
        let refreshToken: String
        let expiresAt: Date
    }

    private struct LoginAnswer: Decodable {
        let accessToken: String
        let refreshToken: String
        let expiresIn: Double?
    }

    /// Signs in (`POST /api/v1/auth/login`) and saves the token in the Keychain the old way.
    static func signInAndStore(
        baseURL: URL, account credentials: DemoAccountOptions, transport: any HTTPTransport,
        keychain: SimulatedKeychain
    ) async throws {
        var request = HTTPRequest(method: .post, url: baseURL.appending(path: "api/v1/auth/login"))
        request.headerFields[.contentType] = "application/json"
        request.headerFields[HTTPField.Name("X-API-Key")!] = credentials.apiKey
        let body = try JSONEncoder().encode(["email": credentials.email, "password": credentials.password])
        let (response, data) = try await transport.send(request, body: body)
        if let type = response.headerFields[.contentType], type.contains("html") {
            throw DemoFailure(
                "the server answered an HTML page instead of JSON (HTTP \(response.status.code), \(type))")
        }
        guard response.status == .ok, let answer = try? JSONDecoder().decode(LoginAnswer.self, from: data) else {
            throw DemoFailure("the old app's sign-in failed (HTTP \(response.status.code))")
        }
        let token = AuthToken(
            accessToken: answer.accessToken, refreshToken: answer.refreshToken,
            expiresAt: Date().addingTimeInterval(answer.expiresIn ?? 3600))
        keychain.set(try JSONEncoder().encode(token), service: service, account: account)
    }
}
