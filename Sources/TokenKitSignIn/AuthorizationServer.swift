public import AuthToken
public import Foundation
import HTTPTypes
public import NetworkRetry

/// An authorization server's endpoints and promises: from OpenID Connect Discovery or RFC 8414 metadata
/// (``discover(issuer:transport:now:)``), or written by hand.
///
/// Only the members sign-in needs are kept. An endpoint the server does not offer is `nil`, and the flows then skip
/// what needs it: no pushed authorization request without ``pushedAuthorizationRequestEndpoint``, no revocation
/// without ``revocationEndpoint``, no logout at the provider without ``endSessionEndpoint``. An OpenID Connect sign-in
/// needs keys for its ID token: without ``jwksURI`` (or a key source given to the flow) it is refused.
public struct AuthorizationServer: Sendable, Hashable {
    /// The issuer identifier, exactly as the server writes it (compared as a string, never normalised).
    public var issuer: String
    /// Where the browser goes to sign in (RFC 6749 section 3.1).
    public var authorizationEndpoint: URL
    /// Where codes and device codes are exchanged for tokens.
    public var tokenEndpoint: URL
    /// The server's signing keys (`jwks_uri`), for the ID token check.
    public var jwksURI: URL?
    /// RP-initiated logout (`end_session_endpoint`).
    public var endSessionEndpoint: URL?
    /// Token revocation, RFC 7009 (`revocation_endpoint`).
    public var revocationEndpoint: URL?
    /// Pushed authorization requests, RFC 9126 (`pushed_authorization_request_endpoint`).
    public var pushedAuthorizationRequestEndpoint: URL?
    /// The device authorization grant, RFC 8628 (`device_authorization_endpoint`).
    public var deviceAuthorizationEndpoint: URL?
    /// Whether the server promises `iss` on every authorization response (RFC 9207,
    /// `authorization_response_iss_parameter_supported`); a redirect without it is then refused.
    public var sendsIssuerInRedirect: Bool

    /// Metadata written by hand.
    ///
    /// - Parameters:
    ///   - issuer: The issuer identifier, as the server writes it in `iss`.
    ///   - authorizationEndpoint: The authorization endpoint.
    ///   - tokenEndpoint: The token endpoint.
    ///   - jwksURI: The key set, if ID tokens are to be checked.
    ///   - endSessionEndpoint: The RP-initiated logout endpoint, if any.
    ///   - revocationEndpoint: The RFC 7009 endpoint, if any.
    ///   - pushedAuthorizationRequestEndpoint: The RFC 9126 endpoint, if any.
    ///   - deviceAuthorizationEndpoint: The RFC 8628 endpoint, if any.
    ///   - sendsIssuerInRedirect: Whether every redirect carries `iss` (RFC 9207).
    public init(
        issuer: String, authorizationEndpoint: URL, tokenEndpoint: URL, jwksURI: URL? = nil,
        endSessionEndpoint: URL? = nil, revocationEndpoint: URL? = nil, pushedAuthorizationRequestEndpoint: URL? = nil,
        deviceAuthorizationEndpoint: URL? = nil, sendsIssuerInRedirect: Bool = false
    ) {
        self.issuer = issuer
        self.authorizationEndpoint = authorizationEndpoint
        self.tokenEndpoint = tokenEndpoint
        self.jwksURI = jwksURI
        self.endSessionEndpoint = endSessionEndpoint
        self.revocationEndpoint = revocationEndpoint
        self.pushedAuthorizationRequestEndpoint = pushedAuthorizationRequestEndpoint
        self.deviceAuthorizationEndpoint = deviceAuthorizationEndpoint
        self.sendsIssuerInRedirect = sendsIssuerInRedirect
    }

    /// Fetches `<issuer>/.well-known/openid-configuration` (OpenID Connect Discovery 1.0 section 4), or returns the
    /// document fetched before while it is fresh: its `Cache-Control: max-age` (one hour without one, at most a
    /// day), shared by every caller in the process.
    ///
    /// The document's `issuer` must be exactly `issuer` (section 4.3), and every endpoint must be `https` (or `http`
    /// to loopback).
    ///
    /// - Parameters:
    ///   - issuer: The issuer URL.
    ///   - transport: The transport to fetch with.
    ///   - now: The wall clock, for the cache.
    /// - Returns: The server's metadata.
    /// - Throws: ``SignInError/discoveryFailed`` (the cause in ``SignInError/underlying``), or
    ///   ``SignInError/insecureURL``.
    public static func discover(
        issuer: URL, transport: any HTTPTransport, now: @escaping @Sendable () -> Date = AuthToken.systemNow
    ) async throws(SignInError) -> AuthorizationServer {
        var base = issuer.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        let key = base
        if let cached = DiscoveryCache.shared.entry(for: key, now: now()) { return cached }
        guard let url = URL(string: base + "/.well-known/openid-configuration") else { throw .discoveryFailed }
        let (response, body) = try await HTTPGet.fetch(url, via: transport)
        guard response.status.code == 200, body.count <= 512 * 1024 else {
            throw .discoveryFailed
        }
        let server = try parse(body, expectedIssuer: issuer.absoluteString)
        let maxAge = HTTPGet.maxAge(response.headerFields[.cacheControl]) ?? 3600
        DiscoveryCache.shared.store(server, for: key, until: now().addingTimeInterval(min(maxAge, 86_400)))
        return server
    }

