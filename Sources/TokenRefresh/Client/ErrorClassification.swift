import Foundation
import NetworkRetry
import Persistence

/// What any error a strategy, a store or the system throws means to the session: the classification the client's
/// machine works with. Pure functions of the error; no state.
enum ErrorClassification {
    /// Turns any error into a ``TokenRefreshError``: cancellation stays cancellation, unknown errors are
    /// transient.
    static func classify(_ error: any Error) -> TokenRefreshError {
        if let error = error as? TokenRefreshError { return error }
        if error is CancellationError { return .cancelled }
        if let error = error as? PersistenceError {
            return TokenRefreshError.storageUnavailable.with(underlying: error)
        }
        return TokenRefreshError.transient.with(underlying: error)
            .with(connectivityFailure: isConnectivityFailure(error))
    }

    /// Whether `error`, thrown by any strategy, says the device could not reach the server: then the
    /// client counts as offline (``TokenRefreshClient/isOfflineNow``), whichever strategy failed.
    static func isConnectivityFailure(_ error: any Error) -> Bool {
        if let error = error as? NetworkRetryError {
            if error == .cannotConnect || error == .timedOut { return true }
            return error.underlying.map(isConnectivityFailure) ?? false
        }
        if let error = error as? URLError {
            switch error.code {
            case .notConnectedToInternet, .networkConnectionLost, .cannotConnectToHost, .cannotFindHost,
                .dnsLookupFailed, .timedOut, .internationalRoamingOff, .dataNotAllowed, .callIsActive:
                return true
            default:
                return false
            }
        }
        if let error = error as? POSIXError {
            switch error.code {
            case .ECONNREFUSED, .ECONNRESET, .ECONNABORTED, .ENETDOWN, .ENETUNREACH, .EHOSTUNREACH, .ETIMEDOUT:
                return true
            default:
                return false
            }
        }
        return false
    }
}
