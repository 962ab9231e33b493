package import AuthToken
public import Foundation

/// A successful answer of a token endpoint (RFC 6749 section 5.1), in any of the supported dialects.
///
/// Its description and mirror never show token text.
public struct TokenResponse: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// The new access token.
    public let accessToken: String
    /// The new refresh token, if the server issued one. `nil` means "keep the one you have" (RFC 6749
    /// section 6).
    public let refreshToken: String?
    /// The token type, normally `Bearer`.
    public let tokenType: String
    /// The lifetime in seconds from receipt (`expires_in`), if given.
    public let expiresIn: TimeInterval?
    /// The granted scope, if the server said.
    public let scope: String?
    /// The user the token belongs to, when the response names one (`user_id`, `user_profile_id`).
    public let userID: String?
    /// The user's profile, when the token provider supplied one (an SDK's user object, an ID token's claims):
    /// ``TokenRefreshClient/currentUser`` then shows it where the token's claims say nothing.
    public let user: AuthUser?
    /// The OpenID Connect `id_token` as received, for the sign-in module to verify; never described or mirrored.
    package var idToken: String?
    /// Whether the access token may have been handed over from a cache (an SDK's) rather than issued just now: its
    /// expiry is then its JWT's `exp`, not a lifetime counted from receipt.
    package var mayComeFromCache = false

    /// Creates a response from its parts.
    ///
    /// - Parameters:
    ///   - accessToken: The access token.
    ///   - refreshToken: The refresh token, if one was issued.
    ///   - tokenType: The token type; `Bearer` by default.
    ///   - expiresIn: The lifetime in seconds, if known.
    ///   - scope: The granted scope, if known.
    ///   - userID: The user ID, if the response named one.
    ///   - user: The user's profile, if the provider supplied one.
    public init(
        accessToken: String, refreshToken: String? = nil, tokenType: String = "Bearer",
        expiresIn: TimeInterval? = nil, scope: String? = nil, userID: String? = nil, user: AuthUser? = nil
    ) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.tokenType = tokenType
        self.expiresIn = expiresIn
        self.scope = scope
        self.userID = userID
        self.user = user
    }

    /// A response with the ID token as received.
    package init(
        accessToken: String, refreshToken: String?, tokenType: String, expiresIn: TimeInterval?, scope: String?,
        userID: String?, user: AuthUser?, idToken: String?
    ) {
        self.init(
            accessToken: accessToken, refreshToken: refreshToken, tokenType: tokenType, expiresIn: expiresIn,
            scope: scope, userID: userID, user: user)
        self.idToken = idToken
    }

    /// Creates a response that hands over an existing token, for closure strategies.
    ///
    /// - Parameter token: The token; its remaining lifetime is not recomputed.
    package init(token: AuthToken) {
        self.init(
            accessToken: token.accessToken, refreshToken: token.refreshToken, tokenType: token.tokenType,
            expiresIn: token.lifetime, scope: token.scope)
    }

    /// The token this response describes, received at `receivedAt`.
    ///
    /// - Parameters:
    ///   - receivedAt: When the response arrived, by the local wall clock.
    ///   - previousRefreshToken: The refresh token to keep when the response carries none.
    /// - Returns: The token; its expiry comes from `expires_in` or the JWT claims.
    package func token(receivedAt: Date, keeping previousRefreshToken: String? = nil) -> AuthToken {
        if mayComeFromCache && expiresIn == nil {
            // Handed back from a cache: when it was issued is unknown, so its lifetime does not restart now.
            return AuthToken.withParsedExpiration(
                accessToken: accessToken, refreshToken: refreshToken ?? previousRefreshToken, tokenType: tokenType,
                scope: scope, restoredAt: receivedAt)
        }
        return AuthToken.withParsedExpiration(
            accessToken: accessToken, refreshToken: refreshToken ?? previousRefreshToken, tokenType: tokenType,
            scope: scope, expiresIn: expiresIn, receivedAt: receivedAt)
    }

    /// A summary without token text.
    public var description: String {
        let lifetime = expiresIn.map { "\(Int($0)) s" } ?? "unknown"
        let refresh = refreshToken == nil ? "none" : "present"
        return "TokenResponse(\(tokenType) \(AuthToken.fingerprint(accessToken)), refresh: \(refresh), "
            + "expires in: \(lifetime))"
    }

    /// A mirror with the tokens redacted.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "accessToken": "<redacted \(AuthToken.fingerprint(accessToken))>",
                "refreshToken": refreshToken.map { "<redacted \(AuthToken.fingerprint($0))>" } ?? "nil",
                "tokenType": tokenType, "expiresIn": expiresIn as Any, "scope": scope ?? "nil",
                "userID": userID ?? "nil", "user": user.map { "\($0)" } ?? "nil",
            ],
            displayStyle: .struct)
    }
}

extension TokenResponse {
    /// The largest body a token endpoint answer may have; anything longer is malformed.
    static let maximumBodySize = 256 * 1024

