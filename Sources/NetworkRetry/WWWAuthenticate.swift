// The WWW-Authenticate parser needs nothing but the standard library, so the fuzz target compiles this file
// (and the other WWWAuthenticate*.swift files) on its own. Keep it that way.

/// One challenge of a `WWW-Authenticate` (or `Proxy-Authenticate`) header field, RFC 9110 section 11.6.1.
///
/// A challenge is an auth scheme followed by either a `token68` or a list of `name=value` parameters:
///
/// ```swift
/// let challenges = AuthenticationChallenge.parse(#"Bearer realm="api", error="invalid_token""#)
/// challenges?.first?.isScheme("bearer")            // true: schemes are case-insensitive
/// challenges?.first?[parameter: "ERROR"]           // "invalid_token": so are parameter names
/// ```
package struct AuthenticationChallenge: Sendable, Hashable {
    /// One `name=value` auth parameter. The name is stored in lowercase; the value as sent, unquoted and
    /// unescaped.
    package struct Parameter: Sendable, Hashable {
        /// The parameter name in ASCII lowercase.
        package let name: String
        /// The value: a token, or the content of a quoted string with its backslash escapes removed.
        package let value: String

        /// Creates a parameter.
        ///
        /// - Parameters:
        ///   - name: The name; it is lowercased.
        ///   - value: The value, unquoted.
        package init(name: String, value: String) {
            self.name = asciiLowercased(name)
            self.value = value
        }
    }

    /// The auth scheme as sent (`Bearer`, `basic`, `DPoP`); compare with ``isScheme(_:)``.
    package let scheme: String
    /// The `token68` that follows the scheme, if the challenge has one instead of parameters.
    package let token68: String?
    /// The auth parameters in the order sent. Empty when the challenge has a ``token68`` or nothing.
    package let parameters: [Parameter]

    /// The longest field value ``parse(_:)`` accepts, in UTF-8 bytes. Longer values are rejected unread.
    package static let maximumFieldLength = 16_384

    /// Creates a challenge from its parts.
    ///
    /// - Parameters:
    ///   - scheme: The auth scheme.
    ///   - token68: A token68, if any.
    ///   - parameters: The auth parameters.
    package init(scheme: String, token68: String? = nil, parameters: [Parameter] = []) {
        self.scheme = scheme
        self.token68 = token68
        self.parameters = parameters
    }

    /// Whether this challenge's scheme is `name`, ignoring ASCII case.
    ///
    /// - Parameter name: A scheme name such as `Bearer`.
    /// - Returns: `true` when the schemes match.
    package func isScheme(_ name: String) -> Bool { asciiLowercased(scheme) == asciiLowercased(name) }

    /// The value of the first parameter called `name`, ignoring ASCII case; `nil` if there is none.
    ///
    /// - Parameter name: The parameter name.
    package subscript(parameter name: String) -> String? {
        let wanted = asciiLowercased(name)
        return parameters.first { $0.name == wanted }?.value
    }

    /// Parses one `WWW-Authenticate` field value into its challenges.
    ///
    /// Accepts several comma-separated challenges, empty list elements, optional whitespace around `=` and
    /// commas, quoted strings with backslash escapes, and `token68`. Work is linear in the input, and input
    /// longer than ``maximumFieldLength`` is rejected without being read.
    ///
    /// - Parameter fieldValue: One field value (one header line).
    /// - Returns: The challenges in order (empty for an empty value), or `nil` if the value is not valid
    ///   RFC 9110 syntax.
    package static func parse(_ fieldValue: String) -> [AuthenticationChallenge]? {
        var value = fieldValue
        return value.withUTF8 { bytes in
            guard bytes.count <= maximumFieldLength else { return nil }
            var scanner = ChallengeScanner(bytes: bytes)
            return scanner.parseAll()
        }
    }

    /// Parses every line of a `WWW-Authenticate` field (a header may be sent several times).
    ///
    /// - Parameter fieldValues: The field values, one per header line.
    /// - Returns: All challenges in order, or `nil` if any line is not valid syntax.
    package static func parse(fieldValues: some Sequence<String>) -> [AuthenticationChallenge]? {
        var all: [AuthenticationChallenge] = []
        for value in fieldValues {
            guard let challenges = parse(value) else { return nil }
            all += challenges
        }
        return all
    }
}

