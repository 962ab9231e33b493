// The Apple-only half of the DPoP key seam: the Secure Enclave calls and nothing else. Everything around them (the
// proof, the thumbprint, the record kept with the session) is shared with the software key and tested on Linux.
#if canImport(CryptoKit) && canImport(Security)
    public import CryptoKit
    public import Foundation
    public import Security

    /// A DPoP key in the Secure Enclave: the private key never leaves it. Its ``dataRepresentation`` is an opaque
    /// reference that only this device's enclave can use, kept in the session's record; a session restored on another
    /// device therefore comes back without its key (a typed state at launch, before any request).
    public struct SecureEnclaveDPoPKey: DPoPKey, CustomStringConvertible {
        private let key: SecureEnclave.P256.Signing.PrivateKey

        /// Whether this device has a Secure Enclave.
        public static var isAvailable: Bool { SecureEnclave.isAvailable }

        /// A new key in the Secure Enclave.
        ///
        /// - Parameter accessControl: The key's access control; by default usable after the first unlock, on this
        ///   device only (the accessibility of a session kept in the Keychain).
        /// - Throws: When the enclave cannot make the key.
        public init(accessControl: SecAccessControl? = nil) throws {
            if let accessControl {
                key = try SecureEnclave.P256.Signing.PrivateKey(accessControl: accessControl)
            } else {
                key = try SecureEnclave.P256.Signing.PrivateKey()
            }
        }

        /// The key its reference points to.
        ///
        /// - Parameter dataRepresentation: The reference, from ``dataRepresentation``.
        /// - Throws: When this device's enclave does not know the key (another device, a reset enclave).
        public init(dataRepresentation: Data) throws {
            key = try SecureEnclave.P256.Signing.PrivateKey(dataRepresentation: dataRepresentation)
        }

        /// The enclave's opaque reference to the key.
        public var dataRepresentation: Data { key.dataRepresentation }

        /// The public half.
        public var publicKey: P256.Signing.PublicKey { key.publicKey }

        /// Signs `message` with ES256 in the enclave.
        ///
        /// - Parameter message: The JWS signing input.
        /// - Returns: `r || s`, 64 bytes.
        /// - Throws: When the enclave refuses.
        public func signature(for message: Data) throws -> Data {
            try key.signature(for: message).rawRepresentation
        }

        /// `SecureEnclaveDPoPKey(P-256)`.
        public var description: String { "SecureEnclaveDPoPKey(P-256)" }
    }
#endif