    /// Parses an RFC 6749 section 5.1 success body, or the FitIQ body: snake_case or camelCase keys
    /// (`access_token` or `accessToken`, and so on), optionally wrapped in `data`. Never crashes: anything
    /// unexpected is ``TokenRefreshError/malformedResponse``. An OpenID Connect `id_token` is kept as received for
    /// the sign-in module to verify; its claims never become ``user`` unverified.
    ///
    /// - Parameter body: The response body.
    /// - Returns: The parsed response.
    /// - Throws: ``TokenRefreshError/malformedResponse``.
    package static func parse(_ body: Data) throws(TokenRefreshError) -> TokenResponse {
        guard !body.isEmpty, body.count <= maximumBodySize,
            let wire = try? JSONDecoder().decode(Wire.self, from: body)
        else { throw .malformedResponse }
        let fields = wire.fields.accessToken == nil ? (wire.data ?? wire.fields) : wire.fields
        guard let accessToken = fields.accessToken, !accessToken.isEmpty, accessToken.utf8.count <= 16 * 1024
        else { throw .malformedResponse }
        var tokenType = "Bearer"
        if let text = fields.tokenType {
            guard !text.isEmpty, text.utf8.count <= 64 else { throw .malformedResponse }
            // RFC 6749 section 5.1: case-insensitive; present it in the usual spelling.
            tokenType = text.lowercased() == "bearer" ? "Bearer" : text
        }
        if let expiresIn = fields.expiresIn {
            guard expiresIn.isFinite, expiresIn >= 0, expiresIn <= 10 * 365 * 86_400 else {
                throw .malformedResponse
            }
        }
        return TokenResponse(
            accessToken: accessToken, refreshToken: fields.refreshToken.flatMap { $0.isEmpty ? nil : $0 },
            tokenType: tokenType, expiresIn: fields.expiresIn, scope: fields.scope, userID: fields.userID,
            user: nil, idToken: fields.idToken)
    }

    /// The OAuth `error` code of an RFC 6749 section 5.2 body, if it has a well-formed one.
    static func oauthErrorCode(_ body: Data) -> String? {
        guard !body.isEmpty, body.count <= maximumBodySize,
            let wire = try? JSONDecoder().decode(ErrorWire.self, from: body), let code = wire.error
        else { return nil }
        // RFC 6749 section 5.2 allows more, but registered codes are lowercase names with underscores. Keep
        // to that, so an echo of a secret in a misbehaving server's answer cannot ride into descriptions.
        guard !code.isEmpty, code.utf8.count <= 64,
            code.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F || ($0 >= 0x30 && $0 <= 0x39) })
        else { return nil }
        return code
    }
}

/// The wire shape of a success body: fields at the top level, or inside `data`.
private struct Wire: Decodable {
    let fields: Fields
    let data: Fields?

    enum CodingKeys: String, CodingKey { case data }

    init(from decoder: any Decoder) throws {
        fields = try Fields(from: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        data = try? container.decodeIfPresent(Fields.self, forKey: .data)
    }
}

/// The token fields, read under either key style: snake_case (RFC 6749) or camelCase (the FitIQ and Lume
/// backends, which the apps decode with `.convertFromSnakeCase`, so both spellings work there). When a body
/// carries both spellings of a field, the snake_case one wins.
private struct Fields: Decodable {
    let accessToken: String?
    let refreshToken: String?
    let tokenType: String?
    let expiresIn: Double?
    let scope: String?
    let userID: String?
    let idToken: String?

    /// A key given by its spelling.
    struct Key: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        /// The first spelling of a field that is present.
        func key(_ names: String...) -> Key? {
            names.lazy.map(Key.init).first { container.contains($0) }
        }
        func string(_ key: Key?) throws -> String? {
            try key.flatMap { try container.decodeIfPresent(String.self, forKey: $0) }
        }
        accessToken = try string(key("access_token", "accessToken"))
        refreshToken = try string(key("refresh_token", "refreshToken"))
        tokenType = try string(key("token_type", "tokenType"))
        if let expiresKey = key("expires_in", "expiresIn") {
            if let number = try? container.decodeIfPresent(Double.self, forKey: expiresKey) {
                expiresIn = number
            } else if let text = try container.decodeIfPresent(String.self, forKey: expiresKey) {
                // Some servers send the lifetime as a string.
                guard let number = Double(text) else {
                    throw DecodingError.dataCorruptedError(
                        forKey: expiresKey, in: container, debugDescription: "not a number")
                }
                expiresIn = number
            } else {
                expiresIn = nil
            }
        } else {
            expiresIn = nil
        }
        scope = key("scope").flatMap { try? container.decodeIfPresent(String.self, forKey: $0) }
        idToken = key("id_token", "idToken").flatMap { try? container.decodeIfPresent(String.self, forKey: $0) }
        userID =
            ["user_id", "userId", "userID", "user_profile_id", "userProfileId", "userProfileID"].lazy
            .compactMap { name in try? container.decodeIfPresent(String.self, forKey: Key(name)) }.first
    }
}

private struct ErrorWire: Decodable {
    let error: String?
}
