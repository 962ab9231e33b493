import Foundation

/// The parameters of an authorization response (RFC 6749 section 4.1.2) read from a redirect URL, after checking
/// that the URL is at the redirect URI.
struct AuthorizationRedirect: Sendable {
    let state: String?
    let code: String?
    let error: String?
    let issuer: String?

    /// Reads `url`, which must be at `redirectURI`: the same scheme, host and port, and path.
    ///
    /// - Throws: ``SignInError/foreignRedirect`` for another place, or a parameter given twice.
    init(_ url: URL, redirectURI: URL) throws(SignInError) {
        guard Self.sameEndpoint(url, redirectURI),
            let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        else { throw .foreignRedirect }
        var values: [String: String] = [:]
        for item in components.queryItems ?? [] where ["state", "code", "error", "iss"].contains(item.name) {
            // RFC 6749 section 3.1: a parameter sent twice is an error (and a sign of injection).
            guard values[item.name] == nil else { throw .foreignRedirect }
            values[item.name] = item.value ?? ""
        }
        state = values["state"]
        code = values["code"]
        error = values["error"]
        issuer = values["iss"]
    }

    static func sameEndpoint(_ url: URL, _ expected: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased(), scheme == expected.scheme?.lowercased() else { return false }
        guard url.host?.lowercased() == expected.host?.lowercased(), url.port == expected.port else { return false }
        func path(_ url: URL) -> String {
            let text = url.path(percentEncoded: true)
            return text.isEmpty ? "/" : text
        }
        return path(url) == path(expected)
    }

    /// An OAuth error code fit for descriptions: a short name of lowercase letters, digits and underscores (so an
    /// echo of something secret in a misbehaving server's answer cannot ride into a log).
    static func sanitizedCode(_ code: String?) -> String? {
        guard let code, !code.isEmpty, code.utf8.count <= 64,
            code.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F || ($0 >= 0x30 && $0 <= 0x39) })
        else { return code == nil ? nil : "invalid_error_code" }
        return code
    }
}
