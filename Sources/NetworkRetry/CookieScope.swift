import Foundation
package import HTTPTypes

/// Where a cookie may be sent, as RFC 6265 section 5.4 says: requests whose host domain-matches its domain,
/// whose path path-matches its path, and, for a `Secure` cookie, that go over https (or to loopback).
///
/// ```swift
/// let scope = CookieScope(try SetCookie(parsing: field, requestHost: "api.example.com", requestIsSecure: true, now: now))
/// if scope.matches(request) { ... }
/// ```
package struct CookieScope: Sendable, Hashable, CustomStringConvertible {
    /// The domain, in lowercase.
    package let domain: String
    /// Whether subdomains of ``domain`` match too (the cookie had a `Domain` attribute).
    package let includesSubdomains: Bool
    /// The path; requests to it and below it match.
    package let path: String
    /// Whether only https (or loopback) requests match.
    package let isSecure: Bool

    /// A scope from its parts.
    ///
    /// - Parameters:
    ///   - domain: The domain (a host name or IP literal).
    ///   - includesSubdomains: Whether subdomains match too.
    ///   - path: The path; `/` for the whole host.
    ///   - isSecure: Whether only https (or loopback) requests match.
    package init(domain: String, includesSubdomains: Bool = false, path: String = "/", isSecure: Bool) {
        var domain = domain.lowercased()
        if domain.hasPrefix("[") && domain.hasSuffix("]") { domain = String(domain.dropFirst().dropLast()) }
        self.domain = domain
        self.includesSubdomains = includesSubdomains
        self.path = path.hasPrefix("/") ? path : "/"
        self.isSecure = isSecure
    }

    /// The scope a parsed `Set-Cookie` gave itself.
    ///
    /// - Parameter cookie: The cookie.
    package init(_ cookie: SetCookie) {
        self.init(
            domain: cookie.domain, includesSubdomains: cookie.includesSubdomains, path: cookie.path,
            isSecure: cookie.isSecure)
    }

    /// Whether a request to `request`'s scheme, authority and path may carry the cookie.
    ///
    /// - Parameter request: A request with an absolute URL.
    /// - Returns: `true` when the host domain-matches, the path path-matches and, for a secure cookie, the
    ///   request goes over https or to loopback.
    package func matches(_ request: HTTPRequest) -> Bool {
        guard let origin = HTTPOrigin(request) else { return false }
        var host = origin.host
        if host.hasPrefix("[") { host = String(host.dropFirst().dropLast()) }
        let hostMatches =
            host == domain
            || (includesSubdomains && host.hasSuffix("." + domain) && !Self.isIPAddress(host))
        guard hostMatches else { return false }
        if isSecure && !origin.isSecure && !origin.isLoopback { return false }
        var requestPath = Substring(request.path ?? "/")
        if let query = requestPath.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            requestPath = requestPath[..<query]
        }
        if requestPath.isEmpty || !requestPath.hasPrefix("/") { requestPath = "/" }
        // RFC 6265 section 5.1.4.
        if requestPath == path { return true }
        guard requestPath.hasPrefix(path) else { return false }
        return path.hasSuffix("/") || requestPath.dropFirst(path.count).first == "/"
    }

    /// `domain[+subdomains] path [Secure]`.
    package var description: String {
        "CookieScope(\(domain)\(includesSubdomains ? " and subdomains" : ""), path: \(path)\(isSecure ? ", Secure" : ""))"
    }

    /// Whether `host` is an IPv4 or IPv6 literal (without brackets).
    static func isIPAddress(_ host: String) -> Bool {
        if host.contains(":") { return true }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        return labels.count == 4 && labels.allSatisfy { !$0.isEmpty && $0.count <= 3 && $0.allSatisfy(\.isNumber) }
    }
}

/// The scope of a session cookie as last captured, shared between the strategy that captures the cookie and the
/// ``CredentialPresentation`` that presents it. Starts with a default (for a cookie restored from storage, whose
/// attributes were not stored) and follows every `Set-Cookie` captured since. `@unchecked Sendable`: `scope` is
/// only touched while holding `lock`.
package final class SessionCookieScope: @unchecked Sendable, CustomStringConvertible {
    private let lock = NSLock()
    private var scope: CookieScope

    /// A holder starting with `initial`.
    ///
    /// - Parameter initial: The scope until a cookie is captured.
    package init(_ initial: CookieScope) {
        scope = initial
    }

    /// The scope now.
    package var current: CookieScope {
        lock.lock()
        defer { lock.unlock() }
        return scope
    }

    /// Replaces the scope (a cookie was captured).
    ///
    /// - Parameter newScope: The captured cookie's scope.
    package func update(_ newScope: CookieScope) {
        lock.lock()
        scope = newScope
        lock.unlock()
    }

    /// The current scope's description.
    package var description: String { current.description }
}
