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

    /// Four tables of 256 entries, one per position of a character in a group of four: each entry holds the
    /// character's six bits already placed in the three output bytes (first byte lowest), so a group decodes with
    /// four lookups and three ORs. Anything outside the alphabet sets bit 24.
    private static func groupTable(_ values: [UInt8]) -> [UInt32] {
        var table = [UInt32](repeating: 1 << 24, count: 1024)
        for (byte, value) in values.enumerated() where value != 0xFF {
            let bits = UInt32(value)
            table[byte] = bits << 2
            table[256 + byte] = bits >> 4 | (bits & 0x0F) << 12
            table[512 + byte] = (bits >> 2) << 8 | (bits & 0x03) << 22
            table[768 + byte] = bits << 16
        }
        return table
    }

    private static let strictGroupTable = groupTable(strictTable)
    private static let lenientGroupTable = groupTable(lenientTable)

    /// Decodes `input`, returning `nil` when it is not base64url (with `strict`, not canonical unpadded base64url).
    ///
    /// Four characters at a time into a temporary buffer of the exact size, then copied into the array: a token's
    /// parts are decoded on every read and every first verification, and `[UInt8](unsafeUninitializedCapacity:)`
    /// reaches a standard-library allocator that looks the array type's generic metadata up in the runtime on every
    /// call (about 500 instructions), while an array made from a buffer does not (the copy costs a few dozen).
    package static func decode(_ input: UnsafeBufferPointer<UInt8>, strict: Bool = false) -> [UInt8]? {
        guard let count = decodedCount(input, strict: strict) else { return nil }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { buffer in
            decode(input, strict: strict, into: buffer) ? Array(UnsafeBufferPointer(buffer)) : nil
        }
    }

    /// The number of bytes `input` decodes to, or `nil` when its length (or padding) cannot be base64url.
    package static func decodedCount(_ input: UnsafeBufferPointer<UInt8>, strict: Bool = false) -> Int? {
        let count = strict ? input.count : unpaddedCount(input)
        guard let count else { return nil }
        let remainder = count % 4
        if remainder == 1 { return nil }
        return count / 4 * 3 + (remainder == 0 ? 0 : remainder - 1)
    }

    /// The count without up to two '=' of padding, or `nil` when padding stands where it cannot.
    private static func unpaddedCount(_ input: UnsafeBufferPointer<UInt8>) -> Int? {
        var count = input.count
        var padding = 0
        while count > 0, input[count - 1] == UInt8(ascii: "="), padding < 2 {
            count -= 1
            padding += 1
        }
        if padding > 0, (count + padding) % 4 != 0 { return nil }
        return count
    }

    /// Decodes `input` into `output`, which holds exactly ``decodedCount(_:strict:)`` bytes; `false` when `input`
    /// is not base64url (the contents of `output` are then undefined).
    package static func decode(
        _ input: UnsafeBufferPointer<UInt8>, strict: Bool = false, into output: UnsafeMutableBufferPointer<UInt8>
    ) -> Bool {
        guard let count = strict ? input.count : unpaddedCount(input) else { return false }
        let remainder = count % 4
        guard remainder != 1, output.count == count / 4 * 3 + (remainder == 0 ? 0 : remainder - 1) else {
            return false
        }
        guard count > 0, let source = input.baseAddress, let target = output.baseAddress else { return count == 0 }
        var index = 0
        var written = 0
        let valid = (strict ? strictGroupTable : lenientGroupTable).withUnsafeBufferPointer { groups in
            guard let table = groups.baseAddress else { return false }
            var errors: UInt32 = 0
            // While another whole group follows, store four bytes at once (the fourth is overwritten next).
            while index + 8 <= count {
                let word =
                    table[Int(source[index])] | table[256 + Int(source[index + 1])]
                    | table[512 + Int(source[index + 2])] | table[768 + Int(source[index + 3])]
                errors |= word
                UnsafeMutableRawPointer(target + written).storeBytes(of: word.littleEndian, as: UInt32.self)
                index += 4
                written += 3
            }
            if index + 4 <= count {
                let word =
                    table[Int(source[index])] | table[256 + Int(source[index + 1])]
                    | table[512 + Int(source[index + 2])] | table[768 + Int(source[index + 3])]
                errors |= word
                target[written] = UInt8(truncatingIfNeeded: word)
                target[written + 1] = UInt8(truncatingIfNeeded: word >> 8)
                target[written + 2] = UInt8(truncatingIfNeeded: word >> 16)
                index += 4
                written += 3
            }
            return errors & 0xFF00_0000 == 0
        }
        guard valid else { return false }
        guard remainder >= 2 else { return true }
        let table = strict ? strictTable : lenientTable
        let a = table[Int(source[index])]
        let b = table[Int(source[index + 1])]
        let c = remainder == 3 ? table[Int(source[index + 2])] : 0
        // Strict: the last character's leftover bits (four after two characters, two after three) must be zero.
        let leftover = remainder == 2 ? b & 0x0F : c & 0x03
        guard (a | b | c) & 0xC0 == 0, !strict || leftover == 0 else { return false }
        target[written] = a << 2 | b >> 4
        if remainder == 3 { target[written + 1] = b << 4 | c >> 2 }
        return true
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
