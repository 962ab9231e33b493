public import Foundation
public import HTTPTypes
public import NetworkRetry

/// Wraps a transport and registers in ``TestSecrets/shared`` the credentials of every request and the tokens
/// of every response body, so the log check knows the secrets a real server issued.
///
/// ```swift
/// let transport = SecretRegisteringTransport(URLSessionTransport())
/// let client = TokenRefreshClient(strategy: OAuthRefreshStrategy(endpoint: endpoint(transport)), ...)
/// ```
public struct SecretRegisteringTransport: HTTPTransport {
    private let base: any HTTPTransport
    private let secrets: [TestSecrets]

    /// Wraps `base`.
    ///
    /// - Parameter base: The transport that sends the requests.
    public init(_ base: any HTTPTransport) {
        self.init(base, registeringIn: [.shared])
    }

    /// Wraps `base`, registering in `secrets`: add a registry of your own to tell which secrets one flow used.
    ///
    /// - Parameters:
    ///   - base: The transport that sends the requests.
    ///   - secrets: Where to register.
    package init(_ base: any HTTPTransport, registeringIn secrets: [TestSecrets]) {
        self.base = base
        self.secrets = secrets
    }

    /// Registers the request's credentials, sends it, and registers the tokens in the answer.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - body: Its body.
    /// - Returns: The base transport's answer.
    /// - Throws: What the base transport throws.
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        for registry in secrets { registry.registerCredentials(in: request, body: body, origin: "request") }
        let (response, data) = try await base.send(request, body: body)
        for registry in secrets { registry.registerTokens(inResponseBody: data, origin: "response") }
        return (response, data)
    }
}
