import AuthToken

/// Strict base64url (RFC 4648 section 5, RFC 7515 section 2): no padding, no `+` or `/`, and no stray bits in
/// the last character, so one byte string has exactly one encoding.
enum Base64URL {
    /// Decodes `input`, returning `nil` when it is not canonical unpadded base64url (AuthToken's decoder, strict).
    static func decode(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        Base64URLCodec.decode(input, strict: true)
    }

    /// Decodes any collection of bytes (a JWK member, a fuzz input).
    static func decode<Bytes: Collection<UInt8>>(_ input: Bytes) -> [UInt8]? {
        if let result = input.withContiguousStorageIfAvailable({ decode($0) }) { return result }
        return Array(input).withUnsafeBufferPointer { decode($0) }
    }

    /// Decodes a base64url string (a JWK member).
    static func decode(_ string: String) -> [UInt8]? {
        var string = string
        return string.withUTF8 { decode($0) }
    }

    /// Encodes `bytes` as unpadded base64url.
    static func encode<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        var output: [UInt8] = []
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
            accumulator = accumulator << 8 | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                output.append(Base64URLCodec.alphabet[Int(accumulator >> UInt32(bits) & 0x3F)])
            }
            accumulator &= (1 << UInt32(bits)) - 1
        }
        if bits > 0 { output.append(Base64URLCodec.alphabet[Int(accumulator << UInt32(6 - bits) & 0x3F)]) }
        return String(decoding: output, as: UTF8.self)
    }
}
