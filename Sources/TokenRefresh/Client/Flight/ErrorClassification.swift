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

    /// Whether `error`, thrown by any strategy, says the refresh request never reached a server: the device is
    /// offline, the host name did not resolve, or nothing accepted the connection. The rate breaker does not count
    /// such an attempt. A timeout, a lost connection, any answer, or an error this cannot read may have reached the
    /// server, and counts.
    static func sentNothing(_ error: any Error) -> Bool {
        switch error {
        case let error as TokenRefreshError:
            return error.underlying.map(sentNothing) ?? false
        case let error as NetworkRetryError:
            // A transport's bare "could not connect" says so; with a cause, the cause tells (a lost connection is one).
            guard error == .cannotConnect else { return false }
            return error.underlying.map(sentNothing) ?? true
        case let error as URLError:
            switch error.code {
            case .notConnectedToInternet, .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed,
                .internationalRoamingOff, .dataNotAllowed, .callIsActive:
                return true
            default:
                return false
            }
        case let error as POSIXError:
            switch error.code {
            case .ECONNREFUSED, .ENETDOWN, .ENETUNREACH, .EHOSTUNREACH: return true
            default: return false
            }
        default:
            return false
        }
    }
}
