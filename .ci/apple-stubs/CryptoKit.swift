// A stub of CryptoKit's Secure Enclave keys, for .ci/apple-typecheck. Signatures follow Apple's documentation:
//   https://developer.apple.com/documentation/cryptokit/secureenclave
//   https://developer.apple.com/documentation/cryptokit/secureenclave/isavailable
//   https://developer.apple.com/documentation/cryptokit/secureenclave/p256/signing/privatekey
//     init(compactRepresentable:accessControl:authenticationContext:), init(dataRepresentation:authenticationContext:),
//     dataRepresentation, publicKey, signature(for:); Sendable (as CryptoKit declares it)
// On Apple platforms swift-crypto's `Crypto` re-exports CryptoKit, so `P256` is one type for both; the stub
// re-exports swift-crypto's `Crypto` (the Linux build's) to the same effect. The `LAContext` parameter
// (LocalAuthentication) is left out: TokenKit does not pass one.
@_exported import Crypto
import Foundation
import Security

/// The access control a Secure Enclave key gets by default (Apple: usable when unlocked, this device only). The
/// stub is never run, so its value does not matter.
public var defaultSecureEnclaveAccessControl: SecAccessControl {
    SecAccessControlCreateWithFlags(nil, "ak", SecAccessControlCreateFlags(rawValue: 0), nil)!
}

/// The Secure Enclave.
public enum SecureEnclave {
    /// Whether the device has a Secure Enclave.
    public static var isAvailable: Bool { false }

    /// P-256 keys in the Secure Enclave.
    public enum P256 {
        /// Signing keys.
        public enum Signing {
            /// A private key that never leaves the enclave.
            public struct PrivateKey: Sendable {
                /// A new key.
                public init(
                    compactRepresentable: Bool = true,
                    accessControl: SecAccessControl = defaultSecureEnclaveAccessControl
                ) throws {}

                /// The key a reference points to.
                public init(dataRepresentation: Data) throws {}

                /// The enclave's reference to the key.
                public var dataRepresentation: Data { Data() }

                /// The public half.
                public var publicKey: Crypto.P256.Signing.PublicKey { Crypto.P256.Signing.PrivateKey().publicKey }

                /// An ECDSA signature of SHA-256(`data`).
                public func signature<D: DataProtocol>(for data: D) throws -> Crypto.P256.Signing.ECDSASignature {
                    try Crypto.P256.Signing.PrivateKey().signature(for: data)
                }
            }
        }
    }
}
