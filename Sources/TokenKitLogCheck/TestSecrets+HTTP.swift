public import Foundation
package import HTTPTypes
package import TokenKitTesting

extension TestSecrets {
    /// Registers what crossed a mock of the kit (the observer ``shared`` installs).
    ///
    /// - Parameters:
    ///   - crossing: What crossed.
    ///   - origin: Which mock, and whether request or response.
    package func register(_ crossing: SecretCrossings.Crossing, origin: String) {
        switch crossing {
        case .request(let request, let body): registerCredentials(in: request, body: body, origin: origin)
        case .header(let name, let value): registerHeader(name: name, value: value, origin: origin)
        case .requestBody(let body): registerCredentials(inRequestBody: body, origin: origin)
        case .responseBody(let body): registerTokens(inResponseBody: body, origin: origin)
        case .secret(let value, .userID) where value.utf8.count < Self.minimumLength:
            // A mock's short user ID ("user-1") cannot be searched for; one a test registers itself is reported.
            break
        case .secret(let value, let kind): register(value, as: Self.kind(kind), origin: origin)
        }
    }

    private static func kind(_ kind: SecretCrossings.Kind) -> Kind {
        switch kind {
        case .accessToken: .accessToken
        case .refreshToken: .refreshToken
        case .idToken: .idToken
        case .clientSecret: .clientSecret
        case .password: .password
        case .credential: .credential
        case .userID: .userID
        }
    }

    /// Registers the credentials a request carries: the `Authorization` and `Proxy-Authorization` values
    /// (and the client secret inside `Basic`), API-key headers, and secret fields of the query and of a
    /// form or JSON body (`password`, `client_secret`, `refresh_token`, `code_verifier`, ...).
    ///
    /// - Parameters:
    ///   - request: The request head.
    ///   - body: The body, if any.
    ///   - origin: Where the request was seen, such as `MockTransport`.
    package func registerCredentials(in request: HTTPRequest, body: Data?, origin: String) {
        for field in request.headerFields {
            registerHeader(name: field.name.canonicalName, value: field.value, origin: origin)
        }
        if let path = request.path, let query = path.split(separator: "?", maxSplits: 1).dropFirst().first {
            registerFields(formEncoded: String(query), origin: origin, kinds: nil)
        }
        if let body { registerFields(in: body, origin: origin, kinds: nil) }
    }

    /// Registers the tokens in a response body, a JSON object (searched at every depth, snake_case or
    /// camelCase keys) or a form-encoded string: access, refresh and ID tokens and client secrets. Fields that
    /// hold a credential only in a request (`code`, `token`, `password`) are left alone, so an error body such
    /// as `{"code": "invalid_request"}` registers nothing.
    ///
    /// - Parameters:
    ///   - body: The body.
    ///   - origin: Where the body was seen.
    public func registerTokens(inResponseBody body: Data, origin: String) {
        registerFields(in: body, origin: origin, kinds: [.accessToken, .refreshToken, .idToken, .clientSecret])
    }

    /// Registers every secret field of a request body or query string (JSON or form-encoded), as
    /// `registerCredentials(in:body:origin:)` does for a whole request.
    ///
    /// - Parameters:
    ///   - body: The body, or a query string as bytes.
    ///   - origin: Where it was seen.
    public func registerCredentials(inRequestBody body: Data, origin: String) {
        registerFields(in: body, origin: origin, kinds: nil)
    }

    /// Registers the secret fields of a body; `kinds` limits them (`nil`: every kind).
    private func registerFields(in body: Data, origin: String, kinds: Set<Kind>?) {
        guard !body.isEmpty else { return }
        if let json = try? JSONSerialization.jsonObject(with: body, options: [.fragmentsAllowed]) {
            registerFields(inJSON: json, origin: origin, kinds: kinds)
        } else if let text = String(data: body, encoding: .utf8), text.contains("=") {
            registerFields(formEncoded: text, origin: origin, kinds: kinds)
        }
    }

    /// Registers a header's credential if the header carries one.
    ///
    /// - Parameters:
    ///   - name: The field name, any case.
    ///   - value: The field value.
    ///   - origin: Where the header was seen.
    public func registerHeader(name: String, value: String, origin: String) {
        let lowered = name.lowercased()
        if lowered == "authorization" || lowered == "proxy-authorization" {
            let parts = value.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
            guard parts.count == 2 else {
                // A scheme alone (`Bearer `, as a test of a missing token sends) carries no secret; a bare value does.
                let schemes: Set<String> = ["bearer", "basic", "dpop", "digest", "negotiate"]
                if let only = parts.first, !schemes.contains(only.lowercased()) {
                    register(String(only), as: .credential, origin: origin)
                }
                return
            }
            let scheme = parts[0].lowercased()
            let parameter = String(parts[1]).trimmingCharacters(in: .whitespaces)
            switch scheme {
            case "bearer", "dpop": register(parameter, as: .accessToken, origin: origin)
            case "basic":
                register(parameter, as: .credential, origin: origin)
                if let decoded = Data(base64Encoded: parameter).flatMap({ String(data: $0, encoding: .utf8) }),
                    let colon = decoded.firstIndex(of: ":")
                {
                    // RFC 6749 2.3.1 form-encodes the secret first; a client that does not sends it as is.
                    let secret = String(decoded[decoded.index(after: colon)...])
                    register(secret, as: .clientSecret, origin: origin)
                    register(Self.formDecoded(secret), as: .clientSecret, origin: origin)
                }
            default: register(parameter, as: .credential, origin: origin)
            }
        } else if lowered.contains("api-key") || lowered.contains("apikey") || lowered == "cookie" {
            register(value, as: .credential, origin: origin)
        }
    }

    /// The kind of the secret a field with this name holds, or `nil` for a field that holds none.
    ///
    /// - Parameter name: A form field or JSON key.
    /// - Returns: The kind.
    package static func kind(ofField name: String) -> Kind? {
        switch name.lowercased().replacingOccurrences(of: "_", with: "") {
        case "accesstoken": .accessToken
        case "refreshtoken": .refreshToken
        case "idtoken": .idToken
        case "clientsecret": .clientSecret
        case "password", "newpassword": .password
        case "token", "code", "codeverifier", "clientassertion", "assertion", "subjecttoken", "apikey": .credential
        default: nil
        }
    }

    private func registerFields(inJSON json: Any, origin: String, kinds: Set<Kind>?) {
        if let object = json as? [String: Any] {
            for (key, value) in object {
                if let text = value as? String, let kind = Self.kind(ofField: key) {
                    if kinds?.contains(kind) ?? true { register(text, as: kind, origin: origin) }
                } else {
                    registerFields(inJSON: value, origin: origin, kinds: kinds)
                }
            }
        } else if let array = json as? [Any] {
            for element in array { registerFields(inJSON: element, origin: origin, kinds: kinds) }
        }
    }

    private func registerFields(formEncoded text: String, origin: String, kinds: Set<Kind>?) {
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let kind = Self.kind(ofField: Self.formDecoded(String(parts[0]))),
                kinds?.contains(kind) ?? true
            else { continue }
            register(Self.formDecoded(String(parts[1])), as: kind, origin: origin)
        }
    }

    static func formDecoded(_ text: String) -> String {
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}
