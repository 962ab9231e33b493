import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitSignIn
import TokenKitTesting
import TokenRefresh

/// The idpyoidc server of `Interop/idpyoidc` (IdentityPython's OAuth 2.0 server library with its DPoP add-on), at
/// `TOKENKIT_IDPYOIDC_URL`: its URLs and its `/debug` hooks.
struct IdpyOIDCServer: Sendable {
    static let variable = "TOKENKIT_IDPYOIDC_URL"
    static var url: URL? {
        guard let text = ProcessInfo.processInfo.environment[variable], !text.isEmpty else { return nil }
        return URL(string: text)
    }
    static let clientID = "tokenkit-dpop"
    static let redirectURI = URL(string: "http://127.0.0.1/tokenkit-dpop/callback")!

    /// What `GET /debug/stats` reports.
    struct Stats: Decodable {
        let tokenOk: Int
        let tokenRefused: Int
        let resourceOk: Int
        let resourceRefused: Int
        let refusals: [String]
        /// The thumbprint of the proof key of each grant the token endpoint answered, by grant type.
        let bound: [String: [String?]]
    }

    /// What the protected resource answers a request it accepted.
    struct ResourceAnswer: Decodable {
        let jkt: String
        let tokenCnfJkt: String?
        let grantDpopJkt: String?
        let clientId: String?
        /// What idpyoidc's own resource-side DPoP check says of the same request.
        let idpyoidcCheck: String
    }

    let baseURL: URL
    let authority: String
    let origin: HTTPOrigin
    let transport = URLSessionTransport()

    static func current() throws -> IdpyOIDCServer {
        let url = try #require(url)
        let host = try #require(url.host())
        let port = try #require(url.port)
        return IdpyOIDCServer(baseURL: url, authority: "\(host):\(port)", origin: try #require(HTTPOrigin(url)))
    }

    var resourceURL: URL { baseURL.appending(path: "resource") }

    func request(_ method: HTTPRequest.Method, _ pathAndQuery: String) -> HTTPRequest {
        HTTPRequest(method: method, scheme: "http", authority: authority, path: pathAndQuery)
    }

    func stats() async throws -> Stats {
        let (response, body) = try await transport.send(request(.get, "/debug/stats"), body: nil)
        #expect(response.status.code == 200)
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(Stats.self, from: body)
    }

    /// Revokes idpyoidc's record of `accessToken`: the resource then answers `invalid_token`.
    func revoke(_ accessToken: String) async throws {
        var request = request(.post, "/debug/revoke")
        request.headerFields[.contentType] = "application/x-www-form-urlencoded"
        let (response, _) = try await transport.send(request, body: Data("token=\(Form.encode(accessToken))".utf8))
        #expect(response.status.code == 200)
    }

    static func resourceAnswer(_ body: Data) throws -> ResourceAnswer {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        return try decoder.decode(ResourceAnswer.self, from: body)
    }

    /// The `cnf.jkt` claim of a JWT access token (read, not verified: the resource verifies it).
    static func confirmedThumbprint(of accessToken: String) throws -> String? {
        let parts = accessToken.split(separator: ".")
        try #require(parts.count == 3)
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        let payload = try #require(Data(base64Encoded: base64))
        let claims = try #require(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
        return (claims["cnf"] as? [String: Any])?["jkt"] as? String
    }
}

/// The browser: idpyoidc signs its fixed user in without asking, so the authorization request is answered with a
/// 302 to the redirect URI at once.
struct IdpyOIDCBrowser: AuthorizationUserAgent {
    let server: IdpyOIDCServer

    func authorize(_ url: URL, redirectURI: URL) async throws -> URL {
        let target = url.path(percentEncoded: true) + "?" + (url.query(percentEncoded: true) ?? "")
        let (response, body) = try await server.transport.send(server.request(.get, target), body: nil)
        guard response.status.code == 302, let location = response.headerFields[.location],
            let redirect = URL(string: location)
        else {
            throw InteropHarnessError(
                description: "no redirect from idpyoidc: \(response.status) \(String(decoding: body, as: UTF8.self))")
        }
        return redirect
    }
}

/// TokenKit's DPoP client against a real DPoP authorization server nobody here wrote: idpyoidc 5.0.0 (IdentityPython)
/// with its DPoP add-on on the token endpoint (`Interop/idpyoidc`). A browser sign-in (`AuthorizationCodeFlow` with
/// the prover) and a refresh through `DPoPTransport`: idpyoidc verifies each proof, binds the tokens to the proof's key
/// (`cnf.jkt`) and types them `DPoP`; `AuthenticatedClient` with the prover then calls the server's protected
/// resource.
///
/// Needs `TOKENKIT_IDPYOIDC_URL` (`.ci/idpyoidc-interop` starts the server and sets it); skipped without it.
@Suite(
    .serialized,
    .logLeakCheck(),
    .enabled(
        if: IdpyOIDCServer.url != nil,
        "TOKENKIT_IDPYOIDC_URL is not set: run .ci/idpyoidc-interop (it starts idpyoidc's server and sets it)"),
    .timeLimit(.minutes(2))
)
struct IdpyOIDCDPoPTests {
    /// A signed-in session: the prover, the session client and the API client.
    struct Session {
        let prover: DPoPProver
        let tokens: TokenRefreshClient
        let api: AuthenticatedClient
        let transport: RecordingTransport
        let token: AuthToken
    }

