import Foundation

/// `application/x-www-form-urlencoded` bodies (the OAuth token and revocation endpoints).
enum FormBody {
    /// Parses a form body.
    ///
    /// - Returns: The parameters, or `nil` when the body is not form-encoded or repeats a parameter
    ///   (RFC 6749 section 3.2 forbids repeated parameters).
    static func parse(_ body: String) -> [String: String]? {
        var parameters: [String: String] = [:]
        for pair in body.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]), let value = decode(parts.count > 1 ? parts[1] : "") else {
                return nil
            }
            guard parameters.updateValue(value, forKey: name) == nil else { return nil }
        }
        return parameters
    }

    private static func decode(_ component: Substring) -> String? {
        component.replacingOccurrences(of: "+", with: " ").removingPercentEncoding
    }

    /// The client ID and secret of an HTTP Basic `Authorization` value (RFC 6749 section 2.3.1: both
    /// form-encoded, then joined with a colon and base64-encoded).
    static func basicCredentials(_ authorization: String) -> (id: String, secret: String)? {
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "basic",
            let data = Data(base64Encoded: String(parts[1]).trimmingCharacters(in: .whitespaces)),
            let decoded = String(data: data, encoding: .utf8)
        else { return nil }
        let pair = decoded.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard pair.count == 2, let id = decode(pair[0]), let secret = decode(pair[1]) else { return nil }
        return (id, secret)
    }
}
