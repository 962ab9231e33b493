import Foundation
import HTTPTypes
import NetworkRetry
import Testing
import TokenKitTesting
import TokenKitTestingTraits

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `NetworkRetryError.reason` tells connection failures apart without changing what `==` compares.
@Suite(.logLeakCheck()) struct NetworkRetryErrorReasonTests {
    static let reasons: [(URLError.Code, NetworkRetryError.Reason?)] = [
        (.cannotFindHost, .cannotResolveHost),
        (.dnsLookupFailed, .cannotResolveHost),
        (.cannotConnectToHost, .connectionRefused),
        (.notConnectedToInternet, .notConnectedToInternet),
        (.networkConnectionLost, .connectionLost),
        (.secureConnectionFailed, .tlsFailure),
        (.serverCertificateUntrusted, .tlsFailure),
        (.timedOut, nil),
        (.badServerResponse, nil),
    ]

    @Test(arguments: reasons)
    func aURLErrorCodeHasItsReason(code: URLError.Code, reason: NetworkRetryError.Reason?) {
        let error = NetworkRetryError.cannotConnect.with(underlying: URLError(code))
        #expect(error.reason == reason)
        #expect(error == .cannotConnect, "the reason does not take part in ==")
    }

    @Test func linuxsUnknownErrorWithAnOpenSSLMessageIsATLSFailure() {
        let message = "OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version number"
        let tls = URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: message])
        #expect(NetworkRetryError.transport(tls).reason == .tlsFailure)
        let other = URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "something else"])
        #expect(NetworkRetryError.transport(other).reason == nil)
        #expect(NetworkRetryError.cannotConnect.reason == nil, "no underlying error, no reason")
        #expect("\(NetworkRetryError.Reason.tlsFailure)" == "tlsFailure")
    }

    @Test func aHostNameThatDoesNotResolveIsCannotConnectWithCannotResolveHost() async throws {
        let error = try await Self.failure(of: "http://tokenkit-reason-test.invalid/")
        #expect(error == .cannotConnect)
        #expect(error.reason == .cannotResolveHost)
    }

    @Test func aPortWhereNothingListensIsCannotConnectWithConnectionRefused() async throws {
        let port = try LoopbackServer.closedPort()
        let error = try await Self.failure(of: "http://127.0.0.1:\(port)/")
        #expect(error == .cannotConnect)
        #expect(error.reason == .connectionRefused)
    }

    @Test func httpsToAPlainHTTPServerIsATLSFailure() async throws {
        let server = try LoopbackServer { _, _ in .init(status: 200) }
        defer { server.stop() }
        let error = try await Self.failure(of: "https://127.0.0.1:\(server.port)/")
        #expect(error == .transport)
        #expect(error.reason == .tlsFailure)
    }

    /// The `NetworkRetryError` a GET of `url` through `URLSessionTransport` fails with.
    static func failure(of url: String) async throws -> NetworkRetryError {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 20
        let transport = URLSessionTransport(configuration: configuration)
        let parsed = try #require(URL(string: url))
        let authority = try #require(parsed.host).appending(parsed.port.map { ":\($0)" } ?? "")
        let request = HTTPRequest(method: .get, scheme: parsed.scheme, authority: authority, path: "/")
        do {
            _ = try await transport.send(request, body: nil)
        } catch let error as NetworkRetryError {
            return error
        }
        Issue.record("\(url) answered")
        return .invalidResponse
    }
}
