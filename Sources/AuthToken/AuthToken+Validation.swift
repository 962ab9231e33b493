public import Foundation

extension AuthToken {
    /// Checks the token and returns every problem found, or an empty list.
    ///
    /// Problems: an empty access token; a malformed JWT (naming the part); a JWT `exp`, `iat` or `nbf` of
    /// the wrong type; no expiry at all (``AuthTokenError/missingExpiration`` for a JWT,
    /// ``AuthTokenError/expirationUnknown`` for an opaque token); expired; `nbf` or `iat` in the future
    /// beyond the leeway; an empty refresh token, or a missing one when `requireRefreshToken` is set.
    ///
    /// - Parameters:
    ///   - now: The current wall-clock time; defaults to ``systemNow``.
    ///   - policy: The margins to apply.
    ///   - requireRefreshToken: Whether a missing refresh token is a problem.
    /// - Returns: The problems, in a stable order.
    public func validate(
        now: Date = AuthToken.systemNow(), policy: ExpiryPolicy = .default, requireRefreshToken: Bool = false
    ) -> [AuthTokenError] {
        var problems: [AuthTokenError] = []
        if accessToken.isEmpty {
            problems.append(.emptyAccessToken)
        } else if looksLikeJWT {
            do {
                let claims = try JWT(parsing: accessToken).claims
                let leeway = policy.leeway
                for name in ["exp", "iat", "nbf"] {
                    do { _ = try claims.date(name) } catch { problems.append(error) }
                }
                if claims["exp"] == nil, lifetime == nil { problems.append(.missingExpiration) }
                if let notBefore = claims.notBefore, notBefore.timeIntervalSince(now) > leeway {
                    problems.append(.notYetValid)
                }
                if let issuedAt = claims.issuedAt, issuedAt.timeIntervalSince(now) > leeway {
                    problems.append(.issuedInFuture)
                }
            } catch {
                problems.append(error)
            }
        } else if expiresAt == nil {
            problems.append(.expirationUnknown)
        }
        if isExpired(at: now, policy: policy) { problems.append(.expired) }
        switch refreshToken {
        case .some(let value) where value.isEmpty: problems.append(.emptyRefreshToken)
        case .none where requireRefreshToken: problems.append(.missingRefreshToken)
        default: break
        }
        return problems
    }
}
