/// Base64url decoding (RFC 4648 section 5) over UTF-8 bytes, one loop for two uses:
///
/// - lenient (the default), for claims read on the client: padding tolerated where it can stand, standard `+` and
///   `/` accepted too;
/// - strict, for TokenVerification (RFC 7515 section 2): no padding, no `+` or `/`, and no stray bits in the last
///   character, so one byte string has exactly one encoding.
package enum Base64URLCodec {
    /// The base64url alphabet, in value order.
    package static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// 0...63 for alphabet characters, 0xFF for anything else.
    private static let strictTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// ``strictTable`` with standard `+` and `/` accepted too.
    private static let lenientTable: [UInt8] = {
        var table = strictTable
        table[Int(UInt8(ascii: "+"))] = 62
        table[Int(UInt8(ascii: "/"))] = 63
        return table
    }()

    /// Whether `byte` is in the base64url alphabet.
    package static func isAlphabet(_ byte: UInt8) -> Bool { strictTable[Int(byte)] != 0xFF }

    /// Decodes `input`, returning `nil` when it is not base64url (with `strict`, not canonical unpadded base64url).
    ///
    /// Four characters at a time into a buffer of the exact size: a token's parts are decoded on every read and
    /// every first verification.
    package static func decode(_ input: UnsafeBufferPointer<UInt8>, strict: Bool = false) -> [UInt8]? {
        var count = input.count
        if !strict {
            // Tolerate up to two '=' of padding, but only where padding can stand.
            var padding = 0
            while count > 0, input[count - 1] == UInt8(ascii: "="), padding < 2 {
                count -= 1
                padding += 1
            }
            if padding > 0, (count + padding) % 4 != 0 { return nil }
        }
        let remainder = count % 4
        if remainder == 1 { return nil }
        let outputCount = count / 4 * 3 + (remainder == 0 ? 0 : remainder - 1)
        var valid = true
        let output = (strict ? strictTable : lenientTable).withUnsafeBufferPointer { table in
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
                    buffer[written] = a << 2 | b >> 4
                    buffer[written + 1] = b << 4 | c >> 2
                    buffer[written + 2] = c << 6 | d
                    index += 4
                    written += 3
                }
                if remainder >= 2 {
                    let a = table[Int(input[index])]
                    let b = table[Int(input[index + 1])]
                    let c = remainder == 3 ? table[Int(input[index + 2])] : 0
                    // Strict: the last character's leftover bits (four after two characters, two after three)
                    // must be zero.
                    let leftover = remainder == 2 ? b & 0x0F : c & 0x03
                    guard (a | b | c) & 0xC0 == 0, !strict || leftover == 0 else {
                        valid = false
                        return
                    }
                    buffer[written] = a << 2 | b >> 4
                    written += 1
                    if remainder == 3 {
                        buffer[written] = b << 4 | c >> 2
                        written += 1
                    }
                }
                // Every byte is written on success; on failure the contents are discarded.
                initialized = valid ? written : 0
            }
        }
        return valid ? output : nil
    }

    /// Whether every byte of `input` is in the base64url alphabet (padding tolerated), without decoding.
    package static func isValid(_ input: UnsafeBufferPointer<UInt8>) -> Bool {
        var count = input.count
        while count > 0, input[count - 1] == UInt8(ascii: "="), input.count - count < 2 { count -= 1 }
        if count % 4 == 1 { return false }
        return lenientTable.withUnsafeBufferPointer { table in
            // Eight characters per branch: an alphabet value is 0...63, so any 0xFF shows in the top bit of the OR.
            var index = 0
            while index + 8 <= count {
                let any =
                    table[Int(input[index])] | table[Int(input[index + 1])] | table[Int(input[index + 2])]
                    | table[Int(input[index + 3])] | table[Int(input[index + 4])] | table[Int(input[index + 5])]
                    | table[Int(input[index + 6])] | table[Int(input[index + 7])]
                guard any & 0x80 == 0 else { return false }
                index += 8
            }
            while index < count {
                guard table[Int(input[index])] != 0xFF else { return false }
                index += 1
            }
            return true
        }
    }
}
