// Compiled only with the `HummingbirdMiddleware` package trait.
#if HummingbirdMiddleware
public import HTTPTypes
public import Hummingbird
import NIOCore
public import TokenVerification

/// The error ``TokenVerificationMiddleware`` throws for a request it does not let through; Hummingbird turns it
/// into the diet-app backend's answer: 401 with `{"error": "Missing authorization header"}` or
/// `{"error": "Invalid token"}` and RFC 6750's `WWW-Authenticate`, or 503 when no key set is usable.
///
/// It is thrown rather than returned so that error-handling middleware (logging, metrics) sees the failure.
/// Its description carries the safe reason only, never token text.
public struct BearerRejection: HTTPResponseError, CustomStringConvertible {
    /// The answer ``/TokenVerification/BearerAuthenticator`` chose.
    public let rejection: BearerAuthenticator.Rejection

    /// Wraps an authenticator's answer.
    ///
    /// - Parameter rejection: The answer.
    public init(_ rejection: BearerAuthenticator.Rejection) {
        self.rejection = rejection
    }

    /// 401, or 503 when the key set is unavailable.
    public var status: HTTPResponse.Status { .init(code: rejection.status) }

    /// Why, safe to log: for example `BearerRejection(401, expired)`.
    public var description: String { "BearerRejection(\(rejection.status), \(rejection.error.reason))" }

    /// The JSON body with `Content-Type` and, for a 401, `WWW-Authenticate`.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - context: Its context.
    /// - Returns: The response.
    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = HTTPFields()
        for header in rejection.headers {
            if let name = HTTPField.Name(header.name) { headers.append(HTTPField(name: name, value: header.value)) }
        }
        headers[.contentLength] = String(rejection.body.utf8.count)
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: rejection.body)))
    }
}
#endif
