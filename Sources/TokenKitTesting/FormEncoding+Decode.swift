package import AuthToken
import Foundation

extension FormEncoding {
    /// Decodes a form body into pairs, as a token server reads a request; `nil` when it is not valid.
    package static func decode(_ body: String) -> [(String, String)]? {
        var pairs: [(String, String)] = []
        for part in body.split(separator: "&", omittingEmptySubsequences: true) {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decodeComponent(pieces[0]) else { return nil }
            let value = pieces.count > 1 ? decodeComponent(pieces[1]) : ""
            guard let value else { return nil }
            pairs.append((name, value))
        }
        return pairs
    }

    private static func decodeComponent(_ text: Substring) -> String? {
        text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }
}
