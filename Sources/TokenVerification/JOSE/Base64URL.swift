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
    ///
    /// Four characters at a time into a buffer of the exact size: a token's three parts are decoded on every
    /// first verification.
    static func decode(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        let count = input.count
        let remainder = count % 4
        if remainder == 1 { return nil }
        let outputCount = count / 4 * 3 + (remainder == 0 ? 0 : remainder - 1)
        var valid = true
        let output = table.withUnsafeBufferPointer { table in
            [UInt8](unsafeUninitializedCapacity: outputCount) { buffer, initialized in
                var index = 0
                var written = 0
                // An alphabet value is 0...63; the 0xFF of anything else shows in the top two bits.
                while index + 4 <= count {
                    let a = table[Int(input[index])]
                    let b = table[Int(input[index + 1])]
                    let c = table[Int(input[index + 2])]
                    let d = table[Int(input[index + 3])]
                    guard (a | b | c | d) & 0xC0 == 0 else {
                        valid = false
                        return
                    }
                    let value = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    buffer[written] = UInt8(truncatingIfNeeded: value >> 16)
                    buffer[written + 1] = UInt8(truncatingIfNeeded: value >> 8)
                    buffer[written + 2] = UInt8(truncatingIfNeeded: value)
                    index += 4
                    written += 3
                }
                if remainder == 2 {
                    let a = table[Int(input[index])]
                    let b = table[Int(input[index + 1])]
                    // The last character's low four bits are left over, and must be zero.
                    guard (a | b) & 0xC0 == 0, b & 0x0F == 0 else {
                        valid = false
                        return
                    }
                    buffer[written] = a << 2 | b >> 4
                    written += 1
                } else if remainder == 3 {
                    let a = table[Int(input[index])]
                    let b = table[Int(input[index + 1])]
                    let c = table[Int(input[index + 2])]
                    guard (a | b | c) & 0xC0 == 0, c & 0x03 == 0 else {
                        valid = false
                        return
                    }
                    let value = UInt32(a) << 10 | UInt32(b) << 4 | UInt32(c) >> 2
                    buffer[written] = UInt8(truncatingIfNeeded: value >> 8)
                    buffer[written + 1] = UInt8(truncatingIfNeeded: value)
                    written += 2
                }
                initialized = written
            }
        }
        return valid ? output : nil
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
                output.append(alphabet[Int(accumulator >> UInt32(bits) & 0x3F)])
            }
            accumulator &= (1 << UInt32(bits)) - 1
        }
        if bits > 0 { output.append(alphabet[Int(accumulator << UInt32(6 - bits) & 0x3F)]) }
        return String(decoding: output, as: UTF8.self)
    }
}
