import Foundation

/// Client-side checks of sign-up fields, with a BetterAuth app's sign-up rules, for immediate feedback. The server
/// stays the authority (uniqueness, strength, rate limits); these only catch the obvious before a round trip.
public enum CredentialRules: Sendable {
    /// Why a field was refused.
    public enum Problem: Sendable, Hashable {
        /// Fewer characters than `minimum`.
        case tooShort(minimum: Int)
        /// More characters than `maximum`.
        case tooLong(maximum: Int)
        /// A character outside the allowed set (usernames: letters, digits, `_` and `-`).
        case invalidCharacters
        /// Not shaped like an e-mail address.
        case invalidFormat
    }

    /// A username: 3 to 20 characters of `A-Z`, `a-z`, `0-9`, `_` and `-`.
    ///
    /// - Parameter username: The username.
    /// - Returns: Every problem found; empty when the username is acceptable.
    public static func check(username: String) -> [Problem] {
        var problems: [Problem] = []
        if username.count < 3 { problems.append(.tooShort(minimum: 3)) }
        if username.count > 20 { problems.append(.tooLong(maximum: 20)) }
        let allowed = username.unicodeScalars.allSatisfy { scalar in
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", "_", "-": true
            default: false
            }
        }
        if !allowed { problems.append(.invalidCharacters) }
        return problems
    }

    /// A password: at least 8 characters. It is only counted, never kept.
    ///
    /// - Parameter password: The password.
    /// - Returns: Every problem found; empty when the password is acceptable.
    public static func check(password: String) -> [Problem] {
        password.count < 8 ? [.tooShort(minimum: 8)] : []
    }

    /// An e-mail address: one `@` with something before it and a dotted domain after it, no spaces.
    ///
    /// - Parameter email: The address.
    /// - Returns: Every problem found; empty when the address is acceptable.
    public static func check(email: String) -> [Problem] {
        let parts = email.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, !email.contains(where: \.isWhitespace) else {
            return [.invalidFormat]
        }
        let labels = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2, labels.allSatisfy({ !$0.isEmpty }) else { return [.invalidFormat] }
        return []
    }

    /// A display name: 1 to 50 characters, any Unicode.
    ///
    /// - Parameter displayName: The name.
    /// - Returns: Every problem found; empty when the name is acceptable.
    public static func check(displayName: String) -> [Problem] {
        let trimmed = displayName.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.isEmpty { return [.tooShort(minimum: 1)] }
        return displayName.count > 50 ? [.tooLong(maximum: 50)] : []
    }
}
