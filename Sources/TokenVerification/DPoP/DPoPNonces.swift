import Crypto
public import Foundation

/// Stateless server nonces for DPoP proofs (RFC 9449 section 9): each nonce is an HMAC-SHA-256 of a window of
/// server time, so any replica holding the same secret checks it without storage.
///
/// ```swift
/// let nonces = DPoPNonces(secret: Array(secretFromYourSecretStore.utf8), lifetime: .seconds(300))!
/// let verifier = DPoPVerifier(configuration: .init(nonces: nonces), replayCache: InMemoryDPoPReplayCache())
/// ```
///
/// A nonce names its window of `lifetime` seconds; a proof's nonce is accepted in its own window, the one after
/// it, and the one before it (a replica whose clock is a little behind), so it lives between one and two
/// lifetimes. A nonce minted with another secret (another server) is refused. The description never shows the
/// secret.
public struct DPoPNonces: Sendable, CustomStringConvertible {
    private let key: SymmetricKey
    /// How long one window lasts, in seconds.
    private let lifetimeSeconds: Int64

    /// Nonces under `secret`, each window `lifetime` long.
    ///
    /// - Parameters:
    ///   - secret: At least 32 random bytes, the same on every replica.
    ///   - lifetime: The length of a window, at least one second; 5 minutes by default.
    /// - Returns: `nil` when the secret is shorter than 32 bytes or the lifetime shorter than a second.
    public init?(secret: [UInt8], lifetime: Duration = .seconds(300)) {
        guard secret.count >= 32, lifetime >= .seconds(1) else { return nil }
        key = SymmetricKey(data: secret)
        lifetimeSeconds = lifetime.components.seconds
    }

    /// The nonce to hand out at `date`: 32 base64url characters.
    ///
    /// - Parameter date: The server's time.
    /// - Returns: The nonce of the window holding `date`.
    public func nonce(at date: Date) -> String {
        nonce(window: window(of: date))
    }

    /// Whether `nonce` was minted with this secret for the window of `date`, the one before or the one after.
    ///
    /// - Parameters:
    ///   - nonce: A proof's `nonce` claim.
    ///   - date: The server's time.
    /// - Returns: Whether it is accepted.
    public func accepts(_ nonce: String, at date: Date) -> Bool {
        guard nonce.utf8.count == 32, let bytes = Base64URL.decode(nonce), bytes.count == 24 else { return false }
        let window = bytes.prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) }
        let current = self.window(of: date)
        guard (current - 1)...(current + 1) ~= window else { return false }
        let expected = Array(HMAC<SHA256>.authenticationCode(for: Array(bytes.prefix(8)), using: key)).prefix(16)
        // Compared in constant time: every byte is looked at whatever the first difference.
        var difference: UInt8 = 0
        for (given, wanted) in zip(bytes.dropFirst(8), expected) { difference |= given ^ wanted }
        return difference == 0
    }

    /// `DPoPNonces(lifetime: ...)`: never the secret.
    public var description: String { "DPoPNonces(lifetime: \(Duration.seconds(lifetimeSeconds)))" }

    private func window(of date: Date) -> Int64 {
        let seconds = date.timeIntervalSince1970
        guard seconds.isFinite, seconds >= 0, seconds < 1e15 else { return 0 }
        return Int64(seconds) / lifetimeSeconds
    }

    private func nonce(window: Int64) -> String {
        let windowBytes = Self.bytes(of: window)
        let code = HMAC<SHA256>.authenticationCode(for: windowBytes, using: key)
        return Base64URL.encode(windowBytes + Array(code).prefix(16))
    }

    private static func bytes(of window: Int64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: window >> (56 - 8 * $0)) }
    }
}
