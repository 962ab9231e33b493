import Foundation

extension AuthToken {
    private enum CodingKeys: String, CodingKey {
        case accessToken, refreshToken, tokenType, scope, receivedAt, lifetime, expirationClaim
        /// The whole lifetime the margins scale with, when it is not ``AuthToken/lifetime``.
        case knownLifetime
        /// Lume's stored token: `{"accessToken", "refreshToken", "expiresAt"}`.
        case expiresAt
    }

    /// Decodes TokenKit's own encoding, or the token the Lume app stored: `{"accessToken", "refreshToken",
    /// "expiresAt"}`, with `expiresAt` as the decoder's date strategy writes it (by default seconds since
    /// 2001-01-01, what Lume's `JSONEncoder` wrote), as such a number, or as an ISO 8601 string.
    ///
    /// A Lume token has no receipt time: its `expiresAt` is an absolute expiry compared with the clock, and
    /// ``receivedAt`` is the moment of decoding.
    ///
    /// - Parameter decoder: The decoder.
    /// - Throws: `DecodingError` when neither shape is there.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let accessToken = try container.decode(String.self, forKey: .accessToken)
        let refreshToken = try container.decodeIfPresent(String.self, forKey: .refreshToken)
        guard container.contains(.receivedAt) else {
            self.init(
                accessToken: accessToken, refreshToken: refreshToken, receivedAt: AuthToken.systemNow(),
                expirationClaim: try Self.lumeExpiry(in: container))
            return
        }
        let lifetime = try container.decodeIfPresent(TimeInterval.self, forKey: .lifetime).flatMap(Self.sanitized)
        let expirationClaim = try container.decodeIfPresent(Date.self, forKey: .expirationClaim)
        let known = try container.decodeIfPresent(TimeInterval.self, forKey: .knownLifetime).flatMap(Self.sanitized)
        self.init(
            accessToken: accessToken,
            refreshToken: refreshToken,
            tokenType: try container.decodeIfPresent(String.self, forKey: .tokenType) ?? "Bearer",
            scope: try container.decodeIfPresent(String.self, forKey: .scope),
            receivedAt: try container.decode(Date.self, forKey: .receivedAt),
            lifetime: lifetime,
            expirationClaim: expirationClaim,
            knownLifetime: lifetime ?? known
                ?? (expirationClaim == nil ? nil : Self.issuedLifetime(of: accessToken)))
    }

    /// Encodes the token in TokenKit's shape, or in Lume's old one when the encoder's `userInfo` asks for it
    /// (`AuthToken.lumeShapeKey`, in TokenKitCompatibility).
    ///
    /// TokenKit's shape holds every stored property (optional ones only when present; `knownLifetime` when
    /// the whole lifetime is known but not counted from receipt) and also `expiresAt`
    /// when the expiry is known, so Lume's old `AuthToken` struct (`accessToken`, `refreshToken`, `expiresAt`)
    /// reads it too when a refresh token is there. Dates follow the encoder's date strategy.
    ///
    /// - Parameter encoder: The encoder.
    /// - Throws: `EncodingError.invalidValue` when Lume's shape is asked for and the refresh token or
    ///   the expiry is missing; otherwise what the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if encoder.userInfo[Self.lumeShapeUserInfoKey] as? Bool == true {
            guard let refreshToken, let expiresAt else {
                throw EncodingError.invalidValue(
                    self,
                    EncodingError.Context(
                        codingPath: encoder.codingPath,
                        debugDescription:
                            "Lume's token shape needs a refresh token and an expiry, and this token lacks "
                            + (refreshToken == nil ? "a refresh token" : "an expiry")))
            }
            try container.encode(accessToken, forKey: .accessToken)
            try container.encode(refreshToken, forKey: .refreshToken)
            try container.encode(expiresAt, forKey: .expiresAt)
            return
        }
        try container.encode(accessToken, forKey: .accessToken)
        try container.encodeIfPresent(refreshToken, forKey: .refreshToken)
        try container.encode(tokenType, forKey: .tokenType)
        try container.encodeIfPresent(scope, forKey: .scope)
        try container.encode(receivedAt, forKey: .receivedAt)
        try container.encodeIfPresent(lifetime, forKey: .lifetime)
        try container.encodeIfPresent(expirationClaim, forKey: .expirationClaim)
        if lifetime == nil { try container.encodeIfPresent(knownLifetime, forKey: .knownLifetime) }
        try container.encodeIfPresent(expiresAt, forKey: .expiresAt)
    }

    /// Lume's `expiresAt`, in whichever form it was written.
    private static func lumeExpiry(in container: KeyedDecodingContainer<CodingKeys>) throws -> Date? {
        guard container.contains(.expiresAt), try !container.decodeNil(forKey: .expiresAt) else { return nil }
        if let date = try? container.decode(Date.self, forKey: .expiresAt) { return date }
        if let seconds = try? container.decode(Double.self, forKey: .expiresAt) {
            return Date(timeIntervalSinceReferenceDate: seconds)
        }
        let text = try container.decode(String.self, forKey: .expiresAt)
        guard let date = try? Date(text, strategy: .iso8601) else {
            throw DecodingError.dataCorruptedError(
                forKey: .expiresAt, in: container, debugDescription: "expiresAt is not a date")
        }
        return date
    }
}

extension AuthToken {
    /// The `userInfo` key of an encoder that asks ``encode(to:)`` for Lume's old shape when its value is `true`.
    /// Public as `AuthToken.lumeShapeKey` in TokenKitCompatibility.
    package static let lumeShapeUserInfoKey = CodingUserInfoKey(rawValue: "TokenKit.AuthToken.lumeShape")!
}