    /// Parses a discovery (or RFC 8414) document.
    static func parse(_ body: Data, expectedIssuer: String) throws(SignInError) -> AuthorizationServer {
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: body)
        } catch {
            throw SignInError.discoveryFailed.with(underlying: error)
        }
        // Section 4.3: exactly the issuer asked for (a trailing slash is the only difference tolerated).
        func trimmed(_ text: String) -> String { text.hasSuffix("/") ? String(text.dropLast()) : text }
        guard trimmed(document.issuer) == trimmed(expectedIssuer) else { throw .discoveryFailed }
        func endpoint(_ text: String?) throws(SignInError) -> URL? {
            guard let text else { return nil }
            guard let url = URL(string: text), let origin = HTTPOrigin(url) else { throw .discoveryFailed }
            guard origin.allowsCredentials else { throw .insecureURL }
            return url
        }
        guard let authorization = try endpoint(document.authorization_endpoint),
            let token = try endpoint(document.token_endpoint)
        else { throw .discoveryFailed }
        return AuthorizationServer(
            issuer: document.issuer, authorizationEndpoint: authorization, tokenEndpoint: token,
            jwksURI: try endpoint(document.jwks_uri), endSessionEndpoint: try endpoint(document.end_session_endpoint),
            revocationEndpoint: try endpoint(document.revocation_endpoint),
            pushedAuthorizationRequestEndpoint: try endpoint(document.pushed_authorization_request_endpoint),
            deviceAuthorizationEndpoint: try endpoint(document.device_authorization_endpoint),
            sendsIssuerInRedirect: document.authorization_response_iss_parameter_supported ?? false)
    }

    /// The members read from the document, under their wire names.
    private struct Document: Decodable {
        // swift-format-ignore: AlwaysUseLowerCamelCase
        let issuer: String
        let authorization_endpoint: String?
        let token_endpoint: String?
        let jwks_uri: String?
        let end_session_endpoint: String?
        let revocation_endpoint: String?
        let pushed_authorization_request_endpoint: String?
        let device_authorization_endpoint: String?
        let authorization_response_iss_parameter_supported: Bool?
    }
}

/// Discovery documents by issuer, until their `max-age` passes. Bounded: at most 32 issuers.
final class DiscoveryCache: Sendable {
    static let shared = DiscoveryCache()
    private let entries = LockedValue([String: (AuthorizationServer, Date)]())

    func entry(for issuer: String, now: Date) -> AuthorizationServer? {
        entries.withLock { entries in
            guard let (server, expiry) = entries[issuer] else { return nil }
            if expiry <= now {
                entries[issuer] = nil
                return nil
            }
            return server
        }
    }

    func store(_ server: AuthorizationServer, for issuer: String, until expiry: Date) {
        entries.withLock { entries in
            if entries.count >= 32 { entries.removeAll() }
            entries[issuer] = (server, expiry)
        }
    }

    /// Forgets every document (tests).
    func removeAll() { entries.withLock { $0.removeAll() } }
}

/// A GET through an `HTTPTransport`, for discovery.
enum HTTPGet {
    static func fetch(_ url: URL, via transport: any HTTPTransport) async throws(SignInError) -> (HTTPResponse, Data) {
        guard let origin = HTTPOrigin(url) else { throw .discoveryFailed }
        guard origin.allowsCredentials else { throw .insecureURL }
        var request = HTTPRequest(method: .get, url: url)
        request.headerFields[.accept] = "application/json"
        do {
            return try await transport.send(request, body: nil)
        } catch is CancellationError {
            throw .cancelled
        } catch {
            throw SignInError.discoveryFailed.with(underlying: error)
        }
    }

    /// `max-age` of a `Cache-Control` value, in seconds.
    static func maxAge(_ cacheControl: String?) -> TimeInterval? {
        guard let cacheControl else { return nil }
        for directive in cacheControl.split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1)
            let name = parts[0].trimmingCharacters(in: .whitespaces).lowercased()
            if name == "no-store" || name == "no-cache" { return 0 }
            if name == "max-age", parts.count == 2, let seconds = Double(parts[1].trimmingCharacters(in: .whitespaces)),
                seconds >= 0
            {
                return seconds
            }
        }
        return nil
    }
}
