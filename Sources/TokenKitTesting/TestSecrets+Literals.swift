public import Foundation

extension TestSecrets {
    /// A secret literal found in a source file.
    public struct Literal: Hashable, Sendable {
        /// The secret, unescaped (and form-decoded for a form field).
        public let value: String
        /// What it is.
        public let kind: Kind
        /// The 1-based line it is on.
        public let line: Int
    }

    /// Registers the secret literals written in the Swift and JSON files under a directory: string literals
    /// passed as `accessToken:`, `refreshToken:`, `idToken:`, `clientSecret:`, `password:`, `newPassword:`,
    /// `apiKey:`, `secret:`, `verifier:` or `codeVerifier:`, values of secret JSON keys (`"refresh_token": "..."`,
    /// `"refreshToken": "..."`, also inside escaped strings), and secret form fields (`password=...`). Literals
    /// with interpolations, and secrets computed at run time, are not found: register those where they are
    /// made.
    ///
    /// - Parameter directory: A tests directory, searched recursively (`.build` directories are skipped).
    /// - Returns: The number of literals registered (duplicates included).
    @discardableResult
    public func registerLiterals(inSourcesUnder directory: URL) -> Int {
        guard
            let files = FileManager.default.enumerator(
                at: directory, includingPropertiesForKeys: nil, options: [.skipsHiddenFiles])
        else { return 0 }
        let patterns = Self.literalPatterns()
        var registered = 0
        for case let file as URL in files {
            if file.lastPathComponent == ".build" || file.lastPathComponent.hasPrefix(".build-") {
                files.skipDescendants()
                continue
            }
            guard ["swift", "json"].contains(file.pathExtension),
                let text = try? String(contentsOf: file, encoding: .utf8)
            else { continue }
            for literal in Self.secretLiterals(in: text, patterns: patterns) {
                register(literal.value, as: literal.kind, origin: "\(file.lastPathComponent):\(literal.line)")
                registered += 1
            }
        }
        return registered
    }

    /// The secret literals in one source text.
    ///
    /// - Parameter text: Swift or JSON source.
    /// - Returns: The literals found, in order.
    public static func secretLiterals(in text: String) -> [Literal] {
        secretLiterals(in: text, patterns: literalPatterns())
    }

    private struct LiteralPattern {
        let regex: Regex<AnyRegexOutput>
        let kind: (String) -> Kind?
        let formEncoded: Bool
    }

    private static func secretLiterals(in text: String, patterns: [LiteralPattern]) -> [Literal] {
        var found: [Literal] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            for pattern in patterns {
                for match in line.matches(of: pattern.regex) {
                    guard let name = match.output[1].substring, let raw = match.output[2].substring,
                        !raw.contains("\\("), let kind = pattern.kind(String(name))
                    else { continue }
                    let unescaped = raw.replacingOccurrences(of: "\\\"", with: "\"")
                        .replacingOccurrences(of: "\\\\", with: "\\")
                    let value = pattern.formEncoded ? formDecoded(unescaped) : unescaped
                    found.append(Literal(value: value, kind: kind, line: number + 1))
                }
            }
        }
        return found
    }

    /// Built per scan (a `Regex` is not `Sendable`, so it cannot be a shared constant).
    private static func literalPatterns() -> [LiteralPattern] {
        let labels: (String) -> Kind? = { label in
            switch label {
            case "secret": .clientSecret
            case "apiKey", "verifier": .credential
            default: kind(ofField: label)
            }
        }
        // Swift argument labels: `refreshToken: "..."` (escaped quotes allowed inside).
        let label =
            #"\b(accessToken|refreshToken|idToken|clientSecret|password|newPassword|apiKey|secret|verifier|codeVerifier)"#
            + #"\s*:\s*"((?:[^"\\]|\\.)*)""#
        // JSON keys, snake_case or camelCase, raw or inside an escaped Swift string: `"refresh_token": "..."`,
        // `\"password\":\"...\"`, `"refreshToken": "..."`.
        let json =
            #"\\?"(access_token|refresh_token|id_token|client_secret|password|accessToken|refreshToken|idToken|clientSecret)"#
            + #"\\?"\s*:\s*\\?"([^"\\]+)\\?""#
        // Form fields: `password=...`.
        let form = #"\b(access_token|refresh_token|client_secret|password)=([^&"\s\\]+)"#
        return [
            LiteralPattern(regex: try! Regex(label), kind: labels, formEncoded: false),
            LiteralPattern(regex: try! Regex(json), kind: { kind(ofField: $0) }, formEncoded: false),
            LiteralPattern(regex: try! Regex(form), kind: { kind(ofField: $0) }, formEncoded: true),
        ]
    }
}
