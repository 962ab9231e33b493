import Crypto
package import Foundation

/// A PKCE pair (RFC 7636): the secret verifier the app keeps, and the S256 challenge it sends with the
/// authorization request. The description never shows the verifier.
public struct PKCE: Sendable, Hashable, CustomStringConvertible {
    /// The code verifier: 43 to 128 characters from `A-Z a-z 0-9 - . _ ~`.
    public let verifier: String
    /// The S256 code challenge: base64url(SHA-256(verifier)) without padding.
    public let challenge: String
    /// The challenge method, always `S256`.
    package var challengeMethod: String { "S256" }

    /// Creates a pair from a verifier the app already has.
    ///
    /// - Parameter verifier: The code verifier.
    /// - Throws: ``TokenRefreshError/invalidArgument`` when it is not 43 to 128 unreserved characters.
    package init(verifier: String) throws(TokenRefreshError) {
        let bytes = Array(verifier.utf8)
        guard (43...128).contains(bytes.count), bytes.allSatisfy(PKCE.isUnreserved) else { throw .invalidArgument }
        self.verifier = verifier
        self.challenge = PKCE.base64URL(Data(SHA256.hash(data: bytes)))
    }

    /// Creates a pair with a fresh random verifier (32 random bytes, 43 characters).
    ///
    /// - Parameter generator: The source of randomness; the system's by default.
    /// - Returns: The pair.
    package static func generate<G: RandomNumberGenerator>(using generator: inout G) -> PKCE {
        // 32 bytes make 43 base64url characters, inside the allowed range.
        try! PKCE(verifier: randomValue(using: &generator))
    }

    /// 32 bytes from `generator`, base64url without padding (43 characters): a verifier, or an unguessable
    /// `state` or `nonce` for a sign-in.
    ///
    /// - Parameter generator: The source of randomness.
    /// - Returns: The value.
    package static func randomValue<G: RandomNumberGenerator>(using generator: inout G) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for _ in 0..<32 { bytes.append(UInt8.random(in: .min ... .max, using: &generator)) }
        return base64URL(Data(bytes))
    }

    /// ``randomValue(using:)`` from the system's generator.
    ///
    /// - Returns: The value.
    package static func randomValue() -> String {
        var generator = SystemRandomNumberGenerator()
        return randomValue(using: &generator)
    }

    /// Creates a pair with a fresh random verifier from the system's generator.
    ///
    /// - Returns: The pair.
    public static func generate() -> PKCE {
        var generator = SystemRandomNumberGenerator()
        return generate(using: &generator)
    }

    /// The challenge and method; never the verifier.
    public var description: String { "PKCE(S256, challenge: \(challenge))" }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default: false
        }
    }

    /// base64url without padding (RFC 4648 section 5).
    ///
    /// - Parameter data: The bytes.
    /// - Returns: The text.
    package static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
