/// Strict base64url (RFC 4648 section 5, RFC 7515 section 2): no padding, no `+` or `/`, and no stray bits in
/// the last character, so one byte string has exactly one encoding.
enum Base64URL {
    /// 0...63 for alphabet characters, 0xFF for anything else.
    private static let table: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Whether `byte` is in the base64url alphabet.
    static func isAlphabet(_ byte: UInt8) -> Bool { table[Int(byte)] != 0xFF }

    /// Decodes `input`, returning `nil` when it is not canonical unpadded base64url.
    static func decode<Bytes: Collection<UInt8>>(_ input: Bytes) -> [UInt8]? {
        let count = input.count
        if count % 4 == 1 { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(count / 4 * 3 + 2)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in input {
            let value = table[Int(byte)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        // Leftover bits must be zero (canonical encoding).
        guard accumulator == 0 else { return nil }
        return output
    }

    /// Decodes a base64url string (a JWK member).
    static func decode(_ string: String) -> [UInt8]? { decode(Array(string.utf8)) }

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
                output.append(alphabet[Int(accumulator >> UInt32(bits) & 0x3F)])
            }
            accumulator &= (1 << UInt32(bits)) - 1
        }
        if bits > 0 { output.append(alphabet[Int(accumulator << UInt32(6 - bits) & 0x3F)]) }
        return String(decoding: output, as: UTF8.self)
    }
}
