import Foundation

/// Unguessable values for `state` and `nonce`: 32 bytes of the system's randomness, base64url.
enum RandomValue {
    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for _ in 0..<32 { bytes.append(UInt8.random(in: .min ... .max, using: &generator)) }
        return IDTokenCheck.base64URL(Data(bytes))
    }
}
