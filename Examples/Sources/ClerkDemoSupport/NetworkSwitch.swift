public import Foundation
public import HTTPTypes
import Synchronization
public import TokenKit

/// The device's network: a transport that fails every request with `URLError(.notConnectedToInternet)` while
/// the demo has it switched off (airplane mode), for the SDK and the app's API calls alike.
public final class NetworkSwitch: HTTPTransport {
    private let base: any HTTPTransport
    private let off = Mutex(false)

    /// Wraps a transport.
    ///
    /// - Parameter base: The real transport.
    public init(_ base: any HTTPTransport) { self.base = base }

    /// Whether the network is off.
    public var isOffline: Bool {
        get { off.withLock { $0 } }
        set { off.withLock { $0 = newValue } }
    }

    /// Sends, unless offline.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - body: Its body.
    /// - Returns: The response.
    /// - Throws: `URLError(.notConnectedToInternet)` while offline; what the base transport throws.
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        if isOffline { throw URLError(.notConnectedToInternet) }
        return try await base.send(request, body: body)
    }
}
