import AuthToken
import Foundation

/// Searches log lines for secrets, as they are and in the forms a log line is likely to carry them in:
/// percent-encoded (a URL or form body), with `+` for spaces, and JSON-escaped.
///
/// One pass over each line's bytes, whatever the number of secrets: each secret form is indexed by its
/// first ``TestSecrets/minimumLength`` bytes, and each window of the line is looked up in that index.
///
/// ```swift
/// let search = LogLeakSearch(secrets: TestSecrets.shared.all)
/// let leaks = search.leaks(in: capture.lines)
/// #expect(leaks.isEmpty, "\(leaks)")
/// ```
public struct LogLeakSearch: Sendable {
    /// A secret found in a log line.
    public struct Leak: Sendable, CustomStringConvertible {
        /// The secret that was found.
        public let secret: TestSecrets.Secret
        /// The line, with every secret found in it replaced by `<kind fingerprint>`.
        public let redactedLine: String

        /// What leaked and the redacted line; never the secret.
        public var description: String { "\(secret) in log line: \(redactedLine)" }
    }

    private struct Form: Sendable {
        let bytes: [UInt8]
        let secret: Int
    }

    private let secrets: [TestSecrets.Secret]
    private let index: [UInt64: [Form]]

    /// Indexes the secrets that are long enough to search for.
    ///
    /// - Parameter secrets: The secrets.
    public init(secrets: [TestSecrets.Secret]) {
        var index: [UInt64: [Form]] = [:]
        for (number, secret) in secrets.enumerated() where secret.value.utf8.count >= TestSecrets.minimumLength {
            for form in Self.forms(of: secret.value) {
                let bytes = Array(form.utf8)
                index[Self.key(bytes, at: 0), default: []].append(Form(bytes: bytes, secret: number))
            }
        }
        self.secrets = secrets
        self.index = index
    }

    /// Every leak in the lines, one per secret and line.
    ///
    /// - Parameter lines: Log lines.
    /// - Returns: The leaks, in line order.
    public func leaks(in lines: some Sequence<String>) -> [Leak] {
        lines.flatMap { leaks(in: $0) }
    }

    /// The leaks in one line.
    ///
    /// - Parameter line: A log line.
    /// - Returns: One leak per secret found in it.
    public func leaks(in line: String) -> [Leak] {
        let found = matches(in: Array(line.utf8))
        guard !found.isEmpty else { return [] }
        var redacted = line
        for match in found.sorted(by: { $0.bytes.count > $1.bytes.count }) {
            let secret = secrets[match.secret]
            let text = String(decoding: match.bytes, as: UTF8.self)
            redacted = redacted.replacingOccurrences(
                of: text, with: "<\(secret.kind) \(AuthToken.fingerprint(secret.value))>")
        }
        var seen: Set<Int> = []
        return found.compactMap { match in
            guard seen.insert(match.secret).inserted else { return nil }
            return Leak(secret: secrets[match.secret], redactedLine: redacted)
        }
    }

    private func matches(in bytes: [UInt8]) -> [Form] {
        let width = TestSecrets.minimumLength
        guard bytes.count >= width, !index.isEmpty else { return [] }
        var found: [Form] = []
        for start in 0...(bytes.count - width) {
            guard let candidates = index[Self.key(bytes, at: start)] else { continue }
            for form in candidates where start + form.bytes.count <= bytes.count {
                if bytes[start..<(start + form.bytes.count)].elementsEqual(form.bytes) { found.append(form) }
            }
        }
        return found
    }

    private static func key(_ bytes: [UInt8], at start: Int) -> UInt64 {
        var key: UInt64 = 0
        for offset in 0..<TestSecrets.minimumLength { key = key << 8 | UInt64(bytes[start + offset]) }
        return key
    }

    /// The secret as it is, percent-encoded, form-encoded and JSON-escaped (each once, if different).
    static func forms(of value: String) -> [String] {
        var unreserved = CharacterSet.alphanumerics
        unreserved.insert(charactersIn: "-._~")
        let percent = value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? value
        var formAllowed = unreserved
        formAllowed.insert(" ")
        let form = (value.addingPercentEncoding(withAllowedCharacters: formAllowed) ?? value)
            .replacingOccurrences(of: " ", with: "+")
        let json = value.replacingOccurrences(of: "\\", with: "\\\\")
            .replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "/", with: "\\/")
        var forms: [String] = []
        for candidate in [value, percent, form, json] where !forms.contains(candidate) {
            forms.append(candidate)
        }
        return forms
    }
}
