import AuthToken
import Foundation

/// Searches log lines for secrets, as they are and in the forms a log line is likely to carry them in:
/// percent-encoded (upper- or lowercase hex; as a URL query encodes them; with `+` for spaces in a form body),
/// JSON-escaped, base64 or base64url (a secret encoded on its own), and lowercase hex, packed or with a space
/// between bytes (as SwiftNIO's `hexDump` prints a body that AsyncHTTPClient logs at trace).
///
/// One pass over each line's bytes, whatever the number of secrets: each secret form is indexed by its
/// first 8 bytes, and each 8-byte window of the line is looked up in that index.
///
/// ```swift
/// let search = LogLeakSearch(secrets: TestSecrets.shared.all)
/// let leaks = search.leaks(in: capture.lines)
/// #expect(leaks.isEmpty, "\(leaks)")
/// ```
package struct LogLeakSearch: Sendable {
    /// A secret found in a log line.
    package struct Leak: Sendable, CustomStringConvertible {
        /// The secret that was found.
        package let secret: TestSecrets.Secret
        /// The line, with every secret found in it replaced by `<kind fingerprint>` (`<password>` for a password).
        package let redactedLine: String

        /// What leaked and the redacted line; never the secret.
        package var description: String { "\(secret) in log line: \(redactedLine)" }
    }

    private struct Form: Sendable {
        let bytes: [UInt8]
        let secret: Int
    }

    private struct Match {
        let start: Int
        let form: Form
        var end: Int { start + form.bytes.count }
    }

    private let secrets: [TestSecrets.Secret]
    private let index: [UInt64: [Form]]

    /// Indexes the secrets that are long enough to search for.
    ///
    /// - Parameter secrets: The secrets.
    package init(secrets: [TestSecrets.Secret]) {
        self.init(secrets: secrets, extending: nil)
    }

    /// The search for `secrets`, which begin with this search's secrets (a registry only appends): only the secrets
    /// after those are indexed, the others' forms are reused.
    ///
    /// - Parameter secrets: This search's secrets, then more.
    /// - Returns: A search for all of them.
    package func extended(to secrets: [TestSecrets.Secret]) -> LogLeakSearch {
        LogLeakSearch(secrets: secrets, extending: self)
    }

    private init(secrets: [TestSecrets.Secret], extending base: LogLeakSearch?) {
        var start = 0
        var index: [UInt64: [Form]] = [:]
        if let base, base.secrets.count <= secrets.count,
            zip(base.secrets, secrets).allSatisfy({ $0.value == $1.value })
        {
            start = base.secrets.count
            index = base.index
        }
        for number in start..<secrets.count where secrets[number].value.utf8.count >= TestSecrets.minimumLength {
            for form in Self.forms(of: secrets[number].value) {
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
    package func leaks(in lines: some Sequence<String>) -> [Leak] {
        lines.flatMap { leaks(in: $0) }
    }

    /// The leaks in one line.
    ///
    /// - Parameter line: A log line.
    /// - Returns: One leak per secret found in it.
    package func leaks(in line: String) -> [Leak] {
        let bytes = Array(line.utf8)
        let found = matches(in: bytes)
        guard !found.isEmpty else { return [] }
        let redacted = redact(bytes, found)
        var seen: Set<Int> = []
        return found.compactMap { match in
            guard seen.insert(match.form.secret).inserted else { return nil }
            return Leak(secret: secrets[match.form.secret], redactedLine: redacted)
        }
    }

    /// The line with each run of overlapping matches replaced by the placeholder of its longest match. Bytes,
    /// not characters: a match found in bytes is replaced in bytes, whatever the line's normalization.
    private func redact(_ bytes: [UInt8], _ found: [Match]) -> String {
        var output: [UInt8] = []
        var position = 0
        var matches = found.sorted { $0.start < $1.start }[...]
        while let first = matches.popFirst() {
            var end = first.end
            var longest = first
            while let next = matches.first, next.start < end {
                matches.removeFirst()
                end = max(end, next.end)
                if next.form.bytes.count > longest.form.bytes.count { longest = next }
            }
            output += bytes[position..<first.start]
            output += Array(Self.placeholder(secrets[longest.form.secret]).utf8)
            position = end
        }
        output += bytes[position...]
        return String(decoding: output, as: UTF8.self)
    }

    private static func placeholder(_ secret: TestSecrets.Secret) -> String {
        secret.kind == .password ? "<password>" : "<\(secret.kind) \(AuthToken.fingerprint(secret.value))>"
    }

    private func matches(in bytes: [UInt8]) -> [Match] {
        let width = Self.keyWidth
        guard bytes.count >= width, !index.isEmpty else { return [] }
        var found: [Match] = []
        for start in 0...(bytes.count - width) {
            guard let candidates = index[Self.key(bytes, at: start)] else { continue }
            for form in candidates where start + form.bytes.count <= bytes.count {
                if bytes[start..<(start + form.bytes.count)].elementsEqual(form.bytes) {
                    found.append(Match(start: start, form: form))
                }
            }
        }
        return found
    }

    /// The bytes of a form's index key: its first 8, which ``TestSecrets/minimumLength`` guarantees it has.
    private static let keyWidth = MemoryLayout<UInt64>.size

    private static func key(_ bytes: [UInt8], at start: Int) -> UInt64 {
        var key: UInt64 = 0
        for offset in 0..<keyWidth { key = key << 8 | UInt64(bytes[start + offset]) }
        return key
    }

    /// The secret as it is and in each encoding searched for (each once).
    static func forms(of value: String) -> [String] {
        var unreserved = CharacterSet.alphanumerics
        unreserved.insert(charactersIn: "-._~")
        let percent = value.addingPercentEncoding(withAllowedCharacters: unreserved) ?? value
        var formAllowed = unreserved
        formAllowed.insert(" ")
        let form = (value.addingPercentEncoding(withAllowedCharacters: formAllowed) ?? value)
            .replacingOccurrences(of: " ", with: "+")
        let query = value.addingPercentEncoding(withAllowedCharacters: .urlQueryAllowed) ?? value
        let json = value.replacingOccurrences(of: "\\", with: "\\\\")
            .replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "/", with: "\\/")
        let base64 = Data(value.utf8).base64EncodedString()
        let base64URL = base64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        let hexBytes = value.utf8.map { String(format: "%02x", $0) }
        var forms: [String] = []
        for candidate in [
            value, percent, lowercasedEscapes(percent), form, query, json, base64, base64URL,
            hexBytes.joined(), hexBytes.joined(separator: " "),
        ]
        where !forms.contains(candidate) {
            forms.append(candidate)
        }
        return forms
    }

    /// `%2F` as `%2f`: the hex digits of each percent escape in lowercase.
    private static func lowercasedEscapes(_ text: String) -> String {
        var output = ""
        var pending = 0
        for character in text {
            if character == "%" {
                pending = 2
                output.append(character)
            } else if pending > 0 {
                pending -= 1
                output += character.lowercased()
            } else {
                output.append(character)
            }
        }
        return output
    }
}
