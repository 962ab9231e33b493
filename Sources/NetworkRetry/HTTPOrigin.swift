public import Foundation

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
        let scheme = asciiLowercased(scheme)
        let defaultPort: Int
        switch scheme {
        case "http": defaultPort = 80
        case "https": defaultPort = 443
        default: return nil
        }
        var host = asciiLowercased(host)
        if host.utf8.contains(UInt8(ascii: ":")) && host.utf8.first != UInt8(ascii: "[") { host = "[" + host + "]" }
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
    package init?(scheme: String, authority: String) {
        // Byte scans only: this runs for every request, and Foundation's substring search is slow.
        let bytes = authority.utf8
        guard !bytes.contains(UInt8(ascii: "@")) else { return nil }
        var hostEnd = bytes.endIndex
        var port: Int?
        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostEnd = bytes.index(after: close)
            if hostEnd != bytes.endIndex {
                guard bytes[hostEnd] == UInt8(ascii: ":") else { return nil }
                guard let parsed = Self.port(bytes[bytes.index(after: hostEnd)...]) else { return nil }
                port = parsed
            }
        } else if let colon = bytes.lastIndex(of: UInt8(ascii: ":")) {
            guard !bytes[..<colon].contains(UInt8(ascii: ":")),
                let parsed = Self.port(bytes[bytes.index(after: colon)...])
            else { return nil }
            hostEnd = colon
            port = parsed
        }
        self.init(scheme: scheme, host: String(authority[..<hostEnd]), port: port)
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
    package var isSecure: Bool { scheme == "https" }

    /// Whether the host is loopback: `localhost`, an address in 127.0.0.0/8, `::1`, or an IPv4-mapped
    /// loopback address. Names other than `localhost` are not resolved, so they never count.
    package var isLoopback: Bool {
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
    package var allowsCredentials: Bool { isSecure || isLoopback }

    /// `scheme://host:port`.
    public var description: String { "\(scheme)://\(host):\(port)" }

    /// `nil` when not a port; `.some(nil)` when empty (the default port); else the number.
    private static func port(_ digits: Substring.UTF8View) -> Int?? {
        if digits.isEmpty { return .some(nil) }
        guard digits.count <= 5 else { return nil }
        var value = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return .some(value)
    }
}