    func signIn(_ server: IdpyOIDCServer) async throws -> Session {
        let prover = DPoPProver(key: SoftwareDPoPKey())
        let transport = RecordingTransport(server.transport)
        let metadata = try await AuthorizationServer.discover(issuer: server.baseURL, transport: transport)
        let client = OAuthClient(id: IdpyOIDCServer.clientID)
        let endpoint = TokenEndpoint(
            url: metadata.tokenEndpoint, client: client, transport: DPoPTransport(transport, prover: prover))
        let tokens = TokenRefreshClient(
            strategy: OAuthRefreshStrategy(endpoint: endpoint),
            store: DPoPSessionStore(InMemoryTokenStore(), prover: prover))
        let flow = AuthorizationCodeFlow(
            server: metadata, client: client,
            configuration: .init(
                redirectURI: IdpyOIDCServer.redirectURI, scopes: ["read", "offline_access"], dpop: prover),
            tokens: tokens, transport: transport)
        let token = TestSecrets.shared.register(try await flow.signIn(using: IdpyOIDCBrowser(server: server)))
        let api = AuthenticatedClient(
            transport: transport, tokenProvider: tokens,
            configuration: .init(allowedOrigins: [server.origin], dpop: prover))
        return Session(prover: prover, tokens: tokens, api: api, transport: transport, token: token)
    }

