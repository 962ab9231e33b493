package import Crypto
package import Foundation
package import HTTPTypes
import NetworkRetry
import TokenKitLogCheck
package import TokenKitSignIn
import TokenRefresh

/// An OpenID provider in memory for the sign-in tests: discovery, keys, PAR, the token endpoint (codes, device
/// codes, refresh tokens), revocation and device authorization, plus ``approve(_:)``, which plays the user's
/// browser at the authorization endpoint and returns the redirect. Every token it mints is registered with the log
/// check. A lock guards its state (the tests' transport is called from the flow's tasks).
package final class FakeOpenIDProvider: HTTPTransport, Sendable {
    package static let issuer = "https://id.example.com"
    package static let clientID = "tokenkit-app"

    /// What the provider does differently, for attack and failure tests.
    package struct Behaviour: Sendable {
        package init() {}
        package var sendsIssuer = true
        package var redirectIssuer: String?
        package var idTokenAudience: [String]?
        package var idTokenNonce: String?
        package var idTokenIssuer: String?
        package var idTokenAtHash: String?
        package var idTokenExpiresIn: TimeInterval = 600
        package var omitsIDToken = false
        package var offersPAR = false
        package var offersDevice = true
        package var deviceInterval: Double = 5
        package var deviceExpiresIn: Double = 60
        package var revocationEndpoint = true
        package var authorizedParty: String?
        /// Sign ID tokens with a key the key set never lists.
        package var signsIDTokensWithUnpublishedKey = false
        /// The `name` claim of the ID tokens, when not Ada's.
        package var idTokenName: String?
    }

    package struct Grant: Sendable {
        package var challenge: String
        package var nonce: String?
        package var redirectURI: String
        package var used = false
    }

    package enum DeviceAnswer: Sendable { case pending, slowDown, approve, deny }

    package struct State: Sendable {
        package var behaviour = Behaviour()
        package var codes: [String: Grant] = [:]
        package var pushed: [String: [String: String]] = [:]
        package var refreshTokens: Set<String> = []
        package var revoked: [String] = []
        package var counter = 0
        package var deviceAnswers: [DeviceAnswer] = []
        package var devicePolls = 0
        package var tokenRequests: [[String: String]] = []
        package var authorizationQueries: [[String: String]] = []
        package var pushedBodies: [[String: String]] = []
        package var discoveryFetches = 0
        package var logoutQueries: [[String: String]] = []
    }

    package let key = P256.Signing.PrivateKey()
    /// A key the provider never publishes.
    package let unpublishedKey = P256.Signing.PrivateKey()
    package let now: @Sendable () -> Date
    private let state: Locked<State>

    package init(now: @escaping @Sendable () -> Date, behaviour: Behaviour = Behaviour()) {
        self.now = now
        var initial = State()
        initial.behaviour = behaviour
        state = Locked(initial)
    }

    package func update(_ body: (inout State) -> Void) { state.withLock { body(&$0) } }
    package var snapshot: State { state.withLock { $0 } }

    package var server: AuthorizationServer {
        let behaviour = snapshot.behaviour
        return AuthorizationServer(
            issuer: Self.issuer, authorizationEndpoint: URL(string: Self.issuer + "/authorize")!,
            tokenEndpoint: URL(string: Self.issuer + "/token")!, jwksURI: URL(string: Self.issuer + "/jwks")!,
            endSessionEndpoint: URL(string: Self.issuer + "/logout")!,
            revocationEndpoint: behaviour.revocationEndpoint ? URL(string: Self.issuer + "/revoke")! : nil,
            pushedAuthorizationRequestEndpoint: behaviour.offersPAR ? URL(string: Self.issuer + "/par")! : nil,
            deviceAuthorizationEndpoint: behaviour.offersDevice ? URL(string: Self.issuer + "/device")! : nil,
            sendsIssuerInRedirect: behaviour.sendsIssuer)
    }

    // MARK: - The user's browser at /authorize

    /// Plays the user who signs in and consents: reads the authorization URL and returns the redirect.
    package func approve(_ url: URL, deny: Bool = false) -> URL {
        var query = Self.query(url)
        if let requestURI = query["request_uri"] {
            query = state.withLock { $0.pushed[requestURI] } ?? [:]
        }
        let redirect = query["redirect_uri"] ?? "about:blank"
        let code = next("code")
        TestSecrets.shared.register(code, as: .credential)
        let behaviour = state.withLock { state in
            state.authorizationQueries.append(query)
            if !deny {
                state.codes[code] = Grant(
                    challenge: query["code_challenge"] ?? "", nonce: query["nonce"], redirectURI: redirect)
            }
            return state.behaviour
        }
        var items: [(String, String)] = deny ? [("error", "access_denied")] : [("code", code)]
        if let value = query["state"] { items.append(("state", value)) }
        if behaviour.sendsIssuer { items.append(("iss", behaviour.redirectIssuer ?? Self.issuer)) }
        return Self.url(redirect, items)
    }

    // MARK: - HTTPTransport

    package func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let path = request.path ?? "/"
        let form = Self.form(body)
        switch (request.method, path) {
        case (.get, "/.well-known/openid-configuration"):
            state.withLock { $0.discoveryFetches += 1 }
            return Self.json(200, discovery(), headers: ["Cache-Control": "max-age=300"])
        case (.get, "/jwks"):
            return Self.json(200, jwks())
        case (.post, "/par"):
            state.withLock { $0.pushedBodies.append(form) }
            let uri = "urn:ietf:params:oauth:request_uri:" + next("par")
            var pushed = form
            pushed["client_id"] = Self.clientID
            state.withLock { $0.pushed[uri] = pushed }
            return Self.json(201, ["request_uri": uri, "expires_in": 60])
        case (.post, "/token"):
            state.withLock { $0.tokenRequests.append(form) }
            return token(form)
        case (.post, "/revoke"):
            state.withLock { state in
                if let token = form["token"] {
                    state.revoked.append(token)
                    state.refreshTokens.remove(token)
                }
            }
            return (HTTPResponse(status: .ok), Data())
        case (.post, "/device"):
            let code = next("device")
            TestSecrets.shared.register(code, as: .credential)
            let behaviour = snapshot.behaviour
            return Self.json(
                200,
                [
                    "device_code": code, "user_code": "WDJB-MJHT", "verification_uri": Self.issuer + "/activate",
                    "verification_uri_complete": Self.issuer + "/activate?user_code=WDJB-MJHT",
                    "expires_in": behaviour.deviceExpiresIn, "interval": behaviour.deviceInterval,
                ])
        default:
            return (HTTPResponse(status: .notFound), Data())
        }
    }

    private func token(_ form: [String: String]) -> (HTTPResponse, Data) {
        switch form["grant_type"] {
        case "authorization_code":
            let code = form["code"] ?? ""
            let grant: Grant? = state.withLock { state in
                guard var grant = state.codes[code], !grant.used else { return nil }
                grant.used = true
                state.codes[code] = grant
                return grant
            }
            guard let grant, grant.redirectURI == form["redirect_uri"],
                Self.challenge(form["code_verifier"] ?? "") == grant.challenge
            else { return Self.json(400, ["error": "invalid_grant"]) }
            return tokens(nonce: grant.nonce, code: code)
        case "refresh_token":
            let token = form["refresh_token"] ?? ""
            guard state.withLock({ $0.refreshTokens.contains(token) }) else {
                return Self.json(400, ["error": "invalid_grant"])
            }
            return tokens(nonce: nil, code: nil)
        case "urn:ietf:params:oauth:grant-type:device_code":
            let answer: DeviceAnswer = state.withLock { state in
                state.devicePolls += 1
                return state.deviceAnswers.isEmpty ? .pending : state.deviceAnswers.removeFirst()
            }
            switch answer {
            case .pending: return Self.json(400, ["error": "authorization_pending"])
            case .slowDown: return Self.json(400, ["error": "slow_down"])
            case .deny: return Self.json(400, ["error": "access_denied"])
            case .approve: return tokens(nonce: nil, code: nil)
            }
        default:
            return Self.json(400, ["error": "unsupported_grant_type"])
        }
    }

    private func tokens(nonce: String?, code: String?) -> (HTTPResponse, Data) {
        let access = next("access-token")
        let refresh = next("refresh-token")
        TestSecrets.shared.register(access, as: .accessToken)
        TestSecrets.shared.register(refresh, as: .refreshToken)
        let behaviour = state.withLock { state in
            state.refreshTokens.insert(refresh)
            return state.behaviour
        }
        var body: [String: Any] = [
            "access_token": access, "refresh_token": refresh, "token_type": "Bearer", "expires_in": 3600,
        ]
        if !behaviour.omitsIDToken {
            let issued = now().timeIntervalSince1970
            var claims: [String: Any] = [
                "iss": behaviour.idTokenIssuer ?? Self.issuer, "sub": "user-ada",
                "aud": behaviour.idTokenAudience ?? [Self.clientID], "iat": issued,
                "exp": issued + behaviour.idTokenExpiresIn, "name": "Ada Lovelace", "given_name": "Ada",
                "family_name": "Lovelace", "email": "ada@example.com", "picture": "https://id.example.com/ada.png",
                "sid": "session-1",
                "at_hash": behaviour.idTokenAtHash ?? Self.halfHash(access),
            ]
            if let nonce = behaviour.idTokenNonce ?? nonce { claims["nonce"] = nonce }
            if let code { claims["c_hash"] = Self.halfHash(code) }
            if let party = behaviour.authorizedParty { claims["azp"] = party }
            if let name = behaviour.idTokenName { claims["name"] = name }
            let idToken = sign(claims, with: behaviour.signsIDTokensWithUnpublishedKey ? unpublishedKey : key)
            TestSecrets.shared.register(idToken, as: .idToken)
            body["id_token"] = idToken
        }
        return Self.json(200, body)
    }

    // MARK: - Documents and signing

    private func discovery() -> [String: Any] {
        let server = self.server
        var document: [String: Any] = [
            "issuer": server.issuer, "authorization_endpoint": server.authorizationEndpoint.absoluteString,
            "token_endpoint": server.tokenEndpoint.absoluteString, "jwks_uri": Self.issuer + "/jwks",
            "end_session_endpoint": Self.issuer + "/logout",
            "authorization_response_iss_parameter_supported": server.sendsIssuerInRedirect,
        ]
        if let url = server.revocationEndpoint { document["revocation_endpoint"] = url.absoluteString }
        if let url = server.pushedAuthorizationRequestEndpoint {
            document["pushed_authorization_request_endpoint"] = url.absoluteString
        }
        if let url = server.deviceAuthorizationEndpoint {
            document["device_authorization_endpoint"] = url.absoluteString
        }
        return document
    }

    private func jwks() -> [String: Any] {
        let raw = key.publicKey.rawRepresentation
        return [
            "keys": [
                [
                    "kty": "EC", "crv": "P-256", "kid": "k1", "alg": "ES256", "use": "sig",
                    "x": Self.base64URL(raw.prefix(32)), "y": Self.base64URL(raw.suffix(32)),
                ]
            ]
        ]
    }

    package func sign(_ claims: [String: Any], with key: P256.Signing.PrivateKey? = nil) -> String {
        let key = key ?? self.key
        let header = Self.base64URL(try! JSONSerialization.data(withJSONObject: ["alg": "ES256", "kid": "k1"]))
        let payload = Self.base64URL(try! JSONSerialization.data(withJSONObject: claims))
        let input = header + "." + payload
        let signature = try! key.signature(for: Data(input.utf8)).rawRepresentation
        return input + "." + Self.base64URL(signature)
    }

    private func next(_ prefix: String) -> String {
        let number = state.withLock { state in
            state.counter += 1
            return state.counter
        }
        return "\(prefix)-\(number)-\(UUID().uuidString)"
    }

    // MARK: - Encoding

    package static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    package static func challenge(_ verifier: String) -> String {
        base64URL(Data(SHA256.hash(data: Data(verifier.utf8))))
    }

    package static func halfHash(_ text: String) -> String {
        base64URL(Data(Array(SHA256.hash(data: Data(text.utf8))).prefix(16)))
    }

    package static func query(_ url: URL) -> [String: String] {
        var result: [String: String] = [:]
        for item in URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems ?? [] {
            result[item.name] = item.value?.replacingOccurrences(of: "+", with: " ")
        }
        return result
    }

    package static func form(_ body: Data?) -> [String: String] {
        guard let body, let text = String(data: body, encoding: .utf8) else { return [:] }
        var result: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
            }
            result[parts[0]] = parts.count > 1 ? parts[1] : ""
        }
        return result
    }

    package static func url(_ base: String, _ items: [(String, String)]) -> URL {
        var components = URLComponents(string: base)!
        components.queryItems = (components.queryItems ?? []) + items.map { URLQueryItem(name: $0.0, value: $0.1) }
        return components.url!
    }

    package static func json(
        _ status: Int, _ object: [String: Any], headers: [String: String] = [:]
    ) -> (HTTPResponse, Data) {
        var response = HTTPResponse(status: .init(code: status))
        response.headerFields[.contentType] = "application/json"
        for (name, value) in headers { response.headerFields[HTTPField.Name(name)!] = value }
        return (response, try! JSONSerialization.data(withJSONObject: object))
    }
}

/// A value behind a lock, for test doubles.
package final class Locked<Value: Sendable>: @unchecked Sendable {
    // `@unchecked Sendable`: `value` is only touched while holding `lock`.
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    package func withLock<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

/// A user agent that plays the browser against the fake provider.
package struct ProviderBrowser: AuthorizationUserAgent {
    package let provider: FakeOpenIDProvider
    package var deny = false

    package init(provider: FakeOpenIDProvider, deny: Bool = false) {
        self.provider = provider
        self.deny = deny
    }

    package func authorize(_ url: URL, redirectURI: URL) async throws -> URL {
        if url.path == "/logout" {
            let query = FakeOpenIDProvider.query(url)
            provider.update { $0.logoutQueries.append(query) }
            return FakeOpenIDProvider.url(
                redirectURI.absoluteString, query.filter { $0.key == "state" }.map { ($0.key, $0.value) })
        }
        return provider.approve(url, deny: deny)
    }
}
