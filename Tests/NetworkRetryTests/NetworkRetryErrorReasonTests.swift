import Foundation
import HTTPTypes
import NetworkRetry
import Testing
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
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
        let server = try PlainAnswerListener()
        defer { server.close() }
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

/// A loopback listener that answers whatever arrives with `400 Bad Request` and closes, as a plain HTTP server
/// answers a TLS handshake. (`LoopbackServer` waits for a complete HTTP request, which a handshake never is.)
private final class PlainAnswerListener: Sendable {
    let port: Int
    private let descriptor: Int32

    init() throws {
        #if canImport(Glibc)
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        try #require(descriptor >= 0, "socket() failed")
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && listen(descriptor, 16) == 0
                    && getsockname(descriptor, pointer, &length) == 0
            }
        }
        try #require(bound, "cannot listen on 127.0.0.1")
        self.descriptor = descriptor
        self.port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread {
            let reply = Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
            while true {
                let connection = accept(descriptor, nil, nil)
                guard connection >= 0 else { return }
                var buffer = [UInt8](repeating: 0, count: 4096)
                _ = read(connection, &buffer, buffer.count)
                _ = write(connection, reply, reply.count)
                #if canImport(Glibc)
                    _ = Glibc.close(connection)
                #else
                    _ = Darwin.close(connection)
                #endif
            }
        }
    }

    func close() {
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        #if canImport(Glibc)
            _ = Glibc.close(descriptor)
        #else
            _ = Darwin.close(descriptor)
        #endif
    }
}
