public import HTTPTypes

/// What to do with a response to a request that carried (or did not carry) a Bearer token.
///
/// ``AuthenticatedClient`` follows these rules; adapters that cannot use it directly (an OpenAPI middleware)
/// call ``init(response:requestCarriedToken:alreadyRefreshed:)`` to make the same decision.
///
/// | Response | Decision |
/// |---|---|
/// | 401, Bearer `error="insufficient_user_authentication"` | fail: ``NetworkRetryError/insufficientUserAuthentication`` |
/// | 401 or 403, Bearer `error="insufficient_scope"` | fail: ``NetworkRetryError/insufficientScope`` |
/// | 401 to a request without a token | fail: ``NetworkRetryError/unauthorized`` |
/// | 401, Bearer `error="invalid_request"` | fail: ``NetworkRetryError/unauthorized`` |
/// | 401 with challenges, none of them Bearer | fail: ``NetworkRetryError/unauthorized`` |
/// | 401, Bearer `invalid_token`, another code, or no code; or no (parsable) `WWW-Authenticate` | refresh and retry once; after a refresh, fail: ``NetworkRetryError/unauthorizedAfterRefresh`` |
/// | anything else (2xx, 3xx, other 403, 404, 5xx) | deliver |
///
/// A `WWW-Authenticate` line that is not valid syntax is ignored, as if it had not been sent; the other lines
/// still count.
public enum RetryDecision: Sendable, Equatable {
    /// Hand the response to the caller.
    case deliver
    /// Ask the token provider for a new token (passing the rejected one) and send the request again, once.
    case refreshAndRetry
    /// Throw this error; do not retry.
    case fail(NetworkRetryError)

    /// Decides what to do with `response`.
    ///
    /// - Parameters:
    ///   - response: The response head.
    ///   - requestCarriedToken: Whether the request carried `Authorization: Bearer`.
    ///   - alreadyRefreshed: Whether the token was already refreshed for this request.
    public init(response: HTTPResponse, requestCarriedToken: Bool, alreadyRefreshed: Bool) {
        self.init(
            code: response.status.code, response: response, requestCarriedToken: requestCarriedToken,
            alreadyRefreshed: alreadyRefreshed)
    }

    /// The same, with the status code already read (`HTTPResponse.status` parses it on every access).
    init(code: Int, response: HTTPResponse, requestCarriedToken: Bool, alreadyRefreshed: Bool) {
        guard code == 401 || code == 403 else {
            self = .deliver
            return
        }
        var challenges: [AuthenticationChallenge] = []
        for value in response.headerFields[values: .wwwAuthenticate] {
            challenges += AuthenticationChallenge.parse(value) ?? []
        }
        let bearer = BearerChallenge(firstIn: challenges)
        func failure(_ error: NetworkRetryError) -> RetryDecision {
            .fail(error.with(status: code, challenge: bearer))
        }
        switch bearer?.error {
        case .insufficientScope?: self = failure(.insufficientScope)
        case .insufficientUserAuthentication?: self = failure(.insufficientUserAuthentication)
        case _ where code == 403: self = .deliver
        case _ where !requestCarriedToken: self = failure(.unauthorized)
        case .invalidRequest?: self = failure(.unauthorized)
        case _ where bearer == nil && !challenges.isEmpty: self = failure(.unauthorized)
        case _ where alreadyRefreshed: self = failure(.unauthorizedAfterRefresh)
        default: self = .refreshAndRetry
        }
    }
}