/// ASCII-only lowercasing: header names and schemes are ASCII, and this never consults Unicode tables.
func asciiLowercased(_ text: String) -> String {
    guard text.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else { return text }
    return String(decoding: text.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
}

/// A one-pass scanner over the UTF-8 bytes of one field value. Every method moves forward or fails; the only
/// backtracking is a bounded look-ahead over one list element, so each byte is read a small constant number
/// of times.
private struct ChallengeScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    var atEnd: Bool { index >= bytes.count }
    var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func parseAll() -> [AuthenticationChallenge]? {
        var result: [AuthenticationChallenge] = []
        skipListSeparators()
        while !atEnd {
            guard let challenge = parseChallenge() else { return nil }
            result.append(challenge)
            skipWhitespace()
            if atEnd { break }
            guard current == UInt8(ascii: ",") else { return nil }
            skipListSeparators()
        }
        return result
    }

    /// `auth-scheme [ 1*SP ( token68 / #auth-param ) ]`; stops at the end or at the comma after it.
    mutating func parseChallenge() -> AuthenticationChallenge? {
        guard let scheme = token() else { return nil }
        let spaces = skipWhitespace()
        if atEnd || current == UInt8(ascii: ",") { return AuthenticationChallenge(scheme: scheme) }
        guard spaces > 0 else { return nil }

        let start = index
        if let candidate = token68() {
            skipWhitespace()
            if atEnd || current == UInt8(ascii: ",") {
                return AuthenticationChallenge(scheme: scheme, token68: candidate)
            }
            index = start
        }

        var parameters: [AuthenticationChallenge.Parameter] = []
        while true {
            guard let parameter = parameter() else { return nil }
            parameters.append(parameter)
            skipWhitespace()
            if atEnd { break }
            guard current == UInt8(ascii: ",") else { return nil }
            let comma = index
            skipListSeparators()
            if atEnd { break }
            if !parameterAhead() {
                index = comma
                break
            }
        }
        return AuthenticationChallenge(scheme: scheme, parameters: parameters)
    }

    /// `token BWS "=" BWS ( token / quoted-string )`.
    mutating func parameter() -> AuthenticationChallenge.Parameter? {
        guard let name = token() else { return nil }
        skipWhitespace()
        guard current == UInt8(ascii: "=") else { return nil }
        index += 1
        skipWhitespace()
        let value = current == UInt8(ascii: "\"") ? quotedString() : token()
        guard let value else { return nil }
        return AuthenticationChallenge.Parameter(name: name, value: value)
    }

    /// Whether the list element at the index is an auth-param (`token BWS "="`) rather than a new challenge.
    /// Does not move the index.
    mutating func parameterAhead() -> Bool {
        let start = index
        defer { index = start }
        guard token() != nil else { return false }
        skipWhitespace()
        return current == UInt8(ascii: "=")
    }

    mutating func token() -> String? {
        let start = index
        while let byte = current, isTokenCharacter(byte) { index += 1 }
        guard index > start else { return nil }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    }

    /// `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
    mutating func token68() -> String? {
        let start = index
        while let byte = current, isToken68Character(byte) { index += 1 }
        guard index > start else { return nil }
        while current == UInt8(ascii: "=") { index += 1 }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
    }

    /// `DQUOTE *( qdtext / quoted-pair ) DQUOTE`, returning the content with escapes removed.
    mutating func quotedString() -> String? {
        index += 1  // the opening quote
        var content: [UInt8] = []
        while let byte = current {
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: content, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard let escaped = current, isQuotedPairCharacter(escaped) else { return nil }
                content.append(escaped)
                index += 1
            default:
                guard isQuotedTextCharacter(byte) else { return nil }
                content.append(byte)
            }
        }
        return nil  // unterminated
    }

    /// Skips spaces and tabs; returns how many.
    @discardableResult
    mutating func skipWhitespace() -> Int {
        let start = index
        while current == UInt8(ascii: " ") || current == UInt8(ascii: "\t") { index += 1 }
        return index - start
    }

    /// Skips whitespace and commas (the `#rule` allows empty list elements).
    mutating func skipListSeparators() {
        while current == UInt8(ascii: " ") || current == UInt8(ascii: "\t") || current == UInt8(ascii: ",") {
            index += 1
        }
    }
}

/// `tchar`: `!#$%&'*+-.^_`|~`, digits and letters.
private func isTokenCharacter(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
        UInt8(ascii: "A")...UInt8(ascii: "Z"):
        return true
    case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
        UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
        UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
        return true
    default:
        return false
    }
}

private func isToken68Character(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
        UInt8(ascii: "A")...UInt8(ascii: "Z"),
        UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "+"),
        UInt8(ascii: "/"):
        return true
    default:
        return false
    }
}

/// `qdtext`: HTAB, SP, `!`, `#`-`[`, `]`-`~`, obs-text.
private func isQuotedTextCharacter(_ byte: UInt8) -> Bool {
    byte == 0x09 || byte == 0x20 || byte == 0x21 || (0x23...0x5B).contains(byte) || (0x5D...0x7E).contains(byte)
        || byte >= 0x80
}

/// What may follow a backslash: HTAB, SP, VCHAR, obs-text.
private func isQuotedPairCharacter(_ byte: UInt8) -> Bool {
    byte == 0x09 || (0x20...0x7E).contains(byte) || byte >= 0x80
}
