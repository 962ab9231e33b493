/// Lowercase hexadecimal text of bytes: two digits a byte, for file names, digests and fingerprints.
package enum HexEncoding {
    private static let digits = Array("0123456789abcdef".unicodeScalars)

    /// `bytes` as lowercase hexadecimal, two digits a byte (`[0x0f, 0xa0]` is `"0fa0"`).
    ///
    /// - Parameter bytes: The bytes to write.
    /// - Returns: Twice as many hex digits as there are bytes.
    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var text = ""
        text.unicodeScalars.reserveCapacity(2 * bytes.underestimatedCount)
        for byte in bytes {
            text.unicodeScalars.append(digits[Int(byte >> 4)])
            text.unicodeScalars.append(digits[Int(byte & 0x0F)])
        }
        return text
    }
}
