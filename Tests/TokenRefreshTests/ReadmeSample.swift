import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import TokenRefresh

/// The README's usage sample, verbatim, so the build breaks when the sample stops compiling. It is not run:
/// it talks to hosts that do not exist here. The behaviour it shows is tested elsewhere in this target.
func readmeUsageSample(tokenURL: URL, password: String) async throws -> (HTTPResponse, Data) {
    let transport = URLSessionTransport()
    let endpoint = TokenEndpoint(url: tokenURL, client: OAuthClient(id: "my-app"), transport: transport)
    let auth = TokenRefreshClient(
        strategy: OAuthRefreshStrategy(endpoint: endpoint),
        store: FileTokenStore(directory: URL(filePath: "/var/lib/my-app/sessions")))
    try await auth.signIn(.password(username: "ada", password: password, at: endpoint))

    let api = AuthenticatedClient(
        transport: transport, tokenProvider: auth,
        configuration: .init(allowedOrigins: [HTTPOrigin(string: "https://api.example.com")!]))
    let (response, body) = try await api.executeWithAutoRetry(
        HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/v1/me"))
    return (response, body)
}
