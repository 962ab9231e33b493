import Foundation

extension AuthToken {
    private enum CodingKeys: String, CodingKey {
        case accessToken, refreshToken, tokenType, scope, receivedAt, lifetime, expirationClaim
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
                accessToken: accessToken, refreshToken: refreshToken,
                expiresAt: try Self.lumeExpiry(in: container), receivedAt: AuthToken.systemNow())
            return
        }
        self.init(
            accessToken: accessToken,
            refreshToken: refreshToken,
            tokenType: try container.decodeIfPresent(String.self, forKey: .tokenType) ?? "Bearer",
            scope: try container.decodeIfPresent(String.self, forKey: .scope),
            receivedAt: try container.decode(Date.self, forKey: .receivedAt),
            lifetime: try container.decodeIfPresent(TimeInterval.self, forKey: .lifetime),
            expirationClaim: try container.decodeIfPresent(Date.self, forKey: .expirationClaim))
    }

    /// Encodes TokenKit's own format (every stored property; optional ones only when present).
    ///
    /// - Parameter encoder: The encoder.
    /// - Throws: What the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(accessToken, forKey: .accessToken)
        try container.encodeIfPresent(refreshToken, forKey: .refreshToken)
        try container.encode(tokenType, forKey: .tokenType)
        try container.encodeIfPresent(scope, forKey: .scope)
        try container.encode(receivedAt, forKey: .receivedAt)
        try container.encodeIfPresent(lifetime, forKey: .lifetime)
        try container.encodeIfPresent(expirationClaim, forKey: .expirationClaim)
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
