/// Base64url decoding (RFC 4648 section 5) over UTF-8 bytes, with or without padding.
enum Base64URL {
    /// 0...63 for alphabet characters, 0xFF for anything else. Standard `+` and `/` are accepted too.
    private static let table: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8.enumerated() {
            table[Int(byte)] = UInt8(index)
        }
        table[Int(UInt8(ascii: "+"))] = 62
        table[Int(UInt8(ascii: "/"))] = 63
        return table
    }()

    /// Decodes `input`, returning `nil` when it is not base64url.
    static func decode(_ input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        var count = input.count
        // Tolerate up to two '=' of padding, but only where padding can stand.
        var padding = 0
        while count > 0, input[count - 1] == UInt8(ascii: "="), padding < 2 {
            count -= 1
            padding += 1
        }
        if padding > 0, (count + padding) % 4 != 0 { return nil }
        if count % 4 == 1 { return nil }
        let outputCount = count / 4 * 3 + max(0, count % 4 - 1)
        var valid = true
        let output = [UInt8](unsafeUninitializedCapacity: outputCount) { output, initialized in
            table.withUnsafeBufferPointer { table in
                var index = 0
                var out = 0
                while index + 4 <= count {
                    let a = table[Int(input[index])]
                    let b = table[Int(input[index + 1])]
                    let c = table[Int(input[index + 2])]
                    let d = table[Int(input[index + 3])]
                    if (a | b | c | d) & 0xC0 != 0 {
                        valid = false
                        return
                    }
                    output[out] = a << 2 | b >> 4
                    output[out + 1] = b << 4 | c >> 2
                    output[out + 2] = c << 6 | d
                    index += 4
                    out += 3
                }
                let rest = count - index
                if rest >= 2 {
                    let a = table[Int(input[index])]
                    let b = table[Int(input[index + 1])]
                    let c = rest == 3 ? table[Int(input[index + 2])] : 0
                    if (a | b | c) & 0xC0 != 0 {
                        valid = false
                        return
                    }
                    output[out] = a << 2 | b >> 4
                    if rest == 3 { output[out + 1] = b << 4 | c >> 2 }
                }
            }
            // Every byte is written on success; on failure the contents are discarded.
            initialized = valid ? outputCount : 0
        }
        return valid ? output : nil
    }

    /// Whether every byte of `input` is in the base64url alphabet (padding tolerated), without decoding.
    static func isValid(_ input: UnsafeBufferPointer<UInt8>) -> Bool {
        var count = input.count
        while count > 0, input[count - 1] == UInt8(ascii: "="), input.count - count < 2 { count -= 1 }
        if count % 4 == 1 { return false }
        return table.withUnsafeBufferPointer { table in
            for index in 0..<count where table[Int(input[index])] == 0xFF { return false }
            return true
        }
    }
}
