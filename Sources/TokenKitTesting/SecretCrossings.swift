package import Foundation
package import HTTPTypes

/// What crosses the mock kit and may hold a secret, handed to one observer: the log check of
/// `TokenKitLogCheck` installs it (when its trait is first made) and registers each secret it finds, so it
/// knows what to search the run's log lines for.
///
/// Package-level on purpose: the mock kit gets no logging dependency and no public surface for this, and
/// without an observer a report costs one lock and does nothing.
package enum SecretCrossings {
    /// What a secret is, in the log check's terms. A user ID is no credential, but it names a person (often by
    /// e-mail address), so no log line may carry it either.
    package enum Kind: Sendable {
        case accessToken, refreshToken, idToken, clientSecret, password, credential, userID
    }

    /// One thing that crossed a mock.
    package enum Crossing: Sendable {
        /// A request a mock received: the credentials in its headers, query and body.
        case request(HTTPRequest, body: Data?)
        /// One header field of a request.
        case header(name: String, value: String)
        /// A request body or query string (JSON or form-encoded): its secret fields.
        case requestBody(Data)
        /// A response body a mock answered: the tokens in it.
        case responseBody(Data)
        /// A secret a mock made or was configured with.
        case secret(String, Kind)
    }

    /// Receives each crossing and where it happened (such as `MockTransport request`).
    package typealias Observer = @Sendable (_ crossing: Crossing, _ origin: String) -> Void

    private static let observer = Locked<Observer?>(nil)

    /// Installs the observer, replacing any earlier one.
    ///
    /// - Parameter observer: Called for every crossing from now on, on the mock's thread.
    package static func observe(_ observer: @escaping Observer) {
        self.observer.withLock { $0 = observer }
    }

    /// Reports a crossing to the observer, if one is installed.
    ///
    /// - Parameters:
    ///   - crossing: What crossed.
    ///   - origin: Where.
    package static func report(_ crossing: Crossing, origin: String) {
        guard let observer = observer.withLock({ $0 }) else { return }
        observer(crossing, origin)
    }
}
