public import Foundation

extension TestSecrets {
    /// Registers the secret literals written in the Swift and JSON files under a directory: string literals
    /// passed as `accessToken:`, `refreshToken:`, `idToken:`, `clientSecret:`, `password:`, `apiKey:` or
    /// `secret:`, values of secret JSON keys (`"refresh_token": "..."`, also inside escaped strings), and
    /// secret form fields (`password=...`). Literals with interpolations are skipped: register those values
    /// where they are made.
    ///
    /// - Parameter directory: A tests directory, searched recursively (`.build` directories are skipped).
    /// - Returns: The number of literals registered (duplicates included).
    @discardableResult
    public func registerLiterals(inSourcesUnder directory: URL) -> Int {
        guard
            let files = FileManager.default.enumerator(
                at: directory, includingPropertiesForKeys: nil, options: [.skipsHiddenFiles])
        else { return 0 }
        var registered = 0
        for case let file as URL in files {
            if file.lastPathComponent == ".build" || file.lastPathComponent.hasPrefix(".build-") {
                files.skipDescendants()
                continue
            }
            guard ["swift", "json"].contains(file.pathExtension),
                let text = try? String(contentsOf: file, encoding: .utf8)
            else { continue }
            for literal in Self.secretLiterals(in: text) {
                register(literal.value, as: literal.kind, origin: "\(file.lastPathComponent):\(literal.line)")
                registered += 1
            }
        }
        return registered
    }

    /// The secret literals in one source text, with their kinds and 1-based line numbers.
    ///
    /// - Parameter text: Swift or JSON source.
    /// - Returns: The literals found.
    public static func secretLiterals(in text: String) -> [(value: String, kind: Kind, line: Int)] {
        var found: [(value: String, kind: Kind, line: Int)] = []
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            for pattern in literalPatterns {
                for match in line.matches(of: pattern.regex) {
                    guard let name = match.output[1].substring, let raw = match.output[2].substring,
                        !raw.contains("\\("), let kind = pattern.kind(String(name))
                    else { continue }
                    let value = raw.replacingOccurrences(of: "\\\"", with: "\"")
                        .replacingOccurrences(of: "\\\\", with: "\\")
                    found.append((value, kind, number + 1))
                }
            }
        }
        return found
    }

    private struct LiteralPattern: @unchecked Sendable {
        // `@unchecked Sendable`: the regex is built once and only read.
        let regex: Regex<AnyRegexOutput>
        let kind: @Sendable (String) -> Kind?
    }

    private static let literalPatterns: [LiteralPattern] = {
        let labels: @Sendable (String) -> Kind? = { label in
            switch label {
            case "secret": .clientSecret
            case "apiKey": .credential
            default: kind(ofField: label)
            }
        }
        // Swift argument labels: `refreshToken: "..."` (escaped quotes allowed inside).
        let label =
            #"\b(accessToken|refreshToken|idToken|clientSecret|password|apiKey|secret)\s*:\s*"((?:[^"\\]|\\.)*)""#
        // JSON keys, raw or inside an escaped Swift string: `"refresh_token": "..."`, `\"password\":\"...\"`.
        let json = #"\\?"(access_token|refresh_token|id_token|client_secret|password)\\?"\s*:\s*\\?"([^"\\]+)\\?""#
        // Form fields: `password=...`.
        let form = #"\b(access_token|refresh_token|client_secret|password)=([^&"\s\\]+)"#
        return [
            LiteralPattern(regex: try! Regex(label), kind: labels),
            LiteralPattern(regex: try! Regex(json), kind: { kind(ofField: $0) }),
            LiteralPattern(regex: try! Regex(form), kind: { kind(ofField: $0) }),
        ]
    }()
}