    @Test func theSignInAndTheRefreshAreBoundToTheSessionKeyAndTheResourceAcceptsItsProofs() async throws {
        let server = try IdpyOIDCServer.current()
        let before = try await server.stats()
        let session = try await signIn(server)
        let thumbprint = session.prover.thumbprint

        // The code exchange carried a proof; idpyoidc bound the tokens to its key and typed them DPoP.
        #expect(session.token.tokenType == "DPoP")
        #expect(try IdpyOIDCServer.confirmedThumbprint(of: session.token.accessToken) == thumbprint)
        #expect(session.token.refreshToken != nil)

        // The resource: `Authorization: DPoP` and a proof with `ath`, from AuthenticatedClient.
        let (first, firstBody) = try await session.api.executeWithAutoRetry(server.request(.get, "/resource"))
        #expect(first.status.code == 200)
        let answer = try IdpyOIDCServer.resourceAnswer(firstBody)
        #expect(answer.jkt == thumbprint)
        #expect(answer.tokenCnfJkt == thumbprint)
        #expect(answer.grantDpopJkt == thumbprint)
        #expect(answer.clientId == IdpyOIDCServer.clientID)
        // idpyoidc's own resource-side check compares `ath` with a hexadecimal SHA-256; RFC 9449 section 4.2 (and
        // TokenKit) use base64url, so it refuses every conforming proof. The resource above checks `ath` per the RFC.
        #expect(answer.idpyoidcCheck == "refused: 'ath' in DPoP does not match the token hash")

        // The server drops its record of the token: the next call's 401 leads to one refresh through DPoPTransport,
        // whose proof idpyoidc checks and binds again, and one retry with the new token.
        try await server.revoke(session.token.accessToken)
        let (second, secondBody) = try await session.api.executeWithAutoRetry(server.request(.get, "/resource"))
        #expect(second.status.code == 200)
        #expect(session.transport.grantCount("refresh_token") == 1)
        let refreshed = TestSecrets.shared.register(try #require(session.tokens.currentToken))
        #expect(refreshed.accessToken != session.token.accessToken)
        #expect(refreshed.tokenType == "DPoP")
        #expect(try IdpyOIDCServer.confirmedThumbprint(of: refreshed.accessToken) == thumbprint)
        #expect(try IdpyOIDCServer.resourceAnswer(secondBody).jkt == thumbprint)

        // What idpyoidc saw: one code exchange and one refresh, each with a proof by the session's key; two resource
        // calls accepted and the one refused (the revoked token).
        let after = try await server.stats()
        func newlyBound(_ grantType: String) -> [String?] {
            Array(after.bound[grantType, default: []].dropFirst(before.bound[grantType, default: []].count))
        }
        #expect(newlyBound("authorization_code") == [thumbprint])
        #expect(newlyBound("refresh_token") == [thumbprint])
        #expect(after.tokenRefused == before.tokenRefused)
        #expect(after.resourceOk - before.resourceOk == 2)
        #expect(after.resourceRefused - before.resourceRefused == 1)
    }

    @Test func aProofFromAnotherKeyOrWithoutATokenBoundToItIsRefused() async throws {
        let server = try IdpyOIDCServer.current()
        let session = try await signIn(server)
        let token = session.token.accessToken
        let stranger = DPoPProver(key: SoftwareDPoPKey())
        let before = try await server.stats()

        func call(authorization: String, proof: String?) async throws -> (HTTPResponse, String) {
            var request = server.request(.get, "/resource")
            request.headerFields[.authorization] = authorization
            if let proof { request.headerFields[HTTPField.Name("DPoP")!] = proof }
            let (response, body) = try await server.transport.send(request, body: nil)
            return (response, String(decoding: body, as: UTF8.self))
        }

        // A well-formed proof, with `ath` for this token, signed by a key the token is not bound to.
        let (foreign, foreignBody) = try await call(
            authorization: "DPoP \(token)",
            proof: try stranger.proof(method: "GET", url: server.resourceURL, accessToken: token))
        #expect(foreign.status.code == 401)
        #expect(foreign.headerFields[.wwwAuthenticate]?.contains(#"error="invalid_dpop_proof""#) == true)
        #expect(foreignBody.contains("proof: cnf.jkt"))
        // The session's own key, but a proof for another URL.
        let (elsewhere, elsewhereBody) = try await call(
            authorization: "DPoP \(token)",
            proof: try session.prover.proof(
                method: "GET", url: server.baseURL.appending(path: "other"), accessToken: token))
        #expect(elsewhere.status.code == 401)
        #expect(elsewhereBody.contains("proof: htu"))
        // The token as a bearer token, without a proof.
        let (bearer, _) = try await call(authorization: "Bearer \(token)", proof: nil)
        #expect(bearer.status.code == 401)
        #expect(bearer.headerFields[.wwwAuthenticate]?.hasPrefix("DPoP") == true)

        // TokenKit itself never sends the token with another key's proof: its `cnf.jkt` names the session's key.
        let strangerAPI = AuthenticatedClient(
            transport: session.transport, tokenProvider: session.tokens,
            configuration: .init(allowedOrigins: [server.origin], dpop: stranger))
        await #expect(throws: NetworkRetryError.dpopKeyUnavailable) {
            _ = try await strangerAPI.executeWithAutoRetry(server.request(.get, "/resource"))
        }

        // At the token endpoint, idpyoidc's add-on refuses a refresh without a proof, and one whose proof (by the
        // session's key) is for another URL.
        let refreshToken = try #require(session.token.refreshToken)
        let refresh = [("grant_type", "refresh_token"), ("refresh_token", refreshToken)]
        let client = OAuthClient(id: IdpyOIDCServer.clientID)
        let tokenURL = server.baseURL.appending(path: "token")
        let plain = TokenEndpoint(url: tokenURL, client: client, transport: server.transport)
        await #expect(throws: TokenRefreshError.self) { _ = try await plain.requestToken(refresh) }
        let misdirected = TokenEndpoint(
            url: tokenURL, client: client,
            transport: ProofForAnotherURL(
                base: server.transport, prover: session.prover, url: server.baseURL.appending(path: "other")))
        await #expect(throws: TokenRefreshError.self) { _ = try await misdirected.requestToken(refresh) }

        let after = try await server.stats()
        #expect(after.resourceOk == before.resourceOk)
        #expect(after.resourceRefused - before.resourceRefused == 3)
        let tokenRefusals = after.refusals.dropFirst(before.refusals.count).filter { $0.hasPrefix("token: ") }
        #expect(
            tokenRefusals == [
                "token: invalid_dpop_proof: idpyoidc refused the proof: ValueError: Expected DPoP header, none found",
                "token: invalid_dpop_proof: idpyoidc refused the proof: ValueError: htu in DPoP does not match the HTTP URI",
            ])
    }
}

/// Adds a proof by `prover` for `POST url` to every request, whatever the request's own URL.
struct ProofForAnotherURL: HTTPTransport {
    let base: any HTTPTransport
    let prover: DPoPProver
    let url: URL

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        var request = request
        request.headerFields[HTTPField.Name("DPoP")!] = try prover.proof(method: "POST", url: url)
        return try await base.send(request, body: body)
    }
}
