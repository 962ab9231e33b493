import AuthToken
public import Foundation
public import HTTPTypes
public import NetworkRetry

/// A transport that teaches a ``ServerClock`` the server's time from every answer it passes on.
///
/// Wrap the token endpoint's transport in it. Each answer's `Date` header becomes a sample (and the `iat` of a
/// JWT access token in a successful answer a second one, when it agrees); requests and answers pass unchanged,
/// and errors are rethrown as they are.
public struct ServerClockTransport: HTTPTransport {
    /// The transport that sends the requests.
    package let base: any HTTPTransport
    /// The clock that learns from the answers.
    package let clock: ServerClock

    /// Creates a transport that sends through `base` and feeds `clock`.
    ///
    /// - Parameters:
    ///   - base: The transport that sends the requests.
    ///   - clock: The clock that learns from the answers.
    public init(_ base: any HTTPTransport, clock: ServerClock) {
        self.base = base
        self.clock = clock
    }

    /// Sends `request` through the wrapped transport and records the answer's time in the server clock.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - body: Its body.
    /// - Returns: The answer, unchanged.
    /// - Throws: Whatever the wrapped transport throws.
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let (response, data) = try await base.send(request, body: body)
        clock.record(
            offsets: Self.offsets(
                in: response, body: data, arrivedAt: clock.deviceNow(), tolerance: clock.configuration.tolerance))
        return (response, data)
    }

    /// The samples an answer gives: its `Date` (moved to the middle of its second), and the `iat` of its JWT
    /// access token when that agrees with the `Date`. None for an answer from a cache or without a `Date`.
    static func offsets(
        in response: HTTPResponse, body: Data, arrivedAt deviceTime: Date, tolerance: TimeInterval
    ) -> [TimeInterval] {
        guard response.headerFields[.age] == nil, let date = HTTPDate.parse(response.headerFields[.date]) else {
            return []
        }
        let dateOffset = date.addingTimeInterval(0.5).timeIntervalSince(deviceTime)
        guard (200..<300).contains(response.status.code), let issuedAt = issuedAt(in: body) else {
            return [dateOffset]
        }
        let issuedOffset = issuedAt.addingTimeInterval(0.5).timeIntervalSince(deviceTime)
        return abs(issuedOffset - dateOffset) <= tolerance ? [dateOffset, issuedOffset] : [dateOffset]
    }

    /// The `iat` of the JWT access token in a token answer (`access_token` or `accessToken`, at the top or in
    /// `data`), or `nil`.
    private static func issuedAt(in body: Data) -> Date? {
        guard body.count <= 256 * 1024, let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
        else { return nil }
        let container = object["data"] as? [String: Any] ?? object
        guard let token = (container["access_token"] ?? container["accessToken"]) as? String,
            let claims = try? JWT(parsing: token).claims
        else { return nil }
        return claims.issuedAt
    }
}
