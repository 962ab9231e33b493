import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension NetworkRetryError {
    /// Why a connection-level failure happened, finer than the error's kind: ``NetworkRetryError/cannotConnect``
    /// covers a host name that does not resolve and a port where nothing listens, and
    /// ``NetworkRetryError/transport`` covers a TLS handshake that failed.
    ///
    /// It does not take part in `==`, so `error == .cannotConnect` holds for every reason. Compare with the
    /// static members: `error.reason == .cannotResolveHost`. The set may grow.
    public struct Reason: Sendable, Hashable, CustomStringConvertible {
        private let name: String

        private init(_ name: String) {
            self.name = name
        }

        /// The host name did not resolve (DNS); with ``NetworkRetryError/cannotConnect``.
        public static let cannotResolveHost = Reason("cannotResolveHost")
        /// The host was reached but nothing accepted the connection on that port, or there is no route to it;
        /// with ``NetworkRetryError/cannotConnect``.
        public static let connectionRefused = Reason("connectionRefused")
        /// The device is offline; with ``NetworkRetryError/cannotConnect``.
        public static let notConnectedToInternet = Reason("notConnectedToInternet")
        /// The connection was lost before the answer arrived; with ``NetworkRetryError/cannotConnect``.
        public static let connectionLost = Reason("connectionLost")
        /// The TLS handshake failed: for example an `https` URL to a server that speaks plain `http`, or a
        /// certificate that is not trusted; with ``NetworkRetryError/transport``.
        public static let tlsFailure = Reason("tlsFailure")

        /// The reason's name, such as `cannotResolveHost`.
        public var description: String { name }

        /// The reason for an error URLSession reported, if it is one of these.
        ///
        /// FoundationNetworking on Linux reports a failed TLS handshake as `URLError.unknown` whose description
        /// is OpenSSL's message (for example "SSL routines::wrong version number"), so that case is told apart
        /// by the message; Apple platforms use the `secureConnectionFailed` and certificate codes.
        static func of(_ error: URLError) -> Reason? {
            switch error.code {
            case .cannotFindHost, .dnsLookupFailed: return .cannotResolveHost
            case .cannotConnectToHost: return .connectionRefused
            case .notConnectedToInternet: return .notConnectedToInternet
            case .networkConnectionLost: return .connectionLost
            case .secureConnectionFailed, .serverCertificateHasBadDate, .serverCertificateUntrusted,
                .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid, .clientCertificateRejected,
                .clientCertificateRequired:
                return .tlsFailure
            case .unknown:
                let message = error.localizedDescription
                return ["SSL", "TLS"].contains { message.contains($0) } ? .tlsFailure : nil
            default: return nil
            }
        }
    }

    /// Why the connection failed, when the transport told: set for errors ``URLSessionTransport`` maps from a
    /// `URLError` (the cause in ``underlying``); `nil` for other errors and other transports.
    public var reason: Reason? {
        (underlying as? URLError).flatMap(Reason.of)
    }
}
