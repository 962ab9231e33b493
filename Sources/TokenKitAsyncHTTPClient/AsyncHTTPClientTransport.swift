// Compiled only with the `AsyncHTTPClientTransport` package trait.
#if AsyncHTTPClientTransport
public import AsyncHTTPClient
public import Foundation
public import HTTPTypes
public import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
public import NetworkRetry

/// An ``/NetworkRetry/HTTPTransport`` over AsyncHTTPClient.
///
/// ```swift
/// let http = HTTPClient(eventLoopGroupProvider: .singleton,
///                       configuration: .init(redirectConfiguration: .disallow))
/// let client = AuthenticatedClient(
///     transport: AsyncHTTPClientTransport(client: http), tokenProvider: refreshClient,
///     configuration: .init(allowedOrigins: [HTTPOrigin(string: "https://api.example.com")!]))
/// // ... and `try await http.shutdown()` when done.
/// ```
///
/// Made with ``init(timeout:maximumResponseBodySize:logger:)``, it sends over a client of its own that follows no
/// redirect; a client you pass must be configured with `redirectConfiguration: .disallow`, and you shut it down. Over a
/// client that follows redirects (or whose configuration it cannot read) it sends nothing: every request throws
/// ``/NetworkRetry/NetworkRetryError/clientFollowsRedirects``. Errors
/// become ``/NetworkRetry/NetworkRetryError`` cases, the cause kept in `underlying`. Why, and the mapping:
/// <doc:RedirectsAndErrorsOverAsyncHTTPClient>.
public struct AsyncHTTPClientTransport: HTTPTransport {
    /// The client requests go through.
    public let client: HTTPClient
    /// The deadline for each request, from sending to the last body byte.
    public var timeout: Duration
    /// The largest response body that is buffered; a larger one fails with `bodyTooLarge`.
    public var maximumResponseBodySize: Int
    /// The logger AsyncHTTPClient logs each request to; `nil` (the default) turns its request logging off.
    /// At trace level AsyncHTTPClient logs the response heads and the first bytes of bodies (hex-encoded), so
    /// keep it above trace outside tests.
    public var logger: Logger?
    /// Whether `client` follows redirects by itself; such a client is refused (nothing is sent).
    public let clientFollowsRedirects: Bool

    /// Creates a transport over a client of its own, one for the process, that follows no redirect.
    ///
    /// - Parameters:
    ///   - timeout: The deadline per request; defaults to 60 seconds.
    ///   - maximumResponseBodySize: The response body limit; defaults to 16 MiB.
    ///   - logger: Where AsyncHTTPClient logs each request; `nil` (the default) for nowhere.
    public init(timeout: Duration = .seconds(60), maximumResponseBodySize: Int = 16 << 20, logger: Logger? = nil) {
        self.init(
            client: NonRedirectingHTTPClient.shared, timeout: timeout, maximumResponseBodySize: maximumResponseBodySize,
            logger: logger)
    }

    /// Creates a transport over `client`.
    ///
    /// - Parameters:
    ///   - client: The client, configured with `redirectConfiguration: .disallow` (see the type's discussion).
    ///   - timeout: The deadline per request; defaults to 60 seconds.
    ///   - maximumResponseBodySize: The response body limit; defaults to 16 MiB.
    ///   - logger: Where AsyncHTTPClient logs each request; `nil` (the default) for nowhere.
    public init(
        client: HTTPClient, timeout: Duration = .seconds(60), maximumResponseBodySize: Int = 16 << 20,
        logger: Logger? = nil
    ) {
        self.client = client
        clientFollowsRedirects = Self.followsRedirects(client)
        self.timeout = timeout
        self.maximumResponseBodySize = maximumResponseBodySize
        self.logger = logger
    }

    /// Sends `request` and buffers the response body.
    ///
    /// - Parameters:
    ///   - request: The request, with an absolute `http` or `https` URL.
    ///   - body: The request body, if any.
    /// - Returns: The response head and its body.
    /// - Throws: ``/NetworkRetry/NetworkRetryError`` or `CancellationError`;
    ///   ``/NetworkRetry/NetworkRetryError/clientFollowsRedirects`` over a client that follows redirects.
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        guard !clientFollowsRedirects else { throw NetworkRetryError.clientFollowsRedirects }
        // Built with URLComponents and checked against the request's origin, never pasted together as text: a path
        // such as "@evil.example/x" would otherwise become the user info of a URL to another host.
        guard let origin = HTTPOrigin(request),
            let url = origin.requestURL(target: request.path ?? "/", method: request.method.rawValue)
        else { throw NetworkRetryError.invalidRequest }
        var outgoing = HTTPClientRequest(url: url.absoluteString)
        outgoing.method = HTTPMethod(rawValue: request.method.rawValue)
        for field in request.headerFields {
            outgoing.headers.add(name: field.name.rawName, value: field.value)
        }
        if let body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }

        do {
            let seconds = timeout.components.seconds
            let response = try await client.execute(
                outgoing, timeout: .seconds(seconds > 0 ? seconds : 1), logger: logger)
            var fields = HTTPFields()
            for header in response.headers {
                guard let name = HTTPField.Name(header.name) else { continue }
                fields.append(HTTPField(name: name, value: header.value))
            }
            let head = HTTPResponse(status: .init(code: Int(response.status.code)), headerFields: fields)
            if let declared = response.headers.first(name: "content-length").flatMap({ Int($0) }),
                declared > maximumResponseBodySize
            {
                throw NetworkRetryError.bodyTooLarge
            }
            var buffer = ByteBuffer()
            for try await chunk in response.body {
                guard buffer.readableBytes + chunk.readableBytes <= maximumResponseBodySize else {
                    throw NetworkRetryError.bodyTooLarge
                }
                var chunk = chunk
                buffer.writeBuffer(&chunk)
            }
            return (head, Data(buffer.readableBytesView))
        } catch {
            throw Self.mapped(error)
        }
    }

    /// Whether `client` follows redirects: its `redirectConfiguration` is anything but `.disallow`.
    ///
    /// AsyncHTTPClient keeps a client's configuration internal, so it is read by reflection; a client whose
    /// configuration cannot be read that way counts as following redirects, and is refused.
    static func followsRedirects(_ client: HTTPClient) -> Bool {
        guard let mode = Mirror(reflecting: client).descendant("configuration", "redirectConfiguration", "mode")
        else { return true }
        return String(describing: mode) != "disallow"
    }

    /// Maps an error of AsyncHTTPClient or NIO to the error ``send(_:body:)`` throws.
    ///
    /// AsyncHTTPClient keeps retrying a connection that fails until the request's deadline, then throws the
    /// last connection error: that becomes ``/NetworkRetry/NetworkRetryError/cannotConnect``.
    ///
    /// - Parameter error: What the client threw.
    /// - Returns: A ``/NetworkRetry/NetworkRetryError``, or `CancellationError`.
    static func mapped(_ error: any Error) -> any Error {
        switch error {
        case let error as NetworkRetryError:
            return error
        case let error as CancellationError:
            return error
        case let error as HTTPClientError:
            switch error {
            case .deadlineExceeded, .readTimeout, .connectTimeout, .writeTimeout:
                return NetworkRetryError.timedOut.with(underlying: error)
            case .cancelled:
                return CancellationError()
            default:
                return NetworkRetryError.transport(error)
            }
        case let error as NIOConnectionError:
            return NetworkRetryError.cannotConnect.with(underlying: error)
        case let error as IOError:
            return NetworkRetryError.cannotConnect.with(underlying: error)
        default:
            return NetworkRetryError.transport(error)
        }
    }
}
#endif
