public import Foundation

// Foundation only (with HTTPOrigin.swift), so that Fuzz/RequestURL compiles it without swift-http-types.
extension HTTPOrigin {
    /// Whether `target` may follow an authority in a request: a path that starts with `/` (and may carry a
    /// query), or `*` for `OPTIONS`.
    ///
    /// Anything else changes the authority once it is written after it: `@evil.example/x` makes the origin user
    /// info, `.evil.example/x` and `:8080/x` extend the host or set the port, and an empty path names no resource.
    ///
    /// - Parameters:
    ///   - target: The request's path and query, as `HTTPRequest.path` holds it.
    ///   - method: The request method, such as `GET`.
    /// - Returns: Whether the target is one a request may carry.
    package static func isValidRequestTarget(_ target: String, method: String) -> Bool {
        switch target.utf8.first {
        case UInt8(ascii: "/")?: true
        case UInt8(ascii: "*")?: target.utf8.count == 1 && method == "OPTIONS"
        default: false
        }
    }

    /// The absolute URL of a request to `target` on this origin, built with `URLComponents`, or `nil` when the
    /// target is not valid (an origin-form path starting with `/`, or `*` for `OPTIONS`) or the URL would not point at this origin.
    ///
    /// The path and query are kept as written: percent-escapes are never decoded, so `%2F` stays `%2F`. A byte
    /// that may not appear in a path or query (a space, `#`, `\`, `[`, a control or non-ASCII byte, or a `%`
    /// without two hex digits) is percent-encoded. The URL is parsed again afterwards, and it must name this
    /// origin's scheme, host and port, have no user info, and carry the same path and query; otherwise the
    /// answer is `nil`. `*` (for `OPTIONS`) gives the origin's URL without a path.
    ///
    /// Transports build their URLs here (``URLSessionTransport``, the AsyncHTTPClient transport), never by
    /// joining `scheme://authority` and the path as text.
    ///
    /// - Parameters:
    ///   - target: The request's path and query, as `HTTPRequest.path` holds it.
    ///   - method: The request method, such as `GET`.
    /// - Returns: The URL, or `nil`.
    public func requestURL(target: String, method: String) -> URL? {
        guard Self.isValidRequestTarget(target, method: method), Self.isPlainHost(host) else { return nil }
        var path = ""
        var query: String?
        if target != "*" {
            let encoded = Self.percentEncodingStrayBytes(target)
            if let mark = encoded.utf8.firstIndex(of: UInt8(ascii: "?")) {
                path = String(encoded[..<mark])
                query = String(encoded[encoded.index(after: mark)...])
            } else {
                path = encoded
            }
        }
        var components = URLComponents()
        components.scheme = scheme
        components.percentEncodedHost = host
        if port != (isSecure ? 443 : 80) { components.port = port }
        components.percentEncodedPath = path
        components.percentEncodedQuery = query
        guard let url = components.url, let parsed = URLComponents(url: url, resolvingAgainstBaseURL: false),
            parsed.user == nil, parsed.password == nil, let parsedScheme = parsed.scheme,
            let parsedHost = parsed.percentEncodedHost,
            HTTPOrigin(scheme: parsedScheme, host: parsedHost, port: parsed.port) == self,
            parsed.percentEncodedPath == path, parsed.percentEncodedQuery == query
        else { return nil }
        return url
    }

    /// Whether `host` is a plain name (letters, digits, `-`, `.`, `_`, `~`) or a bracketed IPv6 literal: what
    /// `URLComponents` takes as a host without question.
    static func isPlainHost(_ host: String) -> Bool {
        let bytes = host.utf8
        guard !bytes.isEmpty else { return false }
        if bytes.first == UInt8(ascii: "[") {
            guard bytes.count > 2, bytes.last == UInt8(ascii: "]") else { return false }
            return bytes.dropFirst().dropLast().allSatisfy { byte in
                isHexDigit(byte) || byte == UInt8(ascii: ":") || byte == UInt8(ascii: ".")
            }
        }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"),
                UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                true
            default: false
            }
        }
    }

    /// `target` with every byte that may not appear in a path or query percent-encoded; valid escapes and
    /// every allowed byte are kept as they are.
    static func percentEncodingStrayBytes(_ target: String) -> String {
        let bytes = Array(target.utf8)
        if bytes.allSatisfy(isPathOrQueryByte) && !bytes.contains(UInt8(ascii: "%")) { return target }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 16)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count, isHexDigit(bytes[index + 1]),
                isHexDigit(bytes[index + 2])
            {
                output += bytes[index...(index + 2)]
                index += 3
                continue
            }
            if byte != UInt8(ascii: "%") && isPathOrQueryByte(byte) {
                output.append(byte)
            } else {
                let digits = Array("0123456789ABCDEF".utf8)
                output += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]]
            }
            index += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// RFC 3986's `pchar`, `/` and `?` (unreserved, sub-delims, `:`, `@`), without `%`.
    private static func isPathOrQueryByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "-._~!$&'()*+,;=:@/?".utf8.contains(byte)
        }
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
            UInt8(ascii: "A")...UInt8(ascii: "F"):
            true
        default: false
        }
    }
}
