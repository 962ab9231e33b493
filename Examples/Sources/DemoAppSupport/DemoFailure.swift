import TokenKit

/// A failed step of a demo, with the one line the user sees.
public struct DemoFailure: Error, CustomStringConvertible {
    /// The message.
    public let description: String

    /// Creates a failure.
    ///
    /// - Parameter message: One line, without token text.
    public init(_ message: String) {
        self.description = message
    }

    /// One line for any error a demo can meet; never a stack trace, never token text (TokenKit's error
    /// descriptions carry none).
    ///
    /// - Parameter error: The error.
    /// - Returns: The message.
    public static func describe(_ error: any Error) -> String {
        let text: String
        switch error {
        case let failure as DemoFailure:
            text = failure.description
        case let error as TokenRefreshError:
            text = describe(error)
        case let error as NetworkRetryError:
            text = describe(error)
        case let error as PersistenceError:
            text = "the session store cannot be used: \(error)"
        default:
            text = String(describing: error)
        }
        return text.split(whereSeparator: \.isNewline).joined(separator: " ")
    }

    /// Tells apart what the user can fix differently: a wrong host name, nothing listening, no answer, and an
    /// `https` URL to a plain `http` server.
    private static func describe(_ error: NetworkRetryError) -> String {
        switch error.reason {
        case .cannotResolveHost?:
            return "the host name does not resolve (DNS lookup failed); check the URL"
        case .connectionRefused?:
            return "connection refused: nothing listens at that address and port"
        case .notConnectedToInternet?:
            return "this machine is offline"
        case .connectionLost?:
            return "the connection was lost before the answer arrived"
        case .tlsFailure?:
            return "the TLS handshake failed; is it an https URL to a plain http server?"
        default:
            break
        }
        if error == .timedOut { return "no answer in time (timed out): the server accepted but did not reply" }
        if error == .cannotConnect { return "cannot connect to the server" }
        return "\(error)"
    }

    private static func describe(_ error: TokenRefreshError) -> String {
        let status = error.status.map { " (HTTP \($0))" } ?? ""
        switch error {
        case .signInRejected:
            // A sign-up or sign-in the server refused with a known answer ("Username already exists") says that;
            // only a bare refusal reads as wrong credentials.
            if let answer = error.underlying as? AuthServerError {
                return "refused by the server: \(answer.message.text(in: .english))\(status)"
            }
            return "sign-in refused: wrong e-mail or password\(status)"
        case .malformedResponse, .unexpectedResponse:
            return "the server's answer is not the JSON a token endpoint sends\(status); is it an HTML page?"
        case .configuration:
            return "the server refused the app itself (API key or client ID)\(status): \(error)"
        case .refreshTokenRejected:
            return "the server rejected the refresh token; the session is over, sign in again"
        case .storageUnavailable:
            return "the stored session cannot be read: \(error.underlying.map { describe($0) } ?? "\(error)")"
        default:
            if let underlying = error.underlying { return describe(underlying) }
            return error.isConnectivityFailure ? "cannot connect to the server: \(error)" : "\(error)"
        }
    }
}
