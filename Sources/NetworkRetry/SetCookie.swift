package import Foundation

/// A `Set-Cookie` header field parsed as RFC 6265 section 5.2 says, with the checks a client that keeps a
/// session cookie needs: the domain must match the request's host, a `Secure` cookie must arrive over https,
/// and a cookie that is too large or has control characters is refused.
///
/// No public suffix list is built in, so a `Domain` attribute is held to a stricter rule of its own: it must be
/// the request's host or a parent of it; it must not be a single label (`com`, `dev`), a two-label name under a
/// country code whose first label is a usual second-level name (`co.uk`, `com.au`, `ne.jp`), or one of a short
/// list of shared hosting suffixes (`workers.dev`, `github.io`, `vercel.app`, `herokuapp.com`, ...); and for a
/// host that is an IP address it must be that address. A `Domain` equal to such a suffix on the host itself
/// makes a host-only cookie, as RFC 6265 section 5.3 step 6 says. A suffix this rule does not know (a
/// registry's rarer second-level names) is accepted: scope a cookie-session client's allowed origins
/// accordingly.
///
/// ```swift
/// let cookie = try SetCookie(parsing: field, requestHost: "api.example.com", requestIsSecure: true, now: Date())
/// if cookie.name == "better-auth.session_token" { ... }
/// ```
package struct SetCookie: Sendable, Hashable, CustomStringConvertible {
    /// Why a `Set-Cookie` was refused.
    package enum Refusal: Error, Sendable, Hashable {
        /// No `name=value` pair, or an empty name.
        case malformed
        /// The field is larger than ``SetCookie/maximumSize`` (4096 bytes, RFC 6265 section 6.1).
        case tooLarge
        /// The name or value has control characters, or the name has separators.
        case invalidCharacters
        /// The `Domain` attribute does not domain-match the request's host.
        case foreignDomain
        /// The `Domain` attribute is a public suffix (`com`, `co.uk`, `workers.dev`): the cookie would go to
        /// every site under it.
        case publicSuffixDomain
        /// The cookie is `Secure` but arrived over plain http (other than loopback).
        case secureOverInsecureTransport
    }

    /// The largest `Set-Cookie` field accepted, in bytes.
    package static let maximumSize = 4096

    /// The cookie's name.
    package let name: String
    /// The cookie's value. A credential: never logged or printed.
    package let value: String
    /// When the cookie expires (from `Max-Age`, which wins, or `Expires`); `nil` for a session cookie.
    package let expiresAt: Date?
    /// The domain it applies to (the request's host when no `Domain` was given).
    package let domain: String
    /// Whether a `Domain` attribute widened it to subdomains.
    package let includesSubdomains: Bool
    /// The path it applies to.
    package let path: String
    /// Whether it may only be sent over https.
    package let isSecure: Bool
    /// Whether it is hidden from scripts.
    package let isHTTPOnly: Bool
    /// The `SameSite` attribute as sent (`Strict`, `Lax`, `None`), if any.
    package let sameSite: String?

    /// Parses one `Set-Cookie` field value.
    ///
    /// - Parameters:
    ///   - field: The field value.
    ///   - requestHost: The host the response came from.
    ///   - requestIsSecure: Whether it came over https (or to loopback).
    ///   - now: The time `Max-Age` counts from.
    /// - Throws: ``Refusal`` saying why the cookie was refused.
    package init(parsing field: String, requestHost: String, requestIsSecure: Bool, now: Date) throws(Refusal) {
        guard field.utf8.count <= Self.maximumSize else { throw .tooLarge }
        var parts = field.split(separator: ";", omittingEmptySubsequences: false).makeIterator()
        guard let pair = parts.next(), let equals = pair.firstIndex(of: "=") else { throw .malformed }
        let name = pair[..<equals].trimmingCharacters(in: .whitespaces)
        var value = pair[pair.index(after: equals)...].trimmingCharacters(in: .whitespaces)
        if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
            value = String(value.dropFirst().dropLast())
        }
        guard !name.isEmpty else { throw .malformed }
        guard Self.isToken(name), value.unicodeScalars.allSatisfy(Self.isCookieOctet) else { throw .invalidCharacters }
        let host = requestHost.lowercased()
        var expiresAt: Date?
        var maxAgeSeen = false
        var domain = host
        var includesSubdomains = false
        var path = "/"
        var secure = false
        var httpOnly = false
        var sameSite: String?
        while let attribute = parts.next() {
            let pieces = attribute.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = pieces[0].trimmingCharacters(in: .whitespaces).lowercased()
            let argument = pieces.count > 1 ? pieces[1].trimmingCharacters(in: .whitespaces) : ""
            switch key {
            case "max-age":
                guard let seconds = Int(argument) else { continue }
                expiresAt = seconds <= 0 ? Date.distantPast : now.addingTimeInterval(TimeInterval(seconds))
                maxAgeSeen = true
            case "expires" where !maxAgeSeen:
                if let date = Self.httpDate(argument) { expiresAt = date }
            case "domain":
                var wanted = argument.lowercased()
                if wanted.hasPrefix(".") { wanted.removeFirst() }
                guard !wanted.isEmpty else { continue }
                guard host == wanted || (host.hasSuffix("." + wanted) && !CookieScope.isIPAddress(host)) else {
                    throw .foreignDomain
                }
                if Self.isPublicSuffix(wanted) || CookieScope.isIPAddress(host) {
                    // RFC 6265 section 5.3 step 6: on the host itself it makes a host-only cookie.
                    guard host == wanted else { throw .publicSuffixDomain }
                    domain = host
                    includesSubdomains = false
                    continue
                }
                domain = wanted
                includesSubdomains = true
            case "path":
                if argument.hasPrefix("/") { path = argument }
            case "secure": secure = true
            case "httponly": httpOnly = true
            case "samesite": sameSite = argument.isEmpty ? nil : argument
            default: continue
            }
        }
        if secure && !requestIsSecure { throw .secureOverInsecureTransport }
        self.name = name
        self.value = value
        self.expiresAt = expiresAt
        self.domain = domain
        self.includesSubdomains = includesSubdomains
        self.path = path
        self.isSecure = secure
        self.isHTTPOnly = httpOnly
        self.sameSite = sameSite
    }

    /// Whether the server asked to delete the cookie (`Max-Age=0` or an `Expires` in the past).
    ///
    /// - Parameter now: The time to compare with.
    /// - Returns: `true` when it is already expired.
    package func isExpired(at now: Date) -> Bool { expiresAt.map { $0 <= now } ?? false }

    /// Name, domain, path and flags; never the value.
    package var description: String {
        var flags: [String] = []
        if isSecure { flags.append("Secure") }
        if isHTTPOnly { flags.append("HttpOnly") }
        if let sameSite { flags.append("SameSite=\(sameSite)") }
        return "SetCookie(\(name), domain: \(domain), path: \(path)"
            + (flags.isEmpty ? "" : ", " + flags.joined(separator: ", "))
            + ")"
    }

    /// Shared hosting suffixes under which every customer has their own subdomain.
    static let sharedHostingSuffixes: Set<String> = [
        "workers.dev", "pages.dev", "r2.dev", "deno.dev", "fly.dev", "github.io", "gitlab.io", "vercel.app",
        "netlify.app", "web.app", "firebaseapp.com", "herokuapp.com", "appspot.com", "onrender.com",
        "railway.app", "up.railway.app", "azurewebsites.net", "cloudfront.net", "amazonaws.com", "blogspot.com",
        "glitch.me", "ngrok.io", "ngrok-free.app", "trycloudflare.com", "supabase.co", "now.sh", "surge.sh",
        "pythonanywhere.com", "azurestaticapps.net", "cloudapp.net", "run.app", "a.run.app",
    ]

    /// Usual second-level names under a country code (`co.uk`, `com.au`, `ne.jp`).
    static let countrySecondLevelNames: Set<String> = [
        "ac", "co", "com", "edu", "go", "gob", "gov", "gv", "ltd", "me", "mil", "ne", "net", "nic", "nom", "or",
        "org", "plc", "sch",
    ]

    /// Whether `domain` (lowercase, no leading dot) is a public suffix by the rule in the type's discussion.
    static func isPublicSuffix(_ domain: String) -> Bool {
        let labels = domain.split(separator: ".", omittingEmptySubsequences: false)
        if labels.count < 2 || labels.contains(where: \.isEmpty) { return true }
        if sharedHostingSuffixes.contains(domain) { return true }
        if labels.count == 2, labels[1].count == 2, countrySecondLevelNames.contains(String(labels[0])) {
            return true
        }
        return false
    }

    /// RFC 6265 `token`: visible ASCII without separators.
    private static func isToken(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { scalar in
            scalar.value > 0x20 && scalar.value < 0x7F && !"()<>@,;:\\\"/[]?={} \t".unicodeScalars.contains(scalar)
        }
    }

    /// RFC 6265 `cookie-octet`: visible ASCII except `"`, `,`, `;` and `\`.
    private static func isCookieOctet(_ scalar: Unicode.Scalar) -> Bool {
        let value = scalar.value
        return value == 0x21 || (0x23...0x2B).contains(value) || (0x2D...0x3A).contains(value)
            || (0x3C...0x5B).contains(value) || (0x5D...0x7E).contains(value)
    }

    private static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        for format in ["EEE, dd MMM yyyy HH:mm:ss zzz", "EEEE, dd-MMM-yy HH:mm:ss zzz", "EEE MMM d HH:mm:ss yyyy"] {
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }
}
