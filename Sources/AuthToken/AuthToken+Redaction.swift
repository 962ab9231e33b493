import Foundation

extension AuthToken: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// A short, stable fingerprint of a secret: 8 hex digits of its 64-bit FNV-1a hash.
    ///
    /// It lets logs tell two tokens apart without revealing either. 32 bits of a hash say nothing useful
    /// about a high-entropy token; do not fingerprint low-entropy secrets such as passwords.
    ///
    /// - Parameter secret: The secret to fingerprint.
    /// - Returns: 8 lowercase hex digits.
    public static func fingerprint(_ secret: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in secret.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        let hex = String(hash >> 32, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }

    /// The fingerprint of ``accessToken``.
    public var fingerprint: String { Self.fingerprint(accessToken) }

    /// A log-safe summary: type, access-token fingerprint, whether a refresh token is present, and expiry.
    public var sanitizedDescription: String {
        let expiry = expiresAt.map { $0.formatted(.iso8601) } ?? "unknown"
        let refresh = refreshToken == nil ? "none" : "present"
        return "AuthToken(\(tokenType) \(fingerprint), refresh: \(refresh), expires: \(expiry))"
    }

    /// The same as ``sanitizedDescription``: no token text.
    public var description: String { sanitizedDescription }
    /// The same as ``sanitizedDescription``: no token text.
    public var debugDescription: String { sanitizedDescription }

    /// A mirror with redacted children, so `dump()` and debuggers do not print token text.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                "accessToken": "<redacted \(fingerprint)>",
                "refreshToken": refreshToken.map { "<redacted \(Self.fingerprint($0))>" } ?? "nil",
                "tokenType": tokenType,
                "scope": scope ?? "nil",
                "receivedAt": receivedAt,
                "lifetime": lifetime as Any,
                "expirationClaim": expirationClaim as Any,
            ],
            displayStyle: .struct)
    }
}
