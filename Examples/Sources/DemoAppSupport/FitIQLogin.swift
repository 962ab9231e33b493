public import Foundation
import HTTPTypes
import HTTPTypesFoundation
public import TokenKit

/// FitIQ's login: `POST /api/v1/auth/login` with JSON and `X-API-Key`. It is not an OAuth endpoint, so it
/// is a `SignInGrant.custom` that turns the answer into a `TokenResponse`. The demo apps, the multi-process
/// worker and the fault tests all sign in through it.
///
/// - Parameters:
///   - baseURL: The server's base URL.
///   - email: The e-mail to sign in with.
///   - password: The password.
///   - apiKey: The `X-API-Key` value.
///   - transport: How to send the request.
/// - Returns: A grant for `TokenRefreshClient.signIn(_:)`.
public func fitIQLogin(
    baseURL: URL, email: String, password: String, apiKey: String, transport: any HTTPTransport
) -> SignInGrant {
    .custom {
        var request = HTTPRequest(method: .post, url: baseURL.appending(path: "api/v1/auth/login"))
        request.headerFields[.contentType] = "application/json"
        request.headerFields[.accept] = "application/json"
        request.headerFields[HTTPField.Name("X-API-Key")!] = apiKey
        let body = try JSONEncoder().encode(["email": email, "password": password])
        let (response, data) = try await transport.send(request, body: body)
        if let type = response.headerFields[.contentType], type.contains("html") {
            throw DemoFailure(
                "the server answered an HTML page instead of JSON (HTTP \(response.status.code), \(type))")
        }
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        let answer = try? decoder.decode(LoginAnswer.self, from: data)
        switch (response.status.code, answer) {
        case (200, let answer?):
            guard let accessToken = answer.accessToken, let refreshToken = answer.refreshToken else {
                throw TokenRefreshError.malformedResponse.with(status: 200)
            }
            return TokenResponse(
                accessToken: accessToken, refreshToken: refreshToken, tokenType: answer.tokenType ?? "Bearer",
                expiresIn: answer.expiresIn, userID: answer.userId)
        case (401, let answer?) where answer.error == "invalid_credentials":
            throw TokenRefreshError.signInRejected.with(status: 401)
        case (401, _), (403, _):
            throw TokenRefreshError.configuration.with(oauthError: answer?.error).with(status: response.status.code)
        case (_, nil):
            throw TokenRefreshError.malformedResponse.with(status: response.status.code)
        default:
            throw TokenRefreshError.unexpectedResponse.with(status: response.status.code)
        }
    }
}

/// The login answer, or its error.
private struct LoginAnswer: Decodable {
    let accessToken: String?
    let refreshToken: String?
    let tokenType: String?
    let expiresIn: Double?
    let userId: String?
    let error: String?
}
