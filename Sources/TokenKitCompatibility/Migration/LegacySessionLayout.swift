import AuthToken
import Foundation

/// How an older app version laid out its session in a ``LegacyKeyValueSource``: which keys it used and how
/// to turn their values into a token.
///
/// Three layouts are built in: ``fitIQ(accessTokenKey:refreshTokenKey:userProfileIDKey:)``,
/// ``lume(tokenKey:userIDKey:)``, and ``idAlias(sessionKey:)``, whose sessions cannot move over and are cleared.
public struct LegacySessionLayout: Sendable {
    /// What a layout found in its keys.
    enum Reading {
        /// No usable session (for example no access token); the keys are left alone.
        case nothing
        case session(AuthToken, userID: String?)
        /// The values are there but cannot be read; they are kept.
        case unreadable(String)
        /// A session of a sign-in method the app no longer supports: it is removed and the user must sign in
        /// again.
        case retired
    }

    /// A name for logs, such as `FitIQ`.
    public let name: String
    /// Every key the layout uses; all of them are removed after a migration.
    public let keys: [String]
    let read: @Sendable (_ values: [String: Data], _ now: Date) -> Reading

    /// The FitIQ layout: the access token, the refresh token and the user profile ID under separate keys, as
    /// strings. The expiry is parsed from the access token's JWT claims: when the strings were received is
    /// unknown, so it is the raw `exp` against the clock, and an `exp` in the past is expired.
    ///
    /// - Parameters:
    ///   - accessTokenKey: The key of the access token.
    ///   - refreshTokenKey: The key of the refresh token.
    ///   - userProfileIDKey: The key of the user profile ID.
    /// - Returns: The layout.
    public static func fitIQ(
        accessTokenKey: String = "accessToken",
        refreshTokenKey: String = "refreshToken",
        userProfileIDKey: String = "userProfileID"
    ) -> LegacySessionLayout {
        LegacySessionLayout(name: "FitIQ", keys: [accessTokenKey, refreshTokenKey, userProfileIDKey]) { values, now in
            func string(_ key: String) -> String? {
                values[key].map { String(decoding: $0, as: UTF8.self) }.flatMap { $0.isEmpty ? nil : $0 }
            }
            guard let accessToken = string(accessTokenKey) else { return .nothing }
            let token = AuthToken.withParsedExpiration(
                accessToken: accessToken, refreshToken: string(refreshTokenKey), restoredAt: now)
            return .session(token, userID: string(userProfileIDKey))
        }
    }

    /// The Lume layout: one key holding a JSON-encoded token `{accessToken, refreshToken, expiresAt}`.
    ///
    /// `expiresAt` may be a number (seconds since 2001-01-01, what `JSONEncoder` writes for a `Date` by
    /// default) or an ISO 8601 string; it becomes the token's absolute expiry.
    ///
    /// - Parameters:
    ///   - tokenKey: The key of the encoded token.
    ///   - userIDKey: The key of a user ID stored beside it, if the app kept one.
    /// - Returns: The layout.
    public static func lume(tokenKey: String = "authToken", userIDKey: String? = nil) -> LegacySessionLayout {
        let keys = [tokenKey] + (userIDKey.map { [$0] } ?? [])
        return LegacySessionLayout(name: "Lume", keys: keys) { values, now in
            guard let data = values[tokenKey] else { return .nothing }
            guard let legacy = try? JSONDecoder().decode(LumeToken.self, from: data) else {
                return .unreadable("the Lume token is not readable JSON of the expected shape")
            }
            guard !legacy.accessToken.isEmpty else { return .nothing }
            let token = AuthToken(
                accessToken: legacy.accessToken, refreshToken: legacy.refreshToken, receivedAt: now,
                expirationClaim: legacy.expiresAt)
            let userID = userIDKey.flatMap { values[$0] }.map { String(decoding: $0, as: UTF8.self) }
            return .session(token, userID: userID)
        }
    }

    /// The `idAlias` session an app kept before it moved to BetterAuth: a string under `sessionKey` that does not
    /// contain `auth_user` (the new format's marker). It cannot become a session (there is no credential to
    /// carry over), so the migrator removes it and answers ``SessionMigrator/Outcome/signInRequired``: the app
    /// shows its "sign in again" message once. A value with `auth_user` is the new format and is left alone.
    ///
    /// - Parameter sessionKey: The key of the old session; `auth_session` by default.
    /// - Returns: The layout.
    public static func idAlias(sessionKey: String = "auth_session") -> LegacySessionLayout {
        LegacySessionLayout(name: "idAlias", keys: [sessionKey]) { values, _ in
            guard let data = values[sessionKey], !data.isEmpty else { return .nothing }
            let text = String(decoding: data, as: UTF8.self)
            return text.contains("auth_user") ? .nothing : .retired
        }
    }

    /// The token as the Lume app encoded it.
    private struct LumeToken: Decodable {
        let accessToken: String
        let refreshToken: String?
        let expiresAt: Date?

        private enum CodingKeys: String, CodingKey { case accessToken, refreshToken, expiresAt }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            accessToken = try container.decode(String.self, forKey: .accessToken)
            refreshToken = try container.decodeIfPresent(String.self, forKey: .refreshToken)
            if let seconds = try? container.decodeIfPresent(Double.self, forKey: .expiresAt) {
                expiresAt = Date(timeIntervalSinceReferenceDate: seconds)
            } else if let text = try container.decodeIfPresent(String.self, forKey: .expiresAt) {
                guard let date = try? Date(text, strategy: .iso8601) else {
                    throw DecodingError.dataCorruptedError(
                        forKey: .expiresAt, in: container, debugDescription: "not an ISO 8601 date")
                }
                expiresAt = date
            } else {
                expiresAt = nil
            }
        }
    }
}
