public import Foundation
public import HTTPTypes

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An HTTP origin: scheme, host and port (RFC 6454). Tokens are attached only to configured origins.
///
/// Scheme and host are compared in lowercase; the port defaults to 80 for `http` and 443 for `https`, so
/// `https://API.example.com` and `https://api.example.com:443` are the same origin.
public struct HTTPOrigin: Sendable, Hashable, CustomStringConvertible {
    /// `http` or `https`.
    public let scheme: String
    /// The host in lowercase; an IPv6 literal keeps its brackets (`[::1]`).
    public let host: String
    /// The port, explicit or the scheme's default.
    public let port: Int

    /// Creates an origin from its parts; `nil` unless the scheme is `http` or `https`, the host is not empty,
    /// and the port is in 1...65535.
    ///
    /// - Parameters:
    ///   - scheme: `http` or `https`, in any case.
    ///   - host: The host name or IP literal (IPv6 with or without brackets).
    ///   - port: The port; `nil` for the scheme's default.
    public init?(scheme: String, host: String, port: Int? = nil) {
        let scheme = scheme.lowercased()
        let defaultPort: Int
        switch scheme {
        case "http": defaultPort = 80
        case "https": defaultPort = 443
        default: return nil
        }
        var host = host.lowercased()
        if host.contains(":") && !host.hasPrefix("[") { host = "[\(host)]" }
        let port = port ?? defaultPort
        guard !host.isEmpty, (1...65_535).contains(port) else { return nil }
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    /// Reads the origin of a scheme and an authority (`host`, `host:port`, `[v6]:port`).
    ///
    /// - Parameters:
    ///   - scheme: The URL scheme.
    ///   - authority: The authority; one with user info (`user@host`) is refused.
    public init?(scheme: String, authority: String) {
        guard !authority.contains("@") else { return nil }
        var host = Substring(authority)
        var port: Int?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[...close]
            let rest = authority[authority.index(after: close)...]
            if !rest.isEmpty {
                guard rest.first == ":" else { return nil }
                guard let parsed = Self.port(rest.dropFirst()) else { return nil }
                port = parsed
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            guard !host.contains(":") else { return nil }
            guard let parsed = Self.port(authority[authority.index(after: colon)...]) else { return nil }
            port = parsed
        }
        self.init(scheme: scheme, host: String(host), port: port)
    }

    /// Reads the origin of a request's scheme and authority; `nil` if either is missing or unusable.
    ///
    /// - Parameter request: A request with an absolute URL.
    public init?(_ request: HTTPRequest) {
        guard let scheme = request.scheme, let authority = request.authority else { return nil }
        self.init(scheme: scheme, authority: authority)
    }

    /// Reads the origin of an absolute URL (`https://api.example.com/v1`).
    ///
    /// - Parameter url: An absolute `http` or `https` URL.
    public init?(_ url: URL) {
        guard let components = URLComponents(url: url, resolvingAgainstBaseURL: true),
            components.user == nil, components.password == nil,
            let scheme = components.scheme, let host = components.host
        else { return nil }
        self.init(scheme: scheme, host: host, port: components.port)
    }

    /// Reads the origin of an absolute URL string.
    ///
    /// - Parameter string: An absolute `http` or `https` URL such as `https://api.example.com`.
    public init?(string: String) {
        guard let url = URL(string: string) else { return nil }
        self.init(url)
    }

    /// Whether the scheme is `https`.
    public var isSecure: Bool { scheme == "https" }

    /// Whether the host is loopback: `localhost`, an address in 127.0.0.0/8, `::1`, or an IPv4-mapped
    /// loopback address. Names other than `localhost` are not resolved, so they never count.
    public var isLoopback: Bool {
        if host == "localhost" { return true }
        if host.hasPrefix("[") {
            var address = in6_addr()
            let literal = String(host.dropFirst().dropLast())
            guard inet_pton(AF_INET6, literal, &address) == 1 else { return false }
            let bytes = withUnsafeBytes(of: &address) { Array($0) }
            let mapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
            return (bytes[0..<15].allSatisfy { $0 == 0 } && bytes[15] == 1) || (mapped && bytes[12] == 127)
        }
        var address = in_addr()
        guard inet_pton(AF_INET, host, &address) == 1 else { return false }
        return withUnsafeBytes(of: &address) { $0[0] } == 127
    }

    /// Whether a token may travel to this origin: always over `https`, over `http` only to loopback.
    public var allowsCredentials: Bool { isSecure || isLoopback }

    /// `scheme://host:port`.
    public var description: String { "\(scheme)://\(host):\(port)" }

    private static func port(_ text: Substring) -> Int?? {
        if text.isEmpty { return .some(nil) }
        guard text.count <= 5, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = Int(text) else {
            return nil
        }
        return .some(value)
    }
}
